/** Services, EndpointSlices and Nodes: one normalization for typed LIST models, raw WATCH JSON and
 * manifests (checked field by field, errors naming object and field), delivered by both sources
 * only when asked for. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { K8sObjectError } from '../../src/k8s/errors';
import { InformerSource, loadKubeConfig } from '../../src/k8s/informer-source';
import { ManifestSource } from '../../src/k8s/manifest-source';
import { normalizeEndpointSlice, normalizeNode, normalizeService } from '../../src/k8s/normalize-service';
import { POLICY_KINDS, PROXY_KINDS, type ClusterChange } from '../../src/k8s/source';
import { KObject, TestApiServer } from '../helpers/apiserver';
import { node1, web, webSlice } from './service-objects';
import { Recorder } from './recorder';

const T = { timeout: 30_000 };

const expectedService = {
  namespace: 'x',
  name: 'web',
  type: 'LoadBalancer',
  clusterIPs: ['198.19.0.10', '2001:db8:f::a'],
  headless: false,
  ports: [
    { name: 'http', protocol: 'TCP', port: 80, targetPort: 'http', nodePort: 30080 },
    { name: 'dns', protocol: 'UDP', port: 53, targetPort: 5353, nodePort: 30053 },
  ],
  externalIPs: ['198.18.200.1'],
  loadBalancerIPs: ['198.18.201.1'],
  loadBalancerSourceRanges: ['198.18.100.0/24'],
  externalTrafficPolicy: 'Local',
  internalTrafficPolicy: 'Cluster',
  healthCheckNodePort: 32000,
  sessionAffinity: 'ClientIP',
  affinityTimeoutSeconds: 10800,
};

const expectedSlice = {
  namespace: 'x',
  name: 'web-abc',
  serviceName: 'web',
  addressType: 'IPv4',
  ports: [
    { name: 'http', protocol: 'TCP', port: 8080 },
    { name: 'dns', protocol: 'UDP', port: 5353 },
  ],
  endpoints: [
    { address: '198.18.1.10', ready: true, serving: true, terminating: false, nodeName: 'node-1', zone: 'a', zoneHints: ['a'] },
    { address: '198.18.1.11', ready: false, serving: true, terminating: true, nodeName: 'node-2' },
  ],
  triggerTimeMs: Date.parse('2026-01-01T00:00:00Z'),
};

const expectedNode = {
  name: 'node-1',
  labels: { other: 'x', 'topology.kubernetes.io/zone': 'a' },
  zone: 'a',
  addresses: [
    { type: 'InternalIP', address: '198.18.0.1' },
    { type: 'InternalIP', address: '2001:db8::1' },
  ],
  podCIDRs: ['198.18.1.0/24', '2001:db8:1::/64'],
};

function fieldError(fn: () => unknown, object: string, field: string): void {
  assert.throws(fn, (err: unknown) => err instanceof K8sObjectError && err.object === object && err.field === field);
}

describe('Service, EndpointSlice and Node normalization', () => {
  test('manifest-shaped objects normalize to the proxy slice', () => {
    assert.deepEqual(normalizeService(web), expectedService);
    assert.deepEqual(normalizeEndpointSlice(webSlice), expectedSlice);
    assert.deepEqual(normalizeNode(node1), expectedNode);
  });

  test('headless and ExternalName services carry no addresses', () => {
    const headless = normalizeService({ metadata: { namespace: 'x', name: 'h' }, spec: { clusterIP: 'None', ports: [{ port: 80 }] } });
    assert.equal(headless.headless, true);
    assert.deepEqual(headless.clusterIPs, []);
    const ext = normalizeService({ metadata: { namespace: 'x', name: 'e' }, spec: { type: 'ExternalName', externalName: 'example.com' } });
    assert.deepEqual(ext.clusterIPs, []);
    assert.equal(ext.type, 'ExternalName');
  });

  test('defaults: TCP, targetPort = port, ready/serving when conditions are absent, annotation source ranges', () => {
    const s = normalizeService({
      metadata: { namespace: 'x', name: 's', annotations: { 'service.beta.kubernetes.io/load-balancer-source-ranges': '198.18.5.7/16, 2001:db8::/32' } },
      spec: { type: 'LoadBalancer', clusterIP: '198.19.0.1', ports: [{ port: 443, targetPort: '8443' }] },
    });
    assert.deepEqual(s.ports, [{ name: '', protocol: 'TCP', port: 443, targetPort: 8443 }]);
    assert.deepEqual(s.loadBalancerSourceRanges, ['198.18.0.0/16', '2001:db8::/32']);
    const e = normalizeEndpointSlice({ metadata: { namespace: 'x', name: 'e' }, addressType: 'IPv6', endpoints: [{ addresses: ['2001:DB8::0:1'] }] });
    assert.deepEqual(e.endpoints, [{ address: '2001:db8::1', ready: true, serving: true, terminating: false }]);
  });

  test('out-of-range numbers and bad addresses name the object and field', () => {
    const svc = (spec: KObject) => () => normalizeService({ metadata: { namespace: 'x', name: 'bad' }, spec });
    fieldError(svc({ clusterIP: '198.19.0.1', ports: [{ port: 70000 }] }), 'Service x/bad', 'spec.ports[0].port');
    fieldError(svc({ clusterIP: '198.19.0.1', ports: [{ port: 0 }] }), 'Service x/bad', 'spec.ports[0].port');
    fieldError(svc({ clusterIP: '198.19.0.1', ports: [{ port: 1.5 }] }), 'Service x/bad', 'spec.ports[0].port');
    fieldError(svc({ clusterIP: '198.19.0.1', ports: [{ port: 80, targetPort: 'Not_A_Name' }] }), 'Service x/bad', 'spec.ports[0].targetPort');
    fieldError(svc({ clusterIP: '198.19.0.1', ports: [{ port: 80, protocol: 'ICMP' }] }), 'Service x/bad', 'spec.ports[0].protocol');
    fieldError(svc({ clusterIP: '198.19.0.300', ports: [{ port: 80 }] }), 'Service x/bad', 'spec.clusterIP');
    fieldError(svc({ type: 'NodePort', clusterIP: '198.19.0.1', ports: [{ port: 80, nodePort: 65536 }] }), 'Service x/bad', 'spec.ports[0].nodePort');
    fieldError(svc({ clusterIP: '198.19.0.1', ports: [{ port: 80 }, { port: 81 }] }), 'Service x/bad', 'spec.ports[1].name');
    fieldError(
      svc({ clusterIP: '198.19.0.1', sessionAffinity: 'ClientIP', sessionAffinityConfig: { clientIP: { timeoutSeconds: 86401 } } }),
      'Service x/bad',
      'spec.sessionAffinityConfig.clientIP.timeoutSeconds',
    );
    fieldError(svc({ type: 'LoadBalancer', clusterIP: '198.19.0.1', loadBalancerSourceRanges: ['nope'] }), 'Service x/bad', 'spec.loadBalancerSourceRanges[0]');
    const slice = (body: KObject) => () => normalizeEndpointSlice({ metadata: { namespace: 'x', name: 'bad' }, ...body });
    fieldError(slice({ addressType: 'IPv4', endpoints: [{ addresses: ['2001:db8::1'] }] }), 'EndpointSlice x/bad', 'endpoints[0].addresses[0]');
    fieldError(slice({ addressType: 'IPv4', ports: [{ port: -1 }] }), 'EndpointSlice x/bad', 'ports[0].port');
    fieldError(slice({ addressType: 'IPv4', endpoints: [{ addresses: ['198.18.0.1'], conditions: { ready: 'yes' } }] }), 'EndpointSlice x/bad', 'endpoints[0].conditions.ready');
    fieldError(slice({ addressType: 'Other' }), 'EndpointSlice x/bad', 'addressType');
    fieldError(() => normalizeNode({ metadata: { name: 'n' }, spec: { podCIDRs: ['198.18.0.0/33'] } }), 'Node n', 'spec.podCIDRs[0]');
  });
});

describe('ManifestSource with the proxy kinds', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-svc-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'svc.yaml'), [web, webSlice, node1].map((o) => JSON.stringify(o)).join('\n---\n'));

  test('delivers Services, EndpointSlices and Nodes only when asked', T, async () => {
    const plain = new ManifestSource({ dir, ...new Recorder() });
    const s0 = await plain.start();
    await plain.stop();
    assert.equal(s0.services?.size, 0);
    const rec = new Recorder();
    const source = new ManifestSource({ dir, kinds: [...POLICY_KINDS, ...PROXY_KINDS], ...rec });
    const s = await source.start();
    try {
      assert.deepEqual(s.services?.get('x/web'), expectedService);
      assert.deepEqual(s.endpointSlices?.get('x/web-abc'), expectedSlice);
      assert.deepEqual(s.nodes?.get('node-1'), expectedNode);
      const changed = { ...webSlice, endpoints: [webSlice.endpoints[0]] };
      writeFileSync(join(dir, 'svc.yaml'), [web, changed, node1].map((o) => JSON.stringify(o)).join('\n---\n'));
      const c = await rec.change((x) => x.kind === 'EndpointSlice');
      assert.equal(c.type, 'upsert');
      assert.equal((c as Extract<ClusterChange, { kind: 'EndpointSlice' }>).object.endpoints.length, 1);
      assert.deepEqual(rec.summary(), ['upsert EndpointSlice x/web-abc']);
    } finally {
      await source.stop();
    }
  });
});

describe('InformerSource with the proxy kinds', () => {
  test('typed LIST and raw WATCH normalize alike; node heartbeats are not changes; others are not watched unless asked', T, async () => {
    const server = await TestApiServer.start();
    server.create(web);
    server.create(webSlice);
    server.create(node1);
    const kubeConfig = loadKubeConfig(server.writeKubeconfig());
    const plain = new InformerSource({ kubeConfig, retry: { initialMs: 10, maxMs: 100 }, ...new Recorder() });
    await plain.start();
    await plain.stop();
    assert.equal(server.counts.list.services + server.counts.list.endpointslices + server.counts.list.nodes, 0);

    const podLists = server.counts.list.pods;
    const rec = new Recorder();
    const source = new InformerSource({ kubeConfig, kinds: PROXY_KINDS, retry: { initialMs: 10, maxMs: 100 }, ...rec });
    try {
      const s = await source.start();
      assert.equal(server.counts.list.pods, podLists);
      // The server stamped the Service's creation: the older of two claims keeps an address.
      const createdMs = Date.parse(server.get('Service', 'x', 'web')!.metadata.creationTimestamp);
      assert.deepEqual(s.services?.get('x/web'), { ...expectedService, createdMs });
      assert.deepEqual(s.endpointSlices?.get('x/web-abc'), expectedSlice);
      assert.deepEqual(s.nodes?.get('node-1'), expectedNode);
      // A heartbeat changes nothing the proxy reads.
      server.modify('Node', undefined, 'node-1', (n) => (n.status.conditions[0].lastHeartbeatTime = '2026-01-01T00:01:00Z'));
      server.modify('Service', 'x', 'web', (o) => (o.spec.ports[0].port = 81));
      const c = await rec.change((x) => x.kind === 'Service');
      assert.deepEqual(c.object, { ...expectedService, createdMs, ports: [{ ...expectedService.ports[0], port: 81 }, expectedService.ports[1]] });
      server.delete('EndpointSlice', 'x', 'web-abc');
      await rec.change((x) => x.kind === 'EndpointSlice' && x.type === 'delete');
      assert.deepEqual(rec.summary(), ['upsert Service x/web', 'delete EndpointSlice x/web-abc']);
    } finally {
      await source.stop();
      await server.close();
    }
  });
});
