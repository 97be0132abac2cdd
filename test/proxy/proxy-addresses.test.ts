/** Which addresses the proxy answers on and which source endpoints see, with real packets (service-net.ts, plus a second subnet
 * on the node's uplink): `--nodeport-addresses` CIDRs (NodePorts answer on the node's addresses
 * inside them only) and `primary` (the Node object's address of each family), and
 * loadBalancerSourceRanges for IPv6 as for IPv4 (a client reaches one load-balancer IP from a
 * source inside the ranges and another from a source outside them); `--masquerade-all`. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { node, port, service, snapshotOf } from './fixtures';
import { dual, dualSlices, probes, ProxyAgent, startProxyAgent } from './packet-fixtures';
import { CLIENT_V4, CLIENT_V6, createServiceNet, NODE_V4, NODE_V6, POD_CIDRS, podV4, podV6, ServiceNet } from './service-net';

const T = { timeout: 60_000 };
const DROP_MS = 700;
const N1 = 'node-1';
/** The second subnet: the node's and the client's addresses in it. */
const SECOND = { node: { v4: '198.18.101.1', v6: '2001:db8:101::1' }, client: { v4: '198.18.101.2', v6: '2001:db8:101::2' }, cidrs: ['198.18.101.0/24', '2001:db8:101::/64'] };
/** Load-balancer IPs the client reaches from its second-subnet source (allowed) and from its
 * first (not in the ranges). */
const LB_ALLOWED = { v4: '198.18.201.2', v6: '2001:db8:c9::2' };
const LB_DENIED = { v4: '198.18.201.3', v6: '2001:db8:c9::3' };

const SERVICES = [
  service('x', 'np', { type: 'NodePort', clusterIPs: dual(12), ports: [port('http', 'TCP', 80, { targetPort: 'http', nodePort: 30080 }), port('dns', 'UDP', 53, { targetPort: 'dns', nodePort: 30053 })] }),
  service('x', 'lb-fw', {
    type: 'LoadBalancer',
    clusterIPs: dual(15),
    ports: [port('http', 'TCP', 80, { targetPort: 'http', nodePort: 30083 }), port('dns', 'UDP', 53, { targetPort: 'dns', nodePort: 30056 })],
    loadBalancerIPs: [LB_ALLOWED.v4, LB_DENIED.v4, LB_ALLOWED.v6, LB_DENIED.v6],
    loadBalancerSourceRanges: SECOND.cidrs,
  }),
];
const SLICES = [...dualSlices('np', [{ v4: podV4(0), v6: podV6(0), nodeName: N1 }]), ...dualSlices('lb-fw', [{ v4: podV4(1), v6: podV6(1), nodeName: N1 }])];
const NODES = [node(N1, { addresses: [{ type: 'InternalIP', address: NODE_V4 }, { type: 'InternalIP', address: NODE_V6 }], podCIDRs: POD_CIDRS })];

