/** kube-proxy's edges with real packets (issue 23, items 7 and 8): a port no Service defines on a
 * cluster IP is rejected at once; the node's own traffic to a NodePort or external IP of an
 * `externalTrafficPolicy: Local` Service with no local endpoint is served by the cluster's
 * endpoints; hairpin masquerade touches only connections the proxy translated, so the node's own
 * flows to itself are left alone with a host-network endpoint; an endpoint at a loopback address
 * is refused; another Service's cluster IP listed as an external IP is refused (CVE-2020-8554).
 * `conntrack` is only the oracle. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { endpoint, node, service, slice, snapshotOf } from './fixtures';
import { dual, dualSlices, httpDns, probes, slicePorts, startProxyAgent, type ProxyAgent } from './packet-fixtures';
import { createServiceNet, NODE_V4, NODE_V6, POD_CIDRS, podV4, podV6, ServiceNet } from './service-net';

const T = { timeout: 60_000 };
const N1 = 'node-1';
const EXT = ['198.18.200.5', '2001:db8:c8::5'];
const NODE_PORT = 30080;
/** What the node itself serves: the host-network endpoint's port and an unrelated one. */
const NODE_OWN = 9000;

describe('kube-proxy edges, real packets', () => {
  let net: ServiceNet;
  let proxy: ProxyAgent | undefined;

  before(async () => {
    net = await createServiceNet(2, { tcp: [8080], udp: [5353] }, { tcp: [8080, NODE_OWN], udp: [] });
    const nodes = [node(N1, { addresses: [{ type: 'InternalIP', address: NODE_V4 }, { type: 'InternalIP', address: NODE_V6 }], podCIDRs: POD_CIDRS })];
    const services = [
      service('x', 'web', { clusterIPs: dual(40), ports: httpDns }),
      service('x', 'etp', {
        type: 'NodePort',
        clusterIPs: dual(41),
        externalIPs: EXT,
        externalTrafficPolicy: 'Local',
        ports: [{ ...httpDns[0], nodePort: NODE_PORT }],
      }),
      service('x', 'hostnet', { clusterIPs: dual(42), ports: httpDns }),
      service('x', 'loop', { clusterIPs: dual(43), ports: httpDns }),
      // Another namespace lists x/victim's cluster IPs as its external IPs, and is even older.
      service('x', 'victim', { clusterIPs: dual(44), ports: httpDns, createdMs: 2 }),
      service('attacker', 'steal', { clusterIPs: dual(45), externalIPs: dual(44), ports: httpDns, createdMs: 1 }),
    ];
    const slices = [
      ...dualSlices('web', [{ v4: podV4(0), v6: podV6(0), nodeName: N1 }]),
      ...dualSlices('etp', [{ v4: podV4(1), v6: podV6(1), nodeName: 'node-2' }]),
      ...dualSlices('hostnet', [{ v4: NODE_V4, v6: NODE_V6, nodeName: N1 }]),
      slice('x', 'loop-4', 'loop', { ports: slicePorts, endpoints: [endpoint('127.0.0.1', N1)] }),
      slice('x', 'loop-6', 'loop', { addressType: 'IPv6', ports: slicePorts, endpoints: [endpoint('::1', N1)] }),
      ...dualSlices('victim', [{ v4: podV4(0), v6: podV6(0), nodeName: N1 }]),
      slice('attacker', 'steal-4', 'steal', { ports: slicePorts, endpoints: [endpoint(podV4(1), N1)] }),
      slice('attacker', 'steal-6', 'steal', { addressType: 'IPv6', ports: slicePorts, endpoints: [endpoint(podV6(1), N1)] }),
    ];
    proxy = await startProxyAgent(net.nodeNsPath, { nodeName: N1, clusterCIDRs: POD_CIDRS }, snapshotOf(services, slices, nodes));
  });

  after(async () => {
    await proxy?.stop();
    net?.close();
  });

  for (const [k, fam] of [[0, 'v4'] as const, [1, 'v6'] as const]) {
    const vip = (n: number) => dual(n)[k];
    const nodeIP = fam === 'v4' ? NODE_V4 : NODE_V6;

    test(`${fam}: a port the Service does not define on its cluster IP is refused at once, from a pod and from the node`, T, async () => {
      assert.deepEqual(await probes(net.pods[1], vip(40), 81, 'tcp', 1, 10_000), ['error ECONNREFUSED']);
      assert.deepEqual(await probes(net.node, vip(40), 81, 'tcp', 1, 10_000), ['error ECONNREFUSED']);
      assert.deepEqual(await probes(net.pods[1], vip(40), 54, 'udp', 1, 10_000), ['error ECONNREFUSED']);
      // The ports it defines are served as before.
      assert.deepEqual(await probes(net.pods[1], vip(40), 80, 'tcp', 1), [`pod0 ${fam === 'v4' ? podV4(1) : podV6(1)}`]);
    });

    test(`${fam}: the node reaches an ETP Local external IP and NodePort with no local endpoint through the cluster's endpoints`, T, async () => {
      for (const r of await probes(net.node, EXT[k], 80, 'tcp', 2, 10_000)) assert.match(r, /^pod1 /);
      for (const r of await probes(net.node, nodeIP, NODE_PORT, 'tcp', 2, 10_000)) assert.match(r, /^pod1 /);
    });

    test(`${fam}: with a host-network endpoint, the node's own flows to itself are not masqueraded`, T, async () => {
      // The service works (the node is its endpoint)...
      assert.deepEqual(await probes(net.pods[0], vip(42), 80, 'tcp', 1), [`node ${fam === 'v4' ? podV4(0) : podV6(0)}`]);
      // ...and a flow the proxy did not translate keeps its source, unNATed.
      assert.deepEqual(await probes(net.node, nodeIP, NODE_OWN, 'tcp', 1), [`node ${nodeIP}`]);
      const snat = net.run(['conntrack', '-L', '-f', fam === 'v4' ? 'ipv4' : 'ipv6', '-p', 'tcp', '--dport', String(NODE_OWN), '--src-nat']);
      assert.equal(snat.trim(), '', `no source NAT on the node's own flow:\n${snat}`);
    });

    test(`${fam}: a Service listing another's cluster IP as an external IP gets none of its traffic`, T, async () => {
      for (const protocol of ['tcp', 'udp'] as const) {
        for (const r of await probes(net.node, vip(44), protocol === 'tcp' ? 80 : 53, protocol, 3)) assert.match(r, /^pod0 /, `${protocol}: x/victim's own endpoint answers`);
      }
      // Its own cluster IP still works.
      assert.match((await probes(net.node, vip(45), 80, 'tcp', 1))[0], /^pod1 /);
    });

    test(`${fam}: an endpoint at a loopback address is refused: the service has no endpoint, loopback flows stay untouched`, T, async () => {
      assert.deepEqual(await probes(net.pods[1], vip(43), 80, 'tcp', 1, 10_000), ['error ECONNREFUSED']);
      const lo = fam === 'v4' ? '127.0.0.1' : '::1';
      assert.deepEqual(await probes(net.node, lo, 8080, 'tcp', 1), [`node ${lo}`]);
      const snat = net.run(['conntrack', '-L', '-f', fam === 'v4' ? 'ipv4' : 'ipv6', '-p', 'tcp', '--dport', '8080', '--orig-src', lo, '--src-nat']);
      assert.equal(snat.trim(), '', `no source NAT on a loopback flow:\n${snat}`);
    });
  }
});
