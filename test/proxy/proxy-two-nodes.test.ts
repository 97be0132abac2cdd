/** The service proxy across two nodes (two-node-net.ts): each node's namespace holds its own
 * nfkube-proxy table, programmed by an Agent for that node's name from the same Services,
 * EndpointSlices and Nodes (pod ranges from the Nodes' podCIDRs). Pods answer with their name and
 * the source they saw. Which endpoints serve from which node (ClusterIP, NodePort, a load-balancer
 * IP and an external IP the client sends to node-b; ETP and ITP Local; serving-terminating
 * fallback), which source they see, what is dropped or rejected; topology hints (forZones, forNodes) as kube-proxy's CategorizeEndpoints applies them;
 * NetworkPolicy (each node's policy table beside its proxy table) on the translated destination.
 * TCP and UDP, IPv4 and IPv6. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import type { EndpointInfo, ServiceInfo } from '../../src/k8s/service-model';
import type { ClusterSnapshot } from '../../src/k8s/source';
import { namespace, pod, policy } from '../agent/fixtures';
import { port, service, snapshotOf } from './fixtures';
import { dual, DualEndpoint, dualSlices, httpDns, probes, ProxyAgent, servers, startProxyAgent } from './packet-fixtures';
import { CLIENT, createTwoNodeNet, NODE_A, NODE_B, nodeObjects, TwoNodeNet } from './two-node-net';

const T = { timeout: 60_000 };
const DROP_MS = 700;

/** Pod i of node a or b as an endpoint. */
const a = (i: number, over?: Partial<EndpointInfo>): DualEndpoint => ({ ...NODE_A.pod(i), nodeName: NODE_A.name, over });
const b = (i: number, over?: Partial<EndpointInfo>): DualEndpoint => ({ ...NODE_B.pod(i), nodeName: NODE_B.name, over });
const zones = (...z: string[]) => ({ zoneHints: z });
const terminating = { ready: false, serving: true, terminating: true };
/** A load-balancer IP and an external IP the client routes via node-b. */
const LB = { v4: '198.18.201.1', v6: '2001:db8:c9::1' };
const EXT = { v4: '198.18.200.1', v6: '2001:db8:c8::1' };

const nodePorts = (tcp: number, udp: number) => [port('http', 'TCP', 80, { targetPort: 'http', nodePort: tcp }), port('dns', 'UDP', 53, { targetPort: 'dns', nodePort: udp })];

