/** ClusterNetworkPolicy + NetworkPolicy against the reference evaluator, on random clusters: each
 * set's manifests go to `nfkube agent --once` in a fresh network namespace, the table is read back
 * from the kernel, and the kernel interpreter (src/explain/kernel-verdict.ts) decides random flows
 * through it (pods of this node and another, host-network pods, nodes, an outside address; TCP,
 * UDP, SCTP; IPv4 and IPv6), each compared with test/helpers/cnp-spec.ts. 200 sets by default;
 * NFKUBE_CNP_FUZZ_SETS=N runs a longer soak (npm run bench runs 2,000). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { evaluateKernel } from '../../src/explain/kernel-verdict';
import type { FlowPacket } from '../../src/explain/flow';
import { listTable } from '../../src/nft/readback';
import { clusterNetworkPolicy, cnpWorld, decide, describeDecision, type Endpoint } from '../helpers/cnp-spec';
import { openSandbox, withSandbox, type Sandbox } from '../helpers/netns';
import { mulberry32 } from '../helpers/prng';
import { CnpGenerator, NODES, OUTSIDE, PORTS, THIS_NODE, type RandomCluster } from '../helpers/random-cnp';
import { clusterNetworkPolicyUnavailable } from '../e2e/cnp-run';
import { REPO_ROOT } from '../e2e/harness';
import type { K8sObject } from '../e2e/manifests';

const execFileAsync = promisify(execFile);
const SETS = Number(process.env.NFKUBE_CNP_FUZZ_SETS ?? 200);
const FLOWS_PER_SET = 150;
/** Sets run this many at a time, each in its own namespace: the agent's start dominates. */
const PARALLEL = 3;
const TABLE = 'nfkube';

interface Disagreement {
  seed: number;
  text: string;
}

/** The flows of one set: a random sample over every (source, destination, protocol, port, family). */
function flows(c: RandomCluster, g: CnpGenerator): { packet: FlowPacket; src: Endpoint; dst: Endpoint }[] {
  const world = worldOf(c);
  const podOf = (ns: string, name: string) => world.pods.find((p) => p.namespace === ns && p.name === name);
  const ends = (fam: 'v4' | 'v6') => [
    ...c.pods.map((p) => ({ ip: p[fam], pod: podOf(p.namespace, p.name) })),
    { ip: OUTSIDE[fam] },
  ];
  const out = [];
  for (let i = 0; i < FLOWS_PER_SET; i++) {
    const fam = g.pick(['v4', 'v6'] as const);
    const src = g.pick(ends(fam));
    // The other node's address is a destination too (`nodes` peers); this node's own is the
    // input hook, not forwarded traffic, and is left out.
    const dst = g.pick([...ends(fam), { ip: NODES[1][fam] }]);
    if (src.ip === dst.ip) continue;
    const protocol = g.pick(['tcp', 'udp', 'sctp'] as const);
    out.push({ packet: { family: fam === 'v4' ? 'ipv4' : 'ipv6', src: src.ip, dst: dst.ip, protocol, dport: g.pick(PORTS), sport: 40000 } as FlowPacket, src, dst });
  }
  return out;
}

function worldOf(c: RandomCluster) {
  const kind = (k: string) => c.objects.filter((o) => o.kind === k);
  return cnpWorld({
    node: THIS_NODE,
    namespaces: kind('Namespace').map((o) => normalizeNamespace(o)),
    pods: kind('Pod').map((o) => normalizePod(o)),
    nodes: NODES.map((n) => ({ name: n.name, labels: n.labels, addresses: [n.v4, n.v6] })),
    policies: kind('NetworkPolicy').map((o) => normalizeNetworkPolicy(o)),
    clusterPolicies: c.clusterPolicies,
  });
}

/** `nfkube agent --once` over these objects in the sandbox; exit 1 only for input that failed
 * closed (said on stderr naming a ClusterNetworkPolicy field). Returns whether it did. */
async function enforce(sb: Sandbox, dir: string, objects: K8sObject[], what: string): Promise<boolean> {
  writeFileSync(join(dir, 'cluster.yaml'), objects.map((o) => `---\n${stringify(o)}`).join(''));
  const run = await execFileAsync('nsenter', [`--net=${sb.netns.path}`, process.execPath, join(REPO_ROOT, 'bin', 'nfkube'), 'agent', '--once', '--manifests', dir,
    '--node-name', THIS_NODE, '--table', TABLE, '--log-level', 'error'], { cwd: REPO_ROOT }).catch((err: { code?: number; stderr?: string }) => err);
  const failedClosed = 'code' in run && run.code === 1;
  if ('code' in run && !failedClosed) assert.fail(`${what}: agent --once failed: ${run.stderr}`);
  if (failedClosed) {
    const unexplained = (run.stderr ?? '').split('\n').filter((l) => l !== '' && !/"object":"ClusterNetworkPolicy [^"]+","field":"spec\./.test(l));
    assert.deepEqual(unexplained, [], `${what}: agent --once exited 1 for more than failed-closed ClusterNetworkPolicy rules`);
  }
  return failedClosed;
}

