/** The service proxy with real packets: a node namespace with routed pods and an external client
 * (service-net.ts), the pipeline Agent hosting the ProxyComponent against the kernel, pods
 * answering with their name and the source address they saw. Which endpoints serve, which source
 * they see, what is rejected or dropped: kube-proxy's behaviour, TCP and UDP, IPv4 and IPv6. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import type { EndpointSliceInfo, ServiceInfo } from '../../src/k8s/service-model';
import { Netns } from '../../src/netlink/netns';
import { NetlinkSocket } from '../../src/netlink/socket';
import { Agent } from '../../src/pipeline/agent';
import { ProxyComponent } from '../../src/proxy/component';
import { node, port, service, snapshotOf } from './fixtures';
import { dual, dualSlices, httpDns, probes, servers } from './packet-fixtures';
import { CLIENT_V4, CLIENT_V6, createServiceNet, NODE_V4, NODE_V6, POD_CIDRS, podV4, podV6, ServiceNet } from './service-net';

const T = { timeout: 60_000 };
const DROP_MS = 700;
const N1 = 'node-1';

function slices(name: string, spec: [number, string][]): EndpointSliceInfo[] {
  return dualSlices(name, spec.map(([i, nodeName]) => ({ v4: podV4(i), v6: podV6(i), nodeName })));
}

const SERVICES: ServiceInfo[] = [
  service('x', 'web', { clusterIPs: dual(10), ports: httpDns }),
  service('x', 'empty', { clusterIPs: dual(11), ports: httpDns }),
  service('x', 'np', { type: 'NodePort', clusterIPs: dual(12), ports: [port('http', 'TCP', 80, { nodePort: 30080 }), port('dns', 'UDP', 53, { nodePort: 30053 })] }),
  service('x', 'lb-local', {
    type: 'LoadBalancer',
    clusterIPs: dual(13),
    ports: [port('http', 'TCP', 80, { nodePort: 30081 }), port('dns', 'UDP', 53, { nodePort: 30054 })],
    externalTrafficPolicy: 'Local',
    healthCheckNodePort: 32000,
    loadBalancerIPs: ['198.18.201.1', '2001:db8:c9::1'],
    loadBalancerSourceRanges: ['198.18.100.0/24', '2001:db8:100::/64'],
  }),
  service('x', 'np-none-local', { type: 'NodePort', clusterIPs: dual(14), ports: [port('http', 'TCP', 80, { nodePort: 30082 })], externalTrafficPolicy: 'Local' }),
  service('x', 'lb-fw', { type: 'LoadBalancer', clusterIPs: dual(15), ports: [port('http', 'TCP', 80, { nodePort: 30083 })], loadBalancerIPs: ['198.18.201.2'], loadBalancerSourceRanges: ['203.0.113.0/24'] }),
  service('x', 'ext', { clusterIPs: dual(16), ports: httpDns, externalIPs: ['198.18.200.1', '2001:db8:c8::1'] }),
  service('x', 'itp', { clusterIPs: dual(17), ports: httpDns, internalTrafficPolicy: 'Local' }),
  service('x', 'aff', { clusterIPs: dual(18), ports: httpDns, sessionAffinity: 'ClientIP', affinityTimeoutSeconds: 60 }),
  service('x', 'headless', { headless: true, ports: httpDns }),
];
const SLICES: EndpointSliceInfo[] = [
  ...slices('web', [[0, N1], [1, N1]]),
  ...slices('np', [[0, N1], [1, 'node-2']]),
  ...slices('lb-local', [[0, N1], [1, 'node-2']]),
  ...slices('np-none-local', [[1, 'node-2']]),
  ...slices('lb-fw', [[0, N1]]),
  ...slices('ext', [[1, N1]]),
  ...slices('itp', [[0, N1], [1, 'node-2']]),
  ...slices('aff', [[0, N1], [1, N1]]),
  ...slices('headless', [[0, N1], [1, N1]]),
];

describe('service proxy, real packets', () => {
  let net: ServiceNet;
  let netns: Netns;
  let socket: NetlinkSocket;
  let agent: Agent;

  before(async () => {
    net = await createServiceNet(3, { tcp: [8080], udp: [5353] });
    netns = Netns.open(net.nodeNsPath);
    socket = NetlinkSocket.open({ netns });
    const proxy = new ProxyComponent({ nodeName: N1, clusterCIDRs: POD_CIDRS });
    agent = new Agent({ socket, logger: pino({ level: 'silent' }), components: [proxy] });
    const nodes = [node(N1, { addresses: [{ type: 'InternalIP', address: NODE_V4 }, { type: 'InternalIP', address: NODE_V6 }], podCIDRs: POD_CIDRS, zone: 'a' })];
    await agent.start(snapshotOf(SERVICES, SLICES, nodes));
  });

  after(async () => {
    await agent?.stop();
    await socket?.close();
    netns?.close();
    net?.close();
  });

  for (const fam of ['v4', 'v6'] as const) {
    const vip = (n: number) => dual(n)[fam === 'v4' ? 0 : 1];
    const pod = (i: number) => (fam === 'v4' ? podV4(i) : podV6(i));
    const nodeIP = fam === 'v4' ? NODE_V4 : NODE_V6;
    const clientIP = fam === 'v4' ? CLIENT_V4 : CLIENT_V6;

    for (const protocol of ['tcp', 'udp'] as const) {
      const svcPort = protocol === 'tcp' ? 80 : 53;
      test(`${fam} ${protocol}: a ClusterIP spreads over its ready endpoints (named target port) and a pod source is kept`, T, async () => {
        const replies = await probes(net.pods[2], vip(10), svcPort, protocol, 16);
        assert.deepEqual(servers(replies), new Set(['pod0', 'pod1']), replies.join(', '));
        for (const r of replies) assert.equal(r.split(' ')[1], pod(2), r);
      });

      test(`${fam} ${protocol}: a ClusterIP without endpoints rejects at once`, T, async () => {
        const t0 = Date.now();
        const replies = await probes(net.pods[2], vip(11), svcPort, protocol, 3);
        assert.deepEqual(replies, ['error ECONNREFUSED', 'error ECONNREFUSED', 'error ECONNREFUSED']);
        assert.ok(Date.now() - t0 < 1500, 'rejected, not timed out');
      });

      test(`${fam} ${protocol}: from outside the cluster a ClusterIP is masqueraded`, T, async () => {
        const replies = await probes(net.client, vip(10), svcPort, protocol, 4);
        for (const r of replies) assert.match(r, new RegExp(`^pod[01] ${nodeIP}$`));
      });

      test(`${fam} ${protocol}: a NodePort (ETP Cluster) serves from every endpoint, masqueraded`, T, async () => {
        const replies = await probes(net.client, nodeIP, protocol === 'tcp' ? 30080 : 30053, protocol, 16);
        assert.deepEqual(servers(replies), new Set(['pod0', 'pod1']), replies.join(', '));
        for (const r of replies) assert.equal(r.split(' ')[1], nodeIP, r);
      });

      test(`${fam} ${protocol}: ETP Local keeps the client source and uses local endpoints only (NodePort and LB IP)`, T, async () => {
        const lb = fam === 'v4' ? '198.18.201.1' : '2001:db8:c9::1';
        const viaNodePort = await probes(net.client, nodeIP, protocol === 'tcp' ? 30081 : 30054, protocol, 8);
        const viaLB = await probes(net.client, lb, svcPort, protocol, 8);
        for (const r of [...viaNodePort, ...viaLB]) assert.equal(r, `pod0 ${clientIP}`);
      });

      test(`${fam} ${protocol}: a ClusterIP with externalIPs answers on them, masqueraded`, T, async () => {
        const extIP = fam === 'v4' ? '198.18.200.1' : '2001:db8:c8::1';
        for (const r of await probes(net.client, extIP, svcPort, protocol, 4)) assert.equal(r, `pod1 ${nodeIP}`);
      });

      test(`${fam} ${protocol}: ITP Local serves from node-local endpoints only`, T, async () => {
        const replies = await probes(net.pods[2], vip(17), svcPort, protocol, 10);
        assert.deepEqual(servers(replies), new Set(['pod0']), replies.join(', '));
      });

      test(`${fam} ${protocol}: sessionAffinity ClientIP sends one client to one endpoint`, T, async () => {
        const replies = await probes(net.pods[2], vip(18), svcPort, protocol, 10);
        assert.equal(servers(replies).size, 1, replies.join(', '));
        assert.match(replies[0], /^pod[01] /);
      });
    }

    test(`${fam} tcp: ETP Local with no local endpoint drops external traffic`, T, async () => {
      assert.deepEqual(await probes(net.client, nodeIP, 30082, 'tcp', 2, DROP_MS), ['error timeout', 'error timeout']);
    });

    test(`${fam} tcp: loadBalancerSourceRanges drop other sources (v4 LB only)`, T, async () => {
      if (fam === 'v6') return;
      assert.deepEqual(await probes(net.client, '198.18.201.2', 80, 'tcp', 2, DROP_MS), ['error timeout', 'error timeout']);
      // The NodePort of the same service is not subject to the ranges (kube-proxy's behaviour).
      assert.match((await probes(net.client, nodeIP, 30083, 'tcp', 1))[0], /^pod0 /);
    });

    test(`${fam} tcp: hairpin: a pod reaching itself through its service sees the node as source`, T, async () => {
      const replies = await probes(net.pods[0], vip(10), 80, 'tcp', 16);
      const self = replies.filter((r) => r.startsWith('pod0 '));
      const other = replies.filter((r) => r.startsWith('pod1 '));
      assert.ok(self.length > 0 && other.length > 0, replies.join(', '));
      for (const r of self) assert.equal(r, `pod0 ${nodeIP}`);
      for (const r of other) assert.equal(r, `pod1 ${pod(0)}`);
    });

    test(`${fam}: host-originated traffic reaches ClusterIPs and NodePorts`, T, async () => {
      for (const r of await probes(net.node, vip(10), 80, 'tcp', 4)) assert.match(r, /^pod[01] /);
      for (const r of await probes(net.node, vip(10), 53, 'udp', 4)) assert.match(r, /^pod[01] /);
      for (const r of await probes(net.node, nodeIP, 30080, 'tcp', 4)) assert.match(r, /^pod[01] /);
      // ETP Local from the node itself is short-circuited to the cluster-wide endpoints.
      assert.deepEqual(servers(await probes(net.node, nodeIP, 30081, 'tcp', 12)), new Set(['pod0', 'pod1']));
      // Also with no local endpoint at all: the endpoints check leaves the node's own traffic to
      // the short-circuit (kube-proxy's nftables mode drops it there; its iptables mode does not).
      for (const r of await probes(net.node, nodeIP, 30082, 'tcp', 2)) assert.match(r, /^pod[01] /);
    });

    test(`${fam}: a headless service is not proxied`, T, async () => {
      assert.equal(net.run(['nft', 'list', 'table', 'inet', 'nfkube-proxy']).includes('headless'), false);
    });
  }
});