const SERVICES: ServiceInfo[] = [
  service('x', 'web', { clusterIPs: dual(10), ports: httpDns }),
  service('x', 'np', { type: 'NodePort', clusterIPs: dual(11), ports: nodePorts(30080, 30053) }),
  service('x', 'np-local', { type: 'NodePort', clusterIPs: dual(12), ports: nodePorts(30081, 30054), externalTrafficPolicy: 'Local' }),
  service('x', 'np-local-a', { type: 'NodePort', clusterIPs: dual(13), ports: nodePorts(30082, 30055), externalTrafficPolicy: 'Local' }),
  service('x', 'itp', { clusterIPs: dual(14), ports: httpDns, internalTrafficPolicy: 'Local' }),
  service('x', 'itp-a', { clusterIPs: dual(15), ports: httpDns, internalTrafficPolicy: 'Local' }),
  service('x', 'zones', { clusterIPs: dual(16), ports: httpDns }),
  service('x', 'zones-partial', { clusterIPs: dual(17), ports: httpDns }),
  service('x', 'zones-elsewhere', { clusterIPs: dual(18), ports: httpDns }),
  service('x', 'nodes', { clusterIPs: dual(19), ports: httpDns }),
  service('x', 'nodes-partial', { clusterIPs: dual(20), ports: httpDns }),
  service('x', 'guarded', { clusterIPs: dual(21), ports: httpDns }),
  service('x', 'term', { clusterIPs: dual(22), ports: httpDns }),
  service('x', 'term-only', { clusterIPs: dual(23), ports: httpDns }),
  service('x', 'term-none', { clusterIPs: dual(24), ports: httpDns }),
  service('x', 'lb-local', {
    type: 'LoadBalancer',
    clusterIPs: dual(26),
    ports: nodePorts(30085, 30058),
    externalTrafficPolicy: 'Local',
    healthCheckNodePort: 32001,
    loadBalancerIPs: [LB.v4, LB.v6],
  }),
  service('x', 'ext', { clusterIPs: dual(27), ports: httpDns, externalIPs: [EXT.v4, EXT.v6] }),
  service('x', 'itp-np', { type: 'NodePort', clusterIPs: dual(28), ports: nodePorts(30086, 30059), internalTrafficPolicy: 'Local' }),
  service('x', 'np-local-term', { type: 'NodePort', clusterIPs: dual(25), ports: nodePorts(30084, 30057), externalTrafficPolicy: 'Local' }),
];
const SLICES = [
  ...dualSlices('web', [a(0), b(0)]),
  ...dualSlices('np', [a(0)]),
  ...dualSlices('np-local', [a(0), b(0), b(1)]),
  ...dualSlices('np-local-a', [a(0)]),
  ...dualSlices('itp', [a(0), b(0)]),
  ...dualSlices('itp-a', [a(0)]),
  // Every ready endpoint hinted (an unready one without a hint does not count): each zone its own.
  ...dualSlices('zones', [a(0, zones('a')), b(0, zones('b')), b(1, { ready: false, serving: false })]),
  // One ready endpoint without a hint: hints are ignored everywhere.
  ...dualSlices('zones-partial', [a(0, zones('a')), b(0)]),
  // No endpoint for zone b: node-b ignores the hints, node-a follows them.
  ...dualSlices('zones-elsewhere', [a(0, zones('a')), b(0, zones('a')), b(1, zones('c'))]),
  // forNodes, when every ready endpoint has one and one names this node, before forZones.
  ...dualSlices('nodes', [a(0, { nodeHints: [NODE_A.name], zoneHints: ['a'] }), b(0, { nodeHints: [NODE_B.name], zoneHints: ['a'] }), b(1, { nodeHints: [NODE_B.name], zoneHints: ['b'] })]),
  // One endpoint without a node hint: node hints are ignored, zone hints apply.
  ...dualSlices('nodes-partial', [a(0, { nodeHints: [NODE_A.name], zoneHints: ['a'] }), b(0, zones('a')), b(1, zones('b'))]),
  ...dualSlices('guarded', [a(2)]),
  ...dualSlices('term', [a(0), b(0, terminating)]),
  ...dualSlices('term-only', [a(0, terminating), b(0, { ...terminating, serving: false })]),
  ...dualSlices('term-none', [a(0, { ...terminating, serving: false })]),
  // node-b's only local endpoint is terminating: ETP Local there falls back to it, not to a0.
  ...dualSlices('lb-local', [a(0), b(0), b(1)]),
  ...dualSlices('ext', [a(1)]),
  ...dualSlices('itp-np', [a(0)]),
  ...dualSlices('np-local-term', [a(0), b(1, terminating)]),
];

/** NetworkPolicy beside the proxy: pod a2 (the guarded service's endpoint) admits only pods
 * labelled role=client (a1 and b1). */
function policyObjects(): Pick<ClusterSnapshot, 'pods' | 'namespaces' | 'policies'> {
  const pods = [NODE_A, NODE_B].flatMap((n) =>
    [0, 1, 2].map((i) => {
      const name = `${n.zone}${i}`;
      const labels: Record<string, string> = name === 'a2' ? { app: 'guarded' } : i === 1 ? { role: 'client' } : {};
      return normalizePod(pod('x', name, n.pod(i).v4, labels, { node: n.name, ip6: n.pod(i).v6 }));
    }),
  );
  const np = normalizeNetworkPolicy(
    policy('x', 'guarded', { podSelector: { matchLabels: { app: 'guarded' } }, ingress: [{ from: [{ podSelector: { matchLabels: { role: 'client' } } }] }] }),
  );
  return {
    pods: new Map(pods.map((p) => [`x/${p.name}`, p])),
    namespaces: new Map([['x', normalizeNamespace(namespace('x'))]]),
    policies: new Map([['x/guarded', np]]),
  };
}

