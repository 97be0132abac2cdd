/** externalTrafficPolicy: Local on a ClusterIP Service with externalIPs, with real packets. kube-proxy
 * counts such a service as externally accessible (pkg/api/v1/service ExternalPolicyLocal), so an
 * external client reaches only node-local endpoints with its source kept, and is dropped when
 * there are none, while pods still reach every endpoint (short-circuit) and the cluster IP is
 * untouched. The Services go through normalization, as from the API. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { normalizeService } from '../../src/k8s/normalize-service';
import type { EndpointSliceInfo } from '../../src/k8s/service-model';
import { endpoint, node, slice, snapshotOf } from './fixtures';
import { CLIENT_V4, CLIENT_V6, createServiceNet, NODE_V4, NODE_V6, POD_CIDRS, podV4, podV6, ServiceNet } from './service-net';
import { probes, startProxyAgent, type ProxyAgent } from './packet-fixtures';

const T = { timeout: 60_000 };
const DROP_MS = 700;
const N1 = 'node-1';

const EXT = { local: ['198.18.200.3', '2001:db8:c8::3'], none: ['198.18.200.4', '2001:db8:c8::4'] };
const VIP = { local: ['198.19.0.30', '2001:db8:f::30'], none: ['198.19.0.31', '2001:db8:f::31'] };

function etpLocal(name: keyof typeof EXT) {
  return normalizeService({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { namespace: 'x', name },
    spec: {
      clusterIP: VIP[name][0],
      clusterIPs: VIP[name],
      ipFamilies: ['IPv4', 'IPv6'],
      externalIPs: EXT[name],
      externalTrafficPolicy: 'Local',
      ports: [
        { name: 'http', port: 80 },
        { name: 'dns', protocol: 'UDP', port: 53 },
      ],
    },
  });
}

function slices(name: string, spec: [number, string][]): EndpointSliceInfo[] {
  const ports = [
    { name: 'http', protocol: 'TCP' as const, port: 8080 },
    { name: 'dns', protocol: 'UDP' as const, port: 5353 },
  ];
  return [
    slice('x', `${name}-4`, name, { ports, endpoints: spec.map(([i, n]) => endpoint(podV4(i), n)) }),
    slice('x', `${name}-6`, name, { addressType: 'IPv6', ports, endpoints: spec.map(([i, n]) => endpoint(podV6(i), n)) }),
  ];
}

describe('ETP Local on a ClusterIP service with externalIPs, real packets', () => {
  let net: ServiceNet;
  let proxy: ProxyAgent | undefined;

  before(async () => {
    net = await createServiceNet(3, { tcp: [8080], udp: [5353] });
    const nodes = [node(N1, { addresses: [{ type: 'InternalIP', address: NODE_V4 }, { type: 'InternalIP', address: NODE_V6 }], podCIDRs: POD_CIDRS })];
    const services = [etpLocal('local'), etpLocal('none')];
    assert.equal(services[0].externalTrafficPolicy, 'Local');
    proxy = await startProxyAgent(net.nodeNsPath, { nodeName: N1, clusterCIDRs: POD_CIDRS }, snapshotOf(services, [...slices('local', [[0, N1], [1, 'node-2']]), ...slices('none', [[1, 'node-2']])], nodes));
  });

  after(async () => {
    await proxy?.stop();
    net?.close();
  });

  for (const [k, fam] of [[0, 'v4'] as const, [1, 'v6'] as const]) {
    const clientIP = fam === 'v4' ? CLIENT_V4 : CLIENT_V6;
    for (const protocol of ['tcp', 'udp'] as const) {
      const p = protocol === 'tcp' ? 80 : 53;
      test(`${fam} ${protocol}: an external client reaches only the local endpoint, its source kept`, T, async () => {
        for (const r of await probes(net.client, EXT.local[k], p, protocol, 8)) assert.equal(r, `pod0 ${clientIP}`);
      });
    }

    test(`${fam} tcp: no local endpoint: external traffic dropped, pods still served on the external IP and the cluster IP`, T, async () => {
      assert.deepEqual(await probes(net.client, EXT.none[k], 80, 'tcp', 2, DROP_MS), ['error timeout', 'error timeout']);
      const pod2 = fam === 'v4' ? podV4(2) : podV6(2);
      for (const r of await probes(net.pods[2], EXT.none[k], 80, 'tcp', 3)) assert.equal(r, `pod1 ${pod2}`);
      for (const r of await probes(net.pods[2], VIP.none[k], 80, 'tcp', 3)) assert.equal(r, `pod1 ${pod2}`);
    });
  }
});
