/** nft as the oracle of the proxy table's text forms: what nfkube commits over netlink, what
 * `nfkube render --proxy` prints, and what `nft list` prints of the committed table (the operator's
 * `nft list ruleset > file; nft -f file`) all load with `nft -f` into a fresh namespace and list
 * identically, endpoint maps (typeof userdata, interval elements) included. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { ManifestSource } from '../../src/k8s/manifest-source';
import { formatTable } from '../../src/nft/format';
import { markedTable } from '../../src/nft/ownership';
import { listTable } from '../../src/nft/readback';
import { commit, Transaction } from '../../src/nft/transaction';
import { proxyComponent, proxySettings } from '../../src/proxy/options';
import { PROXY_KINDS } from '../../src/k8s/source';
import { ProxyComponent } from '../../src/proxy/component';
import { diffRulesets, diffTransaction, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { emptyModel, modelFromKernel, modelToContents, RulesetModel } from '../../src/ruleset/model';
import { Sandbox, withSandbox } from '../helpers/netns';
import { mulberry32 as rng } from '../helpers/prng';
import { NODE, ServiceWorld } from './fixtures';

const TABLE = 'nfkube-proxy';

/** `nft list table` with each set's elements sorted (nft prints them in the kernel's order),
 * without blank lines and the table's `flags` line (the owner hold the agent takes and `nft -f`
 * does not). */
function listing(sb: Sandbox): string {
  return sb
    .run('nft', ['list', 'table', 'inet', TABLE])
    .replace(/^\tflags .*\n/m, '')
    .replace(/\n\s*\n/g, '\n')
    .replace(/elements = \{([^}]*)\}/g, (_m, body: string) => {
      const items = body.split(',').map((x) => x.trim()).filter(Boolean).sort();
      return `elements = { ${items.join(', ')} }`;
    });
}

async function commitModel(sb: Sandbox, model: RulesetModel): Promise<void> {
  const empty = emptyModel(model.table);
  await commit(sb.socket, diffTransaction(empty, model, diffRulesets(empty, model), new Transaction().addTable(markedTable(model.table))));
}

/** The table as nft lists it when nfkube committed it, and when `nft -f` loaded `text`. */
async function viaNetlinkAndText(model: RulesetModel, text: string): Promise<{ netlink: string; raw: string; text: string }> {
  const out = { netlink: '', raw: '', text: '' };
  await withSandbox(async (sb) => {
    await commitModel(sb, model);
    out.raw = sb.run('nft', ['list', 'table', 'inet', TABLE]);
    out.netlink = listing(sb);
    // nfkube's read-back of what it wrote is what it meant.
    const kernel = modelFromKernel((await listTable(sb.socket, 'inet', TABLE))!);
    const d = diffRulesets(kernel, model);
    assert.ok(isEmptyDiff(d), formatDiff(kernel, model, d));
  });
  await withSandbox(async (sb) => {
    sb.run('nft', ['-f', '-'], text);
    out.text = listing(sb);
  });
  return out;
}

/** The proxy model `nfkube render --proxy --no-policy` builds for a manifests directory. */
async function renderManifests(dir: string, clusterCIDR: string): Promise<RulesetModel> {
  const settings = proxySettings({ proxy: true, 'no-policy': true, 'cluster-cidr': clusterCIDR });
  const source = new ManifestSource({ dir, kinds: PROXY_KINDS, onChange: () => undefined, onWarning: () => undefined, onError: (e) => assert.fail(e.message) });
  const snap = await source.start();
  await source.stop();
  const proxy = proxyComponent(settings!, 'node-1');
  proxy.start(snap);
  return proxy.desired;
}

const renderText = (model: RulesetModel) => formatTable({ ...modelToContents(model), table: markedTable(model.table) });

