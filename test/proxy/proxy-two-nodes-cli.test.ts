/** Two nodes programmed as a user does it: `nfkube agent --once --proxy --no-policy` in each
 * node's namespace from one manifests directory of raw API objects (Nodes with their zone label,
 * Services, EndpointSlices with `hints.forZones` / `hints.forNodes`), pod ranges from the Nodes'
 * podCIDRs. Real packets then show what the objects meant: each node follows its own hints, and
 * an ETP Local NodePort on node-b serves node-b's endpoints with the client's source. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { probes, servers } from './packet-fixtures';
import { CLIENT, createTwoNodeNet, NODE_A, NODE_B, TwoNodeNet, TwoNodeSpec } from './two-node-net';

const T = { timeout: 60_000 };
const NFKUBE = join(resolve(__dirname, '../../..'), 'bin/nfkube');

const nodeObject = (n: TwoNodeSpec) => ({
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: n.name, labels: { 'topology.kubernetes.io/zone': n.zone } },
  spec: { podCIDR: n.podCIDRs[0], podCIDRs: n.podCIDRs },
  status: { addresses: [{ type: 'InternalIP', address: n.addr.v4 }, { type: 'InternalIP', address: n.addr.v6 }, { type: 'Hostname', address: n.name }] },
});

const serviceObject = (name: string, n: number, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { namespace: 'x', name },
  spec: {
    clusterIP: `198.19.0.${n}`,
    clusterIPs: [`198.19.0.${n}`, `2001:db8:f::${n.toString(16)}`],
    ipFamilies: ['IPv4', 'IPv6'],
    ports: [{ name: 'http', port: 80, targetPort: 'http' }],
    ...extra,
  },
});

type Hints = { forZones?: { name: string }[]; forNodes?: { name: string }[] };

/** IPv4 and IPv6 slices of service `name`: pod i of each listed node, with its hints. */
function sliceObjects(name: string, eps: { node: TwoNodeSpec; i: number; hints?: Hints }[]) {
  return (['v4', 'v6'] as const).map((f) => ({
    apiVersion: 'discovery.k8s.io/v1',
    kind: 'EndpointSlice',
    metadata: { namespace: 'x', name: `${name}-${f}`, labels: { 'kubernetes.io/service-name': name } },
    addressType: f === 'v4' ? 'IPv4' : 'IPv6',
    ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
    endpoints: eps.map((e) => ({ addresses: [e.node.pod(e.i)[f]], conditions: { ready: true }, nodeName: e.node.name, zone: e.node.zone, ...(e.hints ? { hints: e.hints } : {}) })),
  }));
}

const zone = (z: string): Hints => ({ forZones: [{ name: z }] });

const OBJECTS = [
  nodeObject(NODE_A),
  nodeObject(NODE_B),
  serviceObject('zoned', 40),
  ...sliceObjects('zoned', [{ node: NODE_A, i: 0, hints: zone('a') }, { node: NODE_B, i: 0, hints: zone('b') }]),
  serviceObject('pinned', 41),
  ...sliceObjects('pinned', [
    { node: NODE_A, i: 0, hints: { ...zone('a'), forNodes: [{ name: NODE_A.name }] } },
    { node: NODE_B, i: 0, hints: { ...zone('a'), forNodes: [{ name: NODE_B.name }] } },
    { node: NODE_B, i: 1, hints: { ...zone('b'), forNodes: [{ name: NODE_B.name }] } },
  ]),
  serviceObject('np-local', 42, { type: 'NodePort', externalTrafficPolicy: 'Local', ports: [{ name: 'http', port: 80, targetPort: 'http', nodePort: 30090 }] }),
  ...sliceObjects('np-local', [{ node: NODE_A, i: 0 }, { node: NODE_B, i: 0 }, { node: NODE_B, i: 1 }]),
];

describe('two nodes programmed by agent --once from manifests, real packets', () => {
  let net: TwoNodeNet;
  let dir: string;

  before(async () => {
    net = await createTwoNodeNet(2, { tcp: [8080], udp: [] });
    dir = mkdtempSync(join(tmpdir(), 'nfkube-two-nodes-'));
    writeFileSync(join(dir, 'cluster.yaml'), OBJECTS.map((o) => JSON.stringify(o)).join('\n---\n'));
    for (const n of [net.a, net.b]) {
      const r = spawnSync('nsenter', [`--net=${n.nsPath}`, process.execPath, NFKUBE, 'agent', '--once', '--manifests', dir, '--node-name', n.spec.name, '--proxy', '--no-policy'], { encoding: 'utf8' });
      assert.equal(r.status, 0, `agent --once on ${n.spec.name}: ${r.stderr}`);
    }
  });

  after(() => {
    net?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  for (const fam of ['v4', 'v6'] as const) {
    const vip = (n: number) => (fam === 'v4' ? `198.19.0.${n}` : `2001:db8:f::${n.toString(16)}`);

    test(`${fam}: hints.forZones from the manifests: each node's pods reach their zone's endpoint`, T, async () => {
      assert.deepEqual(servers(await probes(net.a.pods[1], vip(40), 80, 'tcp', 8)), new Set(['a0']));
      assert.deepEqual(servers(await probes(net.b.pods[1], vip(40), 80, 'tcp', 8)), new Set(['b0']));
    });

    test(`${fam}: hints.forNodes from the manifests come before zones`, T, async () => {
      assert.deepEqual(servers(await probes(net.a.pods[1], vip(41), 80, 'tcp', 8)), new Set(['a0']));
      const inB = await probes(net.b.pods[0], vip(41), 80, 'tcp', 16);
      assert.deepEqual(servers(inB), new Set(['b0', 'b1']), inB.join(', '));
    });

    test(`${fam}: an ETP Local NodePort on node-b: node-b's endpoints, the client's source`, T, async () => {
      const replies = await probes(net.client, NODE_B.addr[fam], 30090, 'tcp', 16);
      assert.deepEqual(servers(replies), new Set(['b0', 'b1']), replies.join(', '));
      for (const r of replies) assert.equal(r.split(' ')[1], CLIENT[fam], r);
    });
  }
});