describe('service proxy addresses, real packets', () => {
  let net: ServiceNet;
  let proxy: ProxyAgent | undefined;

  before(async () => {
    net = await createServiceNet(2, { tcp: [8080], udp: [5353] });
    for (const f of ['v4', 'v6'] as const) {
      const len = f === 'v4' ? 24 : 64;
      const v6 = f === 'v6' ? ['-6'] : [];
      net.run(['ip', 'addr', 'add', `${SECOND.node[f]}/${len}`, 'dev', 'uplink', ...(f === 'v6' ? ['nodad'] : [])]);
      net.runInClient(['ip', 'addr', 'add', `${SECOND.client[f]}/${len}`, 'dev', 'eth0', ...(f === 'v6' ? ['nodad'] : [])]);
      // The client reaches one LB IP from its second-subnet address, the other from its first.
      const via = f === 'v4' ? NODE_V4 : NODE_V6;
      net.runInClient(['ip', ...v6, 'route', 'add', LB_ALLOWED[f], 'via', via, 'src', SECOND.client[f]]);
      net.runInClient(['ip', ...v6, 'route', 'add', LB_DENIED[f], 'via', via, 'src', f === 'v4' ? CLIENT_V4 : CLIENT_V6]);
    }
  });

  after(async () => {
    await proxy?.stop();
    net?.close();
  });

  const restart = async (nodePortAddresses: string[] | 'primary', masqueradeAll = false) => {
    await proxy?.stop();
    proxy = undefined;
    // The table the previous agent left is read back and only the difference committed.
    proxy = await startProxyAgent(net.nodeNsPath, { nodeName: N1, clusterCIDRs: POD_CIDRS, nodePortAddresses, masqueradeAll }, snapshotOf(SERVICES, SLICES, NODES));
  };

  for (const fam of ['v4', 'v6'] as const) {
    const primary = fam === 'v4' ? NODE_V4 : NODE_V6;
    const second = SECOND.node[fam];
    // Masqueraded to an address of the node (IPv4 takes the route's source; IPv6 masquerade
    // runs source address selection over the node's addresses), whichever one the client used.
    const nodeSource = (pod: string) => new RegExp(`^${pod} (${primary}|${second})$`);

    for (const protocol of ['tcp', 'udp'] as const) {
      const nodePort = protocol === 'tcp' ? 30080 : 30053;

      test(`${fam} ${protocol}: --nodeport-addresses CIDRs: a NodePort answers on the node's addresses inside them only`, T, async () => {
        await restart(SECOND.cidrs);
        for (const r of await probes(net.client, second, nodePort, protocol, 3)) assert.match(r, nodeSource('pod0'));
        // Not translated: the node's own stack answers that nothing listens there.
        assert.deepEqual(await probes(net.client, primary, nodePort, protocol, 2), ['error ECONNREFUSED', 'error ECONNREFUSED']);
        const table = net.run(['nft', 'list', 'set', 'inet', 'nfkube-proxy', `nodeport-ips-${fam}`]);
        assert.match(table, new RegExp(`elements = \\{ ${SECOND.cidrs[fam === 'v4' ? 0 : 1].replace(/\./g, '\\.')} \\}`), table);
      });

      test(`${fam} ${protocol}: --nodeport-addresses primary: the Node's own address of the family only`, T, async () => {
        await restart('primary');
        for (const r of await probes(net.client, primary, nodePort, protocol, 3)) assert.match(r, nodeSource('pod0'));
        assert.deepEqual(await probes(net.client, second, nodePort, protocol, 2), ['error ECONNREFUSED', 'error ECONNREFUSED']);
      });
    }

    test(`${fam}: loadBalancerSourceRanges admit sources inside them and drop others; the NodePort is not filtered`, T, async () => {
      if (!proxy) await restart('primary');
      for (const protocol of ['tcp', 'udp'] as const) {
        const p = protocol === 'tcp' ? 80 : 53;
        for (const r of await probes(net.client, LB_ALLOWED[fam], p, protocol, 3)) assert.match(r, nodeSource('pod1'));
        assert.deepEqual(await probes(net.client, LB_DENIED[fam], p, protocol, 2, DROP_MS), ['error timeout', 'error timeout']);
      }
      const firewall = net.run(['nft', 'list', 'chain', 'inet', 'nfkube-proxy', `firewall-${fam}-x/lb-fw/tcp/http`]);
      assert.match(firewall, new RegExp(`${fam === 'v4' ? 'ip' : 'ip6'} saddr != @sources-${fam}-x/lb-fw/tcp/http drop`), firewall);
      // The same client source through the node port (kube-proxy applies the ranges to LB IPs only).
      assert.match((await probes(net.client, primary, 30083, 'tcp', 1))[0], nodeSource('pod1'));
    });

    test(`${fam}: --masquerade-all masquerades pod traffic to a ClusterIP too; without it the pod's source is kept`, T, async () => {
      const vip = dual(12)[fam === 'v4' ? 0 : 1];
      const podSource = fam === 'v4' ? podV4(1) : podV6(1);
      for (const masqueradeAll of [true, false]) {
        await restart('primary', masqueradeAll);
        for (const protocol of ['tcp', 'udp'] as const) {
          for (const r of await probes(net.pods[1], vip, protocol === 'tcp' ? 80 : 53, protocol, 3)) {
            if (masqueradeAll) assert.match(r, nodeSource('pod0'));
            else assert.equal(r, `pod0 ${podSource}`);
          }
        }
      }
    });
  }
});