const NODE_YAML = `apiVersion: v1
kind: Node
metadata: {name: node-1}
spec: {podCIDRs: [198.18.1.0/24, "2001:db8:1::/64"]}
status: {addresses: [{type: InternalIP, address: 198.18.0.1}, {type: InternalIP, address: "2001:db8::1"}]}
`;

function service(opts: { protocol: string; families: ('IPv4' | 'IPv6')[] }): string {
  const ips = opts.families.map((f) => (f === 'IPv4' ? '198.19.0.30' : '2001:db8:ff::30'));
  const slices = opts.families.map((f) => {
    const [a, b] = f === 'IPv4' ? ['198.18.1.10', '198.18.1.11'] : ['2001:db8:1::10', '2001:db8:2::11'];
    return `---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata: {name: web-${f}, namespace: x, labels: {kubernetes.io/service-name: web}}
addressType: ${f}
ports: [{name: p, port: 8080, protocol: ${opts.protocol}}]
endpoints:
- addresses: ["${a}"]
  nodeName: node-1
- addresses: ["${b}"]
  nodeName: node-2
`;
  });
  return `${NODE_YAML}---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: x}
spec:
  type: NodePort
  clusterIP: "${ips[0]}"
  clusterIPs: [${ips.map((ip) => `"${ip}"`).join(', ')}]
  ipFamilies: [${opts.families.join(', ')}]
  ipFamilyPolicy: ${opts.families.length > 1 ? 'RequireDualStack' : 'SingleStack'}
  ports: [{name: p, port: 80, targetPort: 8080, protocol: ${opts.protocol}, nodePort: 30080}]
${slices.join('')}`;
}

const CASES = [
  { name: 'tcp, IPv4', protocol: 'TCP', families: ['IPv4'] as const },
  { name: 'udp, IPv4', protocol: 'UDP', families: ['IPv4'] as const },
  { name: 'tcp, dual-stack', protocol: 'TCP', families: ['IPv4', 'IPv6'] as const },
];