async function runSet(sb: Sandbox, dir: string, seed: number): Promise<{ flows: number; denied: number; disagreements: Disagreement[]; failedClosed: boolean }> {
  const g = new CnpGenerator(mulberry32(seed));
  const cluster = g.cluster();
  const failedClosed = await enforce(sb, dir, cluster.objects, `seed ${seed}`);
  const table = await listTable(sb.socket, 'inet', TABLE);
  assert.ok(table, `seed ${seed}: the agent left no table`);
  const world = worldOf(cluster);
  const disagreements: Disagreement[] = [];
  let denied = 0;
  const sample = flows(cluster, g);
  for (const f of sample) {
    const want = decide(world, { src: f.src, dst: f.dst, protocol: f.packet.protocol.toUpperCase() as 'TCP', port: f.packet.dport });
    const got = evaluateKernel(table, f.packet);
    if (!want.allowed) denied++;
    if (got.allowed !== want.allowed) {
      const name = (e: Endpoint) => (e.pod ? `${e.pod.namespace}/${e.pod.name}` : e.ip);
      disagreements.push({
        seed,
        text: `seed ${seed}: ${name(f.src)} -> ${name(f.dst)} ${f.packet.protocol}/${f.packet.dport} ${f.packet.family}: evaluator ${want.allowed ? 'allows' : 'denies'} `
          + `(egress: ${describeDecision(want.egress)}; ingress: ${describeDecision(want.ingress)}), kernel ${got.allowed ? 'allows' : 'denies'} `
          + `(${got.steps.map((s) => `${s.base}: ${s.verdict} ${s.rule?.comment ?? 'policy'}`).join('; ')})`,
      });
    }
  }
  return { flows: sample.length, denied, disagreements, failedClosed };
}

test(`random ClusterNetworkPolicy + NetworkPolicy sets: the kernel decides as the reference evaluator (${SETS} sets)`, { skip: clusterNetworkPolicyUnavailable(), timeout: 60 * 60_000 }, async (t) => {
  const all: Disagreement[] = [];
  let flowCount = 0;
  let deniedCount = 0;
  let failedClosedSets = 0;
  await Promise.all(Array.from({ length: PARALLEL }, async (_, lane) => {
    const sb = openSandbox();
    const dir = mkdtempSync(join(tmpdir(), 'nfk-cnp-fuzz-'));
    try {
      for (let seed = 1 + lane; seed <= SETS; seed += PARALLEL) {
        const r = await runSet(sb, dir, seed);
        flowCount += r.flows;
        deniedCount += r.denied;
        if (r.failedClosed) failedClosedSets++;
        all.push(...r.disagreements);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await sb.close();
    }
  }));
  t.diagnostic(`${SETS} sets (${failedClosedSets} with rules failing closed), ${flowCount} flows, ${deniedCount} denied, ${all.length} disagreements`);
  const seeds = [...new Set(all.map((d) => d.seed))].sort((a, b) => a - b);
  assert.equal(all.length, 0, `${all.length} disagreements in ${seeds.length} sets (seeds ${seeds.slice(0, 20).join(', ')}):\n${all.slice(0, 12).map((d) => d.text).join('\n')}`);
  assert.ok(deniedCount > flowCount / 20 && deniedCount < flowCount, `${deniedCount} of ${flowCount} denied: the sets exercise both verdicts`);
});

test('a Pass rule that cannot be read fails closed as "Deny all", as the API types ask (cnp-bugs.md bug 1)', { skip: clusterNetworkPolicyUnavailable() }, async () => {
  const g = new CnpGenerator(mulberry32(20));
  const base = g.cluster().objects.filter((o) => o.kind === 'Namespace' || o.kind === 'Pod' || o.kind === 'Node');
  const pods = base.filter((o) => o.kind === 'Pod' && (o.spec as { nodeName: string; hostNetwork?: boolean }).nodeName === THIS_NODE);
  const [src, dst] = pods.map((o) => ({ ns: (o.metadata as { namespace: string }).namespace, ip: (o.status as { podIP: string }).podIP }));
  const pass = clusterNetworkPolicy('pass-unknown-peer', {
    tier: 'Admin', priority: 1, subject: { namespaces: { matchLabels: { 'kubernetes.io/metadata.name': dst.ns } } },
    // domainNames is no ingress peer: the rule cannot be read.
    ingress: [{ name: 'pass-from-a-name', action: 'Pass', from: [{ domainNames: ['example.com'] }] }],
  });
  await withSandbox(async (sb) => {
    const dir = mkdtempSync(join(tmpdir(), 'nfk-cnp-failclosed-'));
    try {
      assert.equal(await enforce(sb, dir, [...base, pass as unknown as K8sObject], 'fail-closed Pass'), true, 'the agent says the rule failed closed');
      const table = await listTable(sb.socket, 'inet', TABLE);
      assert.ok(table);
      for (const protocol of ['tcp', 'udp', 'sctp'] as const) {
        const verdict = evaluateKernel(table, { family: 'ipv4', src: src.ip, dst: dst.ip, protocol, dport: 80, sport: 40000 });
        assert.equal(verdict.allowed, false, `${protocol}: ${verdict.steps.map((s) => `${s.base}: ${s.verdict} ${s.rule?.comment ?? 'policy'}`).join('; ')}`);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