describe('service proxy on two nodes, real packets', () => {
  let net: TwoNodeNet;
  const agents: ProxyAgent[] = [];

  before(async () => {
    net = await createTwoNodeNet(3, { tcp: [8080], udp: [5353] });
    for (const f of ['v4', 'v6'] as const) {
      for (const dst of [LB[f], EXT[f]]) execFileSync('nsenter', [`--net=${net.client.nsPath}`, 'ip', ...(f === 'v6' ? ['-6'] : []), 'route', 'add', dst, 'via', NODE_B.addr[f]]);
    }
    const snapshot = { ...snapshotOf(SERVICES, SLICES, nodeObjects()), ...policyObjects() };
    for (const n of [net.a, net.b]) {
      const policyComponent = new PolicyComponent({ nodeName: n.spec.name, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) });
      agents.push(await startProxyAgent(n.nsPath, { nodeName: n.spec.name }, snapshot, [policyComponent]));
    }
  });

  after(async () => {
    for (const ag of agents) await ag.stop();
    net?.close();
  });

  for (const fam of ['v4', 'v6'] as const) {
    const vip = (n: number) => dual(n)[fam === 'v4' ? 0 : 1];
    const nodeA = NODE_A.addr[fam];
    const nodeB = NODE_B.addr[fam];
    const client = CLIENT[fam];

    for (const protocol of ['tcp', 'udp'] as const) {
      const svcPort = protocol === 'tcp' ? 80 : 53;
      const np = (tcp: number, udp: number) => (protocol === 'tcp' ? tcp : udp);

      test(`${fam} ${protocol}: a ClusterIP from node-a spreads to endpoints on node-a and node-b, the pod source kept`, T, async () => {
        const fromPod = await probes(net.a.pods[1], vip(10), svcPort, protocol, 16);
        assert.deepEqual(servers(fromPod), new Set(['a0', 'b0']), fromPod.join(', '));
        for (const r of fromPod) assert.equal(r.split(' ')[1], NODE_A.pod(1)[fam], r);
        // From node-a itself (host-originated) too.
        const fromNode = await probes(net.a.host, vip(10), svcPort, protocol, 16);
        assert.deepEqual(servers(fromNode), new Set(['a0', 'b0']), fromNode.join(', '));
      });

      test(`${fam} ${protocol}: a NodePort (ETP Cluster) on node-b serves an endpoint on node-a, masqueraded to node-b`, T, async () => {
        for (const r of await probes(net.client, nodeB, np(30080, 30053), protocol, 6)) assert.equal(r, `a0 ${nodeB}`);
        for (const r of await probes(net.client, nodeA, np(30080, 30053), protocol, 3)) assert.equal(r, `a0 ${nodeA}`);
        // From node-b itself (host-originated) to its own node port.
        for (const r of await probes(net.b.host, nodeB, np(30080, 30053), protocol, 3)) assert.equal(r, `a0 ${nodeB}`);
      });

      test(`${fam} ${protocol}: a NodePort with ETP Local serves only the node's own endpoints, the client source kept`, T, async () => {
        const viaB = await probes(net.client, nodeB, np(30081, 30054), protocol, 16);
        assert.deepEqual(servers(viaB), new Set(['b0', 'b1']), viaB.join(', '));
        for (const r of viaB) assert.equal(r.split(' ')[1], client, r);
        for (const r of await probes(net.client, nodeA, np(30081, 30054), protocol, 6)) assert.equal(r, `a0 ${client}`);
      });

      test(`${fam} ${protocol}: a load-balancer IP sent to node-b (ETP Local) and an external IP sent to node-b (ETP Cluster)`, T, async () => {
        const viaLB = await probes(net.client, LB[fam], svcPort, protocol, 16);
        assert.deepEqual(servers(viaLB), new Set(['b0', 'b1']), viaLB.join(', '));
        for (const r of viaLB) assert.equal(r.split(' ')[1], client, r);
        for (const r of await probes(net.client, EXT[fam], svcPort, protocol, 4)) assert.equal(r, `a1 ${nodeB}`);
      });

      test(`${fam} ${protocol}: ITP Local: each node's pods reach only that node's endpoints`, T, async () => {
        assert.deepEqual(servers(await probes(net.a.pods[1], vip(14), svcPort, protocol, 8)), new Set(['a0']));
        assert.deepEqual(servers(await probes(net.b.pods[1], vip(14), svcPort, protocol, 8)), new Set(['b0']));
        assert.deepEqual(servers(await probes(net.a.pods[1], vip(15), svcPort, protocol, 4)), new Set(['a0']));
      });

      test(`${fam} ${protocol}: zone hints: each node uses its zone's endpoints, unless a ready endpoint lacks a hint or its zone has none`, T, async () => {
        assert.deepEqual(servers(await probes(net.a.pods[1], vip(16), svcPort, protocol, 8)), new Set(['a0']));
        assert.deepEqual(servers(await probes(net.b.pods[1], vip(16), svcPort, protocol, 8)), new Set(['b0']));
        const partial = await probes(net.a.pods[1], vip(17), svcPort, protocol, 16);
        assert.deepEqual(servers(partial), new Set(['a0', 'b0']), partial.join(', '));
        const inA = await probes(net.a.pods[1], vip(18), svcPort, protocol, 16);
        assert.deepEqual(servers(inA), new Set(['a0', 'b0']), inA.join(', '));
        const inB = await probes(net.b.pods[0], vip(18), svcPort, protocol, 30);
        assert.deepEqual(servers(inB), new Set(['a0', 'b0', 'b1']), inB.join(', '));
      });

      test(`${fam} ${protocol}: node hints come before zone hints, and only when every ready endpoint has one`, T, async () => {
        assert.deepEqual(servers(await probes(net.a.pods[1], vip(19), svcPort, protocol, 8)), new Set(['a0']));
        const inB = await probes(net.b.pods[0], vip(19), svcPort, protocol, 16);
        assert.deepEqual(servers(inB), new Set(['b0', 'b1']), inB.join(', '));
        // Zone a holds a0 and b0; node-a's own node hint is not enough.
        const partial = await probes(net.a.pods[1], vip(20), svcPort, protocol, 16);
        assert.deepEqual(servers(partial), new Set(['a0', 'b0']), partial.join(', '));
        assert.deepEqual(servers(await probes(net.b.pods[0], vip(20), svcPort, protocol, 8)), new Set(['b1']));
      });
    }

    for (const protocol of ['tcp', 'udp'] as const) {
      const svcPort = protocol === 'tcp' ? 80 : 53;
      test(`${fam} ${protocol}: serving terminating endpoints serve only when none is ready (cluster-wide; per node for ETP Local); none serving rejects`, T, async () => {
        assert.deepEqual(servers(await probes(net.a.pods[1], vip(22), svcPort, protocol, 8)), new Set(['a0']));
        assert.deepEqual(servers(await probes(net.b.pods[1], vip(23), svcPort, protocol, 6)), new Set(['a0']));
        assert.deepEqual(await probes(net.a.pods[1], vip(24), svcPort, protocol, 2), ['error ECONNREFUSED', 'error ECONNREFUSED']);
        const np = protocol === 'tcp' ? 30084 : 30057;
        assert.deepEqual(await probes(net.client, nodeB, np, protocol, 4), Array(4).fill(`b1 ${client}`));
        assert.deepEqual(await probes(net.client, nodeA, np, protocol, 4), Array(4).fill(`a0 ${client}`));
      });
    }

    test(`${fam} tcp: ETP Local on a node without a local endpoint drops external traffic; the node with one serves it`, T, async () => {
      assert.deepEqual(await probes(net.client, nodeB, 30082, 'tcp', 2, DROP_MS), ['error timeout', 'error timeout']);
      assert.deepEqual(await probes(net.client, nodeA, 30082, 'tcp', 2), [`a0 ${client}`, `a0 ${client}`]);
      // Pods on node-b are short-circuited to the cluster-wide endpoints (kube-proxy's behaviour).
      assert.deepEqual(servers(await probes(net.b.pods[0], nodeB, 30082, 'tcp', 2)), new Set(['a0']));
    });

    test(`${fam} udp: ETP Local on a node without a local endpoint drops external traffic`, T, async () => {
      assert.deepEqual(await probes(net.client, nodeB, 30055, 'udp', 2, DROP_MS), ['error timeout', 'error timeout']);
    });

    test(`${fam}: NetworkPolicy applies to the translated destination, whichever node translated it`, T, async () => {
      for (const protocol of ['tcp', 'udp'] as const) {
        const p = protocol === 'tcp' ? 80 : 53;
        // role=client pods on either node are admitted; the others are dropped by a2's ingress
        // policy on node-a, after node-a or node-b has DNATed the service address to a2.
        assert.deepEqual(await probes(net.a.pods[1], vip(21), p, protocol, 2), Array(2).fill(`a2 ${NODE_A.pod(1)[fam]}`));
        assert.deepEqual(await probes(net.b.pods[1], vip(21), p, protocol, 2), Array(2).fill(`a2 ${NODE_B.pod(1)[fam]}`));
        assert.deepEqual(await probes(net.a.pods[0], vip(21), p, protocol, 1, DROP_MS), ['error timeout']);
        assert.deepEqual(await probes(net.b.pods[0], vip(21), p, protocol, 1, DROP_MS), ['error timeout']);
      }
    });

    test(`${fam} tcp: ITP Local with no endpoint on this node drops the pods' traffic (never another node's endpoint)`, T, async () => {
      assert.deepEqual(await probes(net.b.pods[1], vip(15), 80, 'tcp', 2, DROP_MS), ['error timeout', 'error timeout']);
      assert.deepEqual(await probes(net.b.pods[1], vip(15), 53, 'udp', 2, DROP_MS), ['error timeout', 'error timeout']);
      // ITP Local binds the ClusterIP only: the same service's NodePort (ETP Cluster) on node-b
      // still reaches node-a's endpoint.
      assert.deepEqual(await probes(net.b.pods[1], vip(28), 80, 'tcp', 1, DROP_MS), ['error timeout']);
      assert.deepEqual(await probes(net.client, nodeB, 30086, 'tcp', 2), [`a0 ${nodeB}`, `a0 ${nodeB}`]);
      assert.deepEqual(await probes(net.client, nodeB, 30059, 'udp', 2), [`a0 ${nodeB}`, `a0 ${nodeB}`]);
    });
  }
});