for (const c of CASES) {
  test(`render --proxy (${c.name}): nft -f loads the text and lists what nfkube commits; the listing loads back`, { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-roundtrip-'));
    try {
      writeFileSync(join(dir, 'svc.yaml'), service({ protocol: c.protocol, families: [...c.families] }));
      const model = await renderManifests(dir, '198.18.0.0/15,2001:db8::/48');
      const text = renderText(model);
      assert.match(text, /typeof numgen random mod 65536 : ip daddr \. th dport/);
      assert.match(text, / dnat ip to numgen random mod 65536 offset \d+ map @endpoint-draws-v4-\d+\n/);
      const seen = await viaNetlinkAndText(model, text);
      assert.match(seen.raw, /typeof numgen random mod 65536 : ip daddr \. th dport/);
      assert.match(seen.raw, / dnat ip to numgen random mod 65536 offset \d+ map @endpoint-draws-v4-\d+\n/);
      assert.match(seen.netlink, /198\.18\.1\.10/);
      if (c.families.length > 1) assert.match(seen.netlink, /typeof numgen random mod 65536 : ip6 daddr \. th dport[^]*2001:db8:2::11 \. 8080/);
      assert.equal(seen.text, seen.netlink);
      // The operator's round trip: nft's listing of the committed table loads and lists the same.
      let reloaded = '';
      await withSandbox(async (sb) => {
        sb.run('nft', ['-f', '-'], seen.raw.replace(/^\tflags .*\n/m, ''));
        reloaded = listing(sb);
      });
      assert.equal(reloaded, seen.netlink);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('random clusters: nft -f of render text lists what nfkube commits', { timeout: 120_000 }, async () => {
  let draws = 0;
  for (let seed = 1; seed <= 4; seed++) {
    const w = new ServiceWorld(rng(seed));
    for (let i = 0; i < 40; i++) w.change();
    const proxy = new ProxyComponent({ nodeName: NODE });
    proxy.start(w.snapshot());
    const seen = await viaNetlinkAndText(proxy.desired, renderText(proxy.desired));
    if (/typeof numgen random mod 65536 : ip6? daddr/.test(seen.netlink)) draws++;
    assert.doesNotMatch(seen.netlink, /type 0 /, `seed ${seed}: every integer-keyed map has its typeof`);
    assert.equal(seen.text, seen.netlink, `seed ${seed}`);
  }
  assert.ok(draws > 0, 'some clusters load-balance through draw maps');
});

const ROOT = resolve(__dirname, '../../..');
const NFKUBE = join(ROOT, 'bin/nfkube');

test('agent-committed table: nft list output loads into another namespace with the same maps and elements', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-roundtrip-'));
  try {
    writeFileSync(join(dir, 'svc.yaml'), service({ protocol: 'TCP', families: ['IPv4', 'IPv6'] }));
    const flags = ['--manifests', dir, '--node-name', 'node-1', '--proxy', '--no-policy', '--cluster-cidr', '198.18.0.0/15,2001:db8::/48'];
    const nfkube = (sb: Sandbox, args: string[]) => spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, NFKUBE, ...args], { encoding: 'utf8', cwd: ROOT });
    let listed = '';
    let committed = '';
    let maps: string[] = [];
    let agent = emptyModel({ family: 'inet', name: TABLE });
    await withSandbox(async (sb) => {
      const once = nfkube(sb, ['agent', '--once', ...flags, '--log-level', 'warn']);
      assert.equal(once.status, 0, once.stderr);
      listed = sb.run('nft', ['list', 'table', 'inet', TABLE]);
      committed = listing(sb);
      const contents = (await listTable(sb.socket, 'inet', TABLE))!;
      maps = contents.sets.filter((s) => s.name.startsWith('endpoint-')).map((s) => s.name);
      agent = modelFromKernel(contents);
    });
    assert.equal(maps.length, 2, 'the draw map of each family');
    assert.doesNotMatch(listed, /type 0 :/);
    await withSandbox(async (sb) => {
      // The owner/persist hold is the agent's, not something a file recreates.
      sb.run('nft', ['-f', '-'], listed.replace(/^\tflags .*\n/m, ''));
      assert.equal(listing(sb), committed);
      const reloaded = modelFromKernel((await listTable(sb.socket, 'inet', TABLE))!);
      for (const name of maps) {
        assert.ok(reloaded.sets.get(name)?.set.typeof, `${name} has its typeof back`);
        // Both endpoints' shares, each mapped to address . port.
        assert.equal(reloaded.sets.get(name)!.elements.size, 2, name);
        assert.deepEqual([...reloaded.sets.get(name)!.elements.keys()].sort(), [...agent.sets.get(name)!.elements.keys()].sort(), name);
      }
      // Every set (definition, typeof, element bytes) and every chain, the draw rules included,
      // read back as the agent wrote them: nft parses the printed draw rule into the agent's one
      // numgen, byteorder, lookup and nat.
      const d = diffRulesets(reloaded, agent);
      assert.deepEqual([d.addSets, d.removeSets, d.replaceSets, d.addChains, d.removeChains], [[], [], [], [], []], formatDiff(reloaded, agent, d));
      assert.equal(d.addElements.size + d.removeElements.size, 0, formatDiff(reloaded, agent, d));
      assert.deepEqual(d.rewriteChains, [], formatDiff(reloaded, agent, d));
      assert.ok(isEmptyDiff(d), formatDiff(reloaded, agent, d));
      for (const chain of ['service-v4-x/web/tcp/p', 'service-v6-x/web/tcp/p']) {
        const types = reloaded.chains.get(chain)!.rules.flatMap((r) => r.exprs.map((e) => (e.type === 'opaque' ? e.name : e.type)));
        assert.deepEqual(types.slice(-4), ['numgen', 'byteorder', 'lookup', 'nat'], `${chain}: one draw, one lookup`);
      }
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
