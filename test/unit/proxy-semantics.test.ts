/** The service proxy against kube-proxy's semantics, object to rendered map elements, without a
 * kernel. Each test names the upstream function (kubernetes/kubernetes pkg/proxy/...) whose
 * behaviour it pins: which services and slices are proxied, endpoint conditions and dedupe,
 * port matching, traffic policies, topology, load balancers, affinity, dual-stack, and hostile
 * input (skipped with a named problem, the rest programmed; never a crash). */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { describe, test } from 'node:test';
import { K8sObjectError } from '../../src/k8s/errors';
import { normalizeEndpointSlice, normalizeNode, normalizeService } from '../../src/k8s/normalize-service';
import type { EndpointSliceInfo, ServiceInfo } from '../../src/k8s/service-model';
import { ProxyComponent } from '../../src/proxy/component';
import { categorizeEndpoints } from '../../src/proxy/endpoints';
import { HealthCheckServer } from '../../src/proxy/health';
import { N, protoPortKey, ProxyEnv, ProxyRenderer, tripleKey, type Contribution } from '../../src/proxy/render';
import { servicePortViews } from '../../src/proxy/service-ports';
import type { SetElement, Verdict } from '../../src/nft/types';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const NODE = 'node-1';

function svcJson(spec: Json, meta: Json = {}, status: Json = {}): Json {
  return { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'x', name: 'web', ...meta }, spec: { clusterIP: '198.19.0.10', ports: [{ name: 'http', port: 80 }], ...spec }, status };
}

function sliceJson(body: Json, name = 'web-a', labels: Json = { 'kubernetes.io/service-name': 'web' }): Json {
  return { apiVersion: 'discovery.k8s.io/v1', kind: 'EndpointSlice', metadata: { namespace: 'x', name, labels }, addressType: 'IPv4', ports: [{ name: 'http', port: 8080 }], ...body };
}

/** Normalizes as the sources do: problems are collected, not thrown. */
function norm<T>(fn: (raw: unknown, opts: { onProblem: (e: K8sObjectError) => void }) => T, raw: unknown): { object: T; problems: K8sObjectError[] } {
  const problems: K8sObjectError[] = [];
  const object = fn(raw, { onProblem: (e) => problems.push(e) });
  return { object, problems };
}
const service = (raw: Json) => norm(normalizeService, raw).object;
const slice = (raw: Json) => norm(normalizeEndpointSlice, raw).object;

function throwsField(fn: () => unknown, field: string): void {
  assert.throws(fn, (err: unknown) => err instanceof K8sObjectError && err.field === field, `expected an error naming ${field}`);
}

const env = (over: Partial<ProxyEnv> = {}): ProxyEnv => ({ nodeName: NODE, masqueradeAll: false, localDetector: { v4: true, v6: true }, nodeIPs: { v4: '198.18.0.1' }, ...over });
const renderer = new ProxyRenderer('nfkube-proxy');

/** Renders every service port view of a service and returns its contributions. */
function render(svc: ServiceInfo, slices: EndpointSliceInfo[], e: ProxyEnv = env()): Contribution[] {
  return servicePortViews(svc, slices, e.nodeName).map((v) => renderer.servicePort(v, e));
}

function verdictOf(cs: Contribution[], map: string, key: Buffer): Verdict | undefined {
  for (const c of cs) for (const [m, el] of c.elements) if (m === map && (el as SetElement).key.equals(key)) return el.verdict;
  return undefined;
}

const endpoint = (address: string, o: Json = {}) => ({ addresses: [address], nodeName: 'node-2', ...o });

describe('what kube-proxy ignores (proxyutil.ShouldSkipService, EndpointSliceCache)', () => {
  test('service-proxy-name label, ExternalName and headless services render nothing', () => {
    const slices = [slice(sliceJson({ endpoints: [endpoint('198.18.1.1')] }))];
    for (const raw of [
      svcJson({}, { labels: { 'service.kubernetes.io/service-proxy-name': 'other-proxy' } }),
      svcJson({ type: 'ExternalName', externalName: 'example.com', clusterIP: '198.19.0.10' }),
      svcJson({ clusterIP: 'None' }),
      svcJson({ clusterIP: 'None', clusterIPs: ['None'] }),
      // kube-proxy's informers select !service-proxy-name,!headless (cmd/kube-proxy/app/server.go).
      svcJson({}, { labels: { 'service.kubernetes.io/headless': '' } }),
    ]) {
      assert.deepEqual(servicePortViews(service(raw), slices, NODE), [], JSON.stringify(raw.spec));
    }
    // An empty label value is still another proxy's (kube-proxy's informer selects on the label's absence).
    assert.deepEqual(servicePortViews(service(svcJson({}, { labels: { 'service.kubernetes.io/service-proxy-name': '' } })), slices, NODE), []);
  });

  test('FQDN slices, slices without the service-name label and slices of another namespace give no endpoints', () => {
    const svc = service(svcJson({}));
    const fqdn = slice(sliceJson({ addressType: 'FQDN', endpoints: [{ addresses: ['db.example.com'] }] }));
    assert.deepEqual(fqdn.endpoints, []);
    const proxy = new ProxyComponent({ nodeName: NODE, clusterCIDRs: ['198.18.0.0/16'] });
    const unlabeled = slice(sliceJson({ endpoints: [endpoint('198.18.1.1')] }, 'web-b', {}));
    const emptyLabel = slice(sliceJson({ endpoints: [endpoint('198.18.1.2')] }, 'web-c', { 'kubernetes.io/service-name': '' }));
    const otherNs = slice({ ...sliceJson({ endpoints: [endpoint('198.18.1.3')] }, 'web-d'), metadata: { namespace: 'y', name: 'web-d', labels: { 'kubernetes.io/service-name': 'web' } } });
    const otherProxy = slice(sliceJson({ endpoints: [endpoint('198.18.1.4')] }, 'web-e', { 'kubernetes.io/service-name': 'web', 'service.kubernetes.io/service-proxy-name': 'x' }));
    const headlessLabel = slice(sliceJson({ endpoints: [endpoint('198.18.1.5')] }, 'web-f', { 'kubernetes.io/service-name': 'web', 'service.kubernetes.io/headless': '' }));
    assert.equal(otherProxy.serviceName, undefined);
    assert.equal(headlessLabel.serviceName, undefined);
    const slices = [fqdn, unlabeled, emptyLabel, otherNs, otherProxy, headlessLabel];
    proxy.start({
      pods: new Map(),
      namespaces: new Map(),
      policies: new Map(),
      services: new Map([['x/web', svc]]),
      endpointSlices: new Map(slices.map((s) => [`${s.namespace}/${s.name}`, s])),
      nodes: new Map(),
    });
    assert.equal(proxy.stats().endpoints, 0);
    // With no endpoints the VIP rejects (syncProxyRules: noEndpointServicesMap, goto reject-chain).
    assert.deepEqual(verdictOf(render(svc, []), N.noEndpointServices('v4'), tripleKey('198.19.0.10', 'TCP', 80)), { kind: 'goto', chain: N.reject });
  });

  test('a slice joins the Service its label names, whoever manages or owns it (endpointSliceCacheKeys)', () => {
    const svc = service(svcJson({}));
    const raw = sliceJson({ endpoints: [endpoint('198.18.1.1')] }, 'custom', { 'kubernetes.io/service-name': 'web', 'endpointslice.kubernetes.io/managed-by': 'someone-else' });
    raw.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Service', name: 'other', uid: 'u' }];
    assert.deepEqual(
      servicePortViews(svc, [slice(raw)], NODE)[0].endpoints.map((e) => e.ip),
      ['198.18.1.1'],
    );
  });

  test('one address and port in two slices is one endpoint; a later non-terminating copy wins (EndpointSliceCache.addEndpoints)', () => {
    const svc = service(svcJson({}));
    const a = slice(sliceJson({ endpoints: [endpoint('198.18.1.1', { conditions: { ready: false, serving: true, terminating: true } })] }, 'web-a'));
    const b = slice(sliceJson({ endpoints: [endpoint('198.18.1.1', { conditions: { ready: true } })] }, 'web-b'));
    const [view] = servicePortViews(svc, [a, b], NODE);
    assert.equal(view.endpoints.length, 1);
    assert.equal(view.endpoints[0].ready, true, 'the running copy, not the terminating one');
    const [again] = servicePortViews(svc, [b, a], NODE);
    assert.equal(again.endpoints[0].ready, true, 'whatever the order');
    // The same address on another port is another endpoint.
    const c = slice(sliceJson({ ports: [{ name: 'http', port: 9090 }], endpoints: [endpoint('198.18.1.1')] }, 'web-c'));
    assert.deepEqual(servicePortViews(svc, [a, c], NODE)[0].endpoints.map((e) => e.port), [8080, 9090]);
  });
});

describe('endpoint conditions (EndpointSliceCache.addEndpoints, topology.go CategorizeEndpoints)', () => {
  test('absent ready and serving mean true, absent terminating false', () => {
    const s = slice(sliceJson({ endpoints: [{ addresses: ['198.18.1.1'] }, { addresses: ['198.18.1.2'], conditions: { ready: false, terminating: true } }] }));
    assert.deepEqual(
      s.endpoints.map((e) => [e.ready, e.serving, e.terminating]),
      [
        [true, true, false],
        [false, true, true],
      ],
    );
  });

  test('serving-terminating endpoints only when none is ready, for Cluster and Local separately', () => {
    const svc = service(svcJson({ type: 'NodePort', externalTrafficPolicy: 'Local', ports: [{ name: 'http', port: 80, nodePort: 30080 }] }));
    const s = slice(
      sliceJson({
        endpoints: [
          endpoint('198.18.1.1', { nodeName: 'node-2' }),
          endpoint('198.18.1.2', { nodeName: NODE, conditions: { ready: false, serving: true, terminating: true } }),
          endpoint('198.18.1.3', { nodeName: NODE, conditions: { ready: false, serving: false, terminating: true } }),
        ],
      }),
    );
    const [view] = servicePortViews(svc, [s], NODE);
    const cat = categorizeEndpoints(view.endpoints, { internalLocal: false, externalLocal: true, externallyAccessible: true }, NODE, undefined);
    assert.deepEqual(
      cat.cluster.map((e) => e.ip),
      ['198.18.1.1'],
      'a ready remote endpoint: no fallback for Cluster',
    );
    assert.deepEqual(
      cat.local.map((e) => e.ip),
      ['198.18.1.2'],
      'no ready local endpoint: the serving-terminating local one',
    );
    assert.deepEqual(cat.reachable.map((e) => e.ip).sort(), ['198.18.1.1', '198.18.1.2']);
  });

  test('publishNotReadyAddresses is not read: the EndpointSlice controller already marks such endpoints ready', () => {
    const plain = service(svcJson({}));
    assert.deepEqual(service(svcJson({ publishNotReadyAddresses: true })), plain);
    const s = slice(sliceJson({ endpoints: [endpoint('198.18.1.1', { conditions: { ready: false } })] }));
    assert.deepEqual(verdictOf(render(plain, [s]), N.noEndpointServices('v4'), tripleKey('198.19.0.10', 'TCP', 80)), { kind: 'goto', chain: N.reject });
  });
});

describe('ports (EndpointSliceCache.endpointInfoByServicePort, ServiceChangeTracker)', () => {
  test('service port -> slice port by name and protocol; an absent name is "" (API default)', () => {
    const svc = service(svcJson({ ports: [{ port: 53, protocol: 'UDP' }] }));
    const tcp = slice(sliceJson({ ports: [{ port: 5353, protocol: 'TCP' }], endpoints: [endpoint('198.18.1.1')] }));
    assert.deepEqual(servicePortViews(svc, [tcp], NODE)[0].endpoints, [], 'protocol must match');
    const udp = slice(sliceJson({ ports: [{ port: 5353, protocol: 'UDP' }], endpoints: [endpoint('198.18.1.1')] }));
    assert.deepEqual(
      servicePortViews(svc, [udp], NODE)[0].endpoints.map((e) => `${e.ip}:${e.port}`),
      ['198.18.1.1:5353'],
    );
    const named = slice(sliceJson({ ports: [{ name: 'dns', port: 5353, protocol: 'UDP' }], endpoints: [endpoint('198.18.1.1')] }));
    assert.deepEqual(servicePortViews(svc, [named], NODE)[0].endpoints, [], 'a named slice port is not the unnamed service port');
  });

  test('slice ports without a number, or 0, are ignored; every slice port of the name contributes', () => {
    const svc = service(svcJson({}));
    const { object: s, problems } = norm(normalizeEndpointSlice, sliceJson({ ports: [{ name: 'http' }, { name: 'http', port: 0 }], endpoints: [endpoint('198.18.1.1')] }));
    assert.deepEqual(problems, []);
    assert.deepEqual(servicePortViews(svc, [s], NODE)[0].endpoints, []);
    const two = slice(sliceJson({ ports: [{ name: 'http', port: 8080 }, { name: 'http', port: 8081 }], endpoints: [endpoint('198.18.1.1')] }));
    assert.deepEqual(
      servicePortViews(svc, [two], NODE)[0].endpoints.map((e) => e.port),
      [8080, 8081],
    );
  });

  test('nodePort and healthCheckNodePort 0 or absent mean none (allocateLoadBalancerNodePorts: false)', () => {
    const lb = service(
      svcJson(
        { type: 'LoadBalancer', allocateLoadBalancerNodePorts: false, externalTrafficPolicy: 'Local', healthCheckNodePort: 0, ports: [{ name: 'http', port: 80, nodePort: 0 }, { name: 'b', port: 81 }] },
        {},
        { loadBalancer: { ingress: [{ ip: '198.18.201.1' }] } },
      ),
    );
    assert.deepEqual(
      lb.ports.map((p) => p.nodePort),
      [undefined, undefined],
    );
    assert.equal(lb.healthCheckNodePort, undefined);
    const s = slice(sliceJson({ endpoints: [endpoint('198.18.1.1', { nodeName: NODE })] }));
    const cs = render(lb, [s]);
    assert.deepEqual(verdictOf(cs, N.serviceIPs('v4'), tripleKey('198.18.201.1', 'TCP', 80)), { kind: 'goto', chain: 'external-v4-x/web/tcp/http' }, 'the LB IP still works');
    for (const c of cs) for (const [m] of c.elements) assert.notEqual(m, N.serviceNodePorts('v4'), 'no node port');
  });

  test('what the API defaults is defaulted here too: targetPort 0 or "" is port, empty type, protocol and policies', () => {
    const svc = service(svcJson({ type: '', sessionAffinity: '', externalTrafficPolicy: '', internalTrafficPolicy: '', ports: [{ name: 'a', port: 80, targetPort: 0, protocol: '' }, { name: 'b', port: 81, targetPort: '' }] }));
    assert.deepEqual(
      svc.ports.map((p) => [p.protocol, p.targetPort]),
      [
        ['TCP', 80],
        ['TCP', 81],
      ],
    );
    assert.deepEqual([svc.type, svc.sessionAffinity, svc.externalTrafficPolicy, svc.internalTrafficPolicy], ['ClusterIP', 'None', 'Cluster', 'Cluster']);
  });

  test('healthCheckNodePort only for LoadBalancer with externalTrafficPolicy Local (apiservice.NeedsHealthCheck)', () => {
    const hc = (spec: Json) => service(svcJson({ healthCheckNodePort: 32000, ports: [{ name: 'http', port: 80, nodePort: 30080 }], ...spec })).healthCheckNodePort;
    assert.equal(hc({ type: 'LoadBalancer', externalTrafficPolicy: 'Local' }), 32000);
    assert.equal(hc({ type: 'LoadBalancer', externalTrafficPolicy: 'Cluster' }), undefined);
    assert.equal(hc({ type: 'NodePort', externalTrafficPolicy: 'Local' }), undefined);
  });

  test('the health check counts distinct ready local endpoints that some service port uses, per family (EndpointsMap.LocalReadyEndpoints)', () => {
    const svc = service(
      svcJson({ type: 'LoadBalancer', externalTrafficPolicy: 'Local', healthCheckNodePort: 32000, clusterIPs: ['198.19.0.10', '2001:db8:f::a'], ports: [{ name: 'http', port: 80, nodePort: 30080 }] }),
    );
    const used = slice(sliceJson({ endpoints: [endpoint('198.18.1.1', { nodeName: NODE }), endpoint('198.18.1.2', { nodeName: NODE, conditions: { ready: false } })] }, 'web-a'));
    const unused = slice(sliceJson({ ports: [{ name: 'other', port: 9 }], endpoints: [endpoint('198.18.1.9', { nodeName: NODE })] }, 'web-b'));
    const v6 = slice({ ...sliceJson({ endpoints: [endpoint('2001:db8:1::1', { nodeName: NODE })] }, 'web-c'), addressType: 'IPv6' });
    const proxy = new ProxyComponent({ nodeName: NODE, clusterCIDRs: ['198.18.0.0/16'] });
    proxy.start({
      pods: new Map(),
      namespaces: new Map(),
      policies: new Map(),
      services: new Map([['x/web', svc]]),
      endpointSlices: new Map([
        ['x/web-a', used],
        ['x/web-b', unused],
        ['x/web-c', v6],
      ]),
      nodes: new Map(),
    });
    assert.deepEqual(proxy.healthChecks(), [{ service: 'x/web', port: 32000, localEndpoints: 1 }]);
  });
});

test('the health-check answer carries kube-proxy\'s status, JSON and endpoint-weight header (healthcheck/service_health.go)', async () => {
  const server = new HealthCheckServer({ host: '127.0.0.1' });
  const port = await new Promise<number>((resolve) => {
    const probe = createServer().listen(0, '127.0.0.1', () => {
      const p = (probe.address() as { port: number }).port;
      probe.close(() => resolve(p));
    });
  });
  try {
    await server.sync([{ service: 'x/web', port, localEndpoints: 2 }]);
    const up = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(up.status, 200);
    assert.equal(up.headers.get('x-load-balancing-endpoint-weight'), '2');
    assert.deepEqual(await up.json(), { service: { namespace: 'x', name: 'web' }, localEndpoints: 2, serviceProxyHealthy: true });
    await server.sync([{ service: 'x/web', port, localEndpoints: 0 }]);
    const down = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(down.status, 503);
    assert.equal(down.headers.get('x-load-balancing-endpoint-weight'), '0');
    await down.body?.cancel();
  } finally {
    await server.close();
  }
});

describe('traffic policies (apiservice.ExternalPolicyLocal, syncProxyRules)', () => {
  const remoteOnly = () => slice(sliceJson({ endpoints: [endpoint('198.18.1.1', { nodeName: 'node-2' })] }));

  test('externalTrafficPolicy Local is kept for ClusterIP with externalIPs and applies to external traffic only', () => {
    assert.equal(service(svcJson({ externalTrafficPolicy: 'Local' })).externalTrafficPolicy, 'Cluster', 'no external access: no external policy');
    const svc = service(svcJson({ externalTrafficPolicy: 'Local', externalIPs: ['198.18.200.1'] }));
    assert.equal(svc.externalTrafficPolicy, 'Local');
    const cs = render(svc, [remoteOnly()]);
    assert.deepEqual(verdictOf(cs, N.serviceIPs('v4'), tripleKey('198.19.0.10', 'TCP', 80)), { kind: 'goto', chain: 'service-v4-x/web/tcp/http' }, 'the cluster IP is not Local');
    assert.deepEqual(verdictOf(cs, N.noEndpointServices('v4'), tripleKey('198.18.200.1', 'TCP', 80)), { kind: 'goto', chain: N.noLocalEndpoints }, 'no local endpoint: external traffic dropped unless the node sent it');
    assert.deepEqual(verdictOf(cs, N.serviceIPs('v4'), tripleKey('198.18.200.1', 'TCP', 80)), { kind: 'goto', chain: 'external-v4-x/web/tcp/http' }, 'pods and the node short-circuit');
  });

  test('NodePort with externalTrafficPolicy Local: node port dropped without local endpoints, cluster IP served', () => {
    const svc = service(svcJson({ type: 'NodePort', externalTrafficPolicy: 'Local', ports: [{ name: 'http', port: 80, nodePort: 30080 }] }));
    const cs = render(svc, [remoteOnly()]);
    assert.deepEqual(verdictOf(cs, N.noEndpointNodePorts('v4'), protoPortKey('TCP', 30080)), { kind: 'goto', chain: N.noLocalEndpoints });
    assert.deepEqual(verdictOf(cs, N.serviceIPs('v4'), tripleKey('198.19.0.10', 'TCP', 80)), { kind: 'goto', chain: 'service-v4-x/web/tcp/http' });
  });

  test('internalTrafficPolicy Local: drop without local endpoints, reject without any', () => {
    const svc = service(svcJson({ internalTrafficPolicy: 'Local' }));
    assert.deepEqual(verdictOf(render(svc, [remoteOnly()]), N.noEndpointServices('v4'), tripleKey('198.19.0.10', 'TCP', 80)), { kind: 'drop' });
    assert.deepEqual(verdictOf(render(svc, []), N.noEndpointServices('v4'), tripleKey('198.19.0.10', 'TCP', 80)), { kind: 'goto', chain: N.reject });
    const local = slice(sliceJson({ endpoints: [endpoint('198.18.1.1', { nodeName: NODE })] }));
    assert.deepEqual(verdictOf(render(svc, [local]), N.serviceIPs('v4'), tripleKey('198.19.0.10', 'TCP', 80)), { kind: 'goto', chain: 'local-v4-x/web/tcp/http' });
  });

  test('zone hints from the slice and zone from the Node label; the topology-mode annotation is not consulted (topologyModeFromHints)', () => {
    const node = normalizeNode({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE, labels: { 'topology.kubernetes.io/zone': 'a' } } });
    const hinted = slice(
      sliceJson({
        endpoints: [
          endpoint('198.18.1.1', { zone: 'a', hints: { forZones: [{ name: 'a' }] } }),
          endpoint('198.18.1.2', { zone: 'b', hints: { forZones: [{ name: 'b' }] } }),
        ],
      }),
    );
    const p = { internalLocal: false, externalLocal: false, externallyAccessible: false };
    // Nor is trafficDistribution: the EndpointSlice controller turns both into hints.
    for (const [annotations, spec] of [
      [{}, {}],
      [{ 'service.kubernetes.io/topology-mode': 'Auto' }, {}],
      [{ 'service.kubernetes.io/topology-mode': 'Disabled' }, {}],
      [{}, { trafficDistribution: 'PreferClose' }],
    ]) {
      const svc = service(svcJson(spec, { annotations }));
      const [view] = servicePortViews(svc, [hinted], NODE);
      assert.deepEqual(
        categorizeEndpoints(view.endpoints, p, NODE, node.zone).cluster.map((e) => e.ip),
        ['198.18.1.1'],
        JSON.stringify(annotations),
      );
    }
    const partly = slice(sliceJson({ endpoints: [endpoint('198.18.1.1', { hints: { forZones: [{ name: 'a' }] } }), endpoint('198.18.1.2')] }));
    const [view] = servicePortViews(service(svcJson({})), [partly], NODE);
    assert.equal(categorizeEndpoints(view.endpoints, p, NODE, 'a').cluster.length, 2, 'one ready endpoint without a hint: hints ignored');
  });
});

describe('load balancers (ServiceChangeTracker.newBaseServiceInfo, proxyutil.IsVIPMode)', () => {
  const lb = (ingress: Json[], spec: Json = {}) =>
    norm(normalizeService, svcJson({ type: 'LoadBalancer', ports: [{ name: 'http', port: 80, nodePort: 30080 }], ...spec }, {}, { loadBalancer: { ingress } }));

  test('only ingress IPs without ipMode or with ipMode VIP are programmed', () => {
    const { object } = lb([{ ip: '198.18.201.1' }, { ip: '198.18.201.2', ipMode: 'VIP' }, { ip: '198.18.201.3', ipMode: 'Proxy' }, { ip: '198.18.201.4', ipMode: 'Router' }, { hostname: 'lb.example' }]);
    assert.deepEqual(object.loadBalancerIPs, ['198.18.201.1', '198.18.201.2']);
  });

  test('source ranges are trimmed; one that is not a CIDR is left out, named; none valid fails the service', () => {
    const { object, problems } = lb([{ ip: '198.18.201.1' }], { loadBalancerSourceRanges: [' 198.18.100.0/24 ', 'nope', '2001:db8::/32'] });
    assert.deepEqual(object.loadBalancerSourceRanges, ['198.18.100.0/24', '2001:db8::/32']);
    assert.deepEqual(
      problems.map((p) => [p.object, p.field]),
      [['Service x/web', 'spec.loadBalancerSourceRanges[1]']],
    );
    // The firewall still applies with the valid ranges.
    const s = slice(sliceJson({ endpoints: [endpoint('198.18.1.1')] }));
    assert.deepEqual(verdictOf(render(object, [s]), N.firewallIPs('v4'), tripleKey('198.18.201.1', 'TCP', 80)), { kind: 'goto', chain: 'firewall-v4-x/web/tcp/http' });
    throwsField(() => lb([{ ip: '198.18.201.1' }], { loadBalancerSourceRanges: ['nope', ' '] }), 'spec.loadBalancerSourceRanges[0]');
  });
});

describe('CIDRs (netutils.ParseCIDRSloppy)', () => {
  const lbRanges = (ranges: string[]) => norm(normalizeService, svcJson({ type: 'LoadBalancer', ports: [{ name: 'http', port: 80, nodePort: 30080 }], loadBalancerSourceRanges: ranges }, {}, { loadBalancer: { ingress: [{ ip: '198.18.201.1' }] } })).object.loadBalancerSourceRanges;

  test('leading zeros in IPv4 octets and in the prefix read as decimal; host bits are cleared', () => {
    assert.deepEqual(lbRanges(['198.018.100.000/024', '198.18.101.7/24', '2001:db8::1/032']), ['198.18.100.0/24', '198.18.101.0/24', '2001:db8::/32']);
  });

  test('an IPv4-mapped IPv6 network is the IPv4 network; a shorter prefix stays IPv6', () => {
    assert.deepEqual(lbRanges(['::ffff:198.18.0.0/112', '::ffff:0:0/80']), ['198.18.0.0/16', '::/80']);
  });

  test('what ParseCIDRSloppy refuses is left out, named', () => {
    const { problems } = norm(normalizeService, svcJson({ type: 'LoadBalancer', ports: [{ name: 'http', port: 80, nodePort: 30080 }], loadBalancerSourceRanges: ['198.18.0.0/33', '198.18.0.0/', '198.18.0.0/-1', '1.2.3.4.5/8', '198.18.0.0/16'] }, {}, { loadBalancer: { ingress: [{ ip: '198.18.201.1' }] } }));
    assert.deepEqual(problems.map((p) => p.field), [0, 1, 2, 3].map((i) => `spec.loadBalancerSourceRanges[${i}]`));
  });
});

describe('session affinity (apiserver defaults and validation)', () => {
  test('ClientIP defaults to 10800 s and accepts up to 86400; beyond, or 0, fails the service', () => {
    const affinity = (cfg?: Json) => service(svcJson({ sessionAffinity: 'ClientIP', ...(cfg ? { sessionAffinityConfig: cfg } : {}) })).affinityTimeoutSeconds;
    assert.equal(affinity(), 10800);
    assert.equal(affinity({ clientIP: {} }), 10800);
    assert.equal(affinity({ clientIP: { timeoutSeconds: 86400 } }), 86400);
    throwsField(() => affinity({ clientIP: { timeoutSeconds: 86401 } }), 'spec.sessionAffinityConfig.clientIP.timeoutSeconds');
    throwsField(() => affinity({ clientIP: { timeoutSeconds: 0 } }), 'spec.sessionAffinityConfig.clientIP.timeoutSeconds');
    assert.equal(service(svcJson({ sessionAffinity: 'None', sessionAffinityConfig: { clientIP: { timeoutSeconds: 5 } } })).affinityTimeoutSeconds, undefined);
  });
});

describe('dual-stack (proxyutil.GetClusterIPByFamily, MapIPsByIPFamily)', () => {
  test('each family of clusterIPs, in any order, with only its own externalIPs, LB IPs and source ranges', () => {
    const svc = service(
      svcJson(
        {
          type: 'LoadBalancer',
          clusterIP: '2001:db8:f::a',
          clusterIPs: ['2001:db8:f::a', '198.19.0.10'],
          ipFamilies: ['IPv6', 'IPv4'],
          externalIPs: ['198.18.200.1', '2001:db8:c8::1'],
          loadBalancerSourceRanges: ['198.18.100.0/24'],
          ports: [{ name: 'http', port: 80, nodePort: 30080 }],
        },
        {},
        { loadBalancer: { ingress: [{ ip: '2001:db8:c9::1' }, { ip: '198.18.201.1' }] } },
      ),
    );
    const views = servicePortViews(svc, [], NODE);
    assert.deepEqual(
      views.map((v) => [v.fam, v.clusterIP, v.externalIPs, v.loadBalancerIPs, v.sourceRanges]),
      [
        ['v6', '2001:db8:f::a', ['2001:db8:c8::1'], ['2001:db8:c9::1'], []],
        ['v4', '198.19.0.10', ['198.18.200.1'], ['198.18.201.1'], ['198.18.100.0/24']],
      ],
    );
  });

  test('a cluster IP of a family ipFamilies does not list is not served; none listed fails the service', () => {
    const svc = service(svcJson({ clusterIPs: ['198.19.0.10', '2001:db8:f::a'], ipFamilies: ['IPv6'] }));
    assert.deepEqual(svc.clusterIPs, ['2001:db8:f::a']);
    assert.deepEqual(service(svcJson({ clusterIPs: ['198.19.0.10', '2001:db8:f::a'] })).clusterIPs, ['198.19.0.10', '2001:db8:f::a'], 'no ipFamilies: every cluster IP');
    throwsField(() => service(svcJson({ clusterIPs: ['198.19.0.10'], ipFamilies: ['IPv6'] })), 'spec.ipFamilies');
    assert.equal(service(svcJson({ clusterIP: 'None', ipFamilies: ['IPv4'] })).headless, true);
  });

  test('a single-stack IPv6 service has only IPv6 views; IPv4 slices of it are not its endpoints', () => {
    const svc = service(svcJson({ clusterIP: '2001:db8:f::a', ipFamilies: ['IPv6'], externalIPs: ['198.18.200.1'] }));
    const v4 = slice(sliceJson({ endpoints: [endpoint('198.18.1.1')] }));
    const v6 = slice({ ...sliceJson({ endpoints: [endpoint('2001:db8:1::1')] }, 'web-6'), addressType: 'IPv6' });
    const views = servicePortViews(svc, [v4, v6], NODE);
    assert.deepEqual(
      views.map((v) => [v.fam, v.externalIPs, v.endpoints.map((e) => e.ip)]),
      [['v6', [], ['2001:db8:1::1']]],
    );
  });
});

describe('hostile input: skipped with a named problem, the rest programmed; never a crash', () => {
  test('invalid clusterIPs, externalIPs and LB IPs are left out and named; a service with no cluster IP left fails', () => {
    const { object, problems } = norm(
      normalizeService,
      svcJson(
        { type: 'LoadBalancer', clusterIPs: ['198.19.0.10', 'fd00::zz'], externalIPs: ['198.18.200.1', '999.1.1.1', 7], ports: [{ name: 'http', port: 80, nodePort: 30080 }] },
        {},
        { loadBalancer: { ingress: [{ ip: 'nope' }, { ip: '198.18.201.1' }] } },
      ),
    );
    assert.deepEqual(object.clusterIPs, ['198.19.0.10']);
    assert.deepEqual(object.externalIPs, ['198.18.200.1']);
    assert.deepEqual(object.loadBalancerIPs, ['198.18.201.1']);
    assert.deepEqual(
      problems.map((p) => p.field),
      ['spec.clusterIPs[1]', 'spec.externalIPs[1]', 'spec.externalIPs[2]', 'status.loadBalancer.ingress[0].ip'],
    );
    for (const p of problems) assert.equal(p.object, 'Service x/web');
    throwsField(() => norm(normalizeService, svcJson({ clusterIP: 'bogus' })), 'spec.clusterIP');
    throwsField(() => norm(normalizeService, svcJson({ clusterIPs: ['bogus', '::zz'] })), 'spec.clusterIPs[0]');
  });

  test('endpoints with no, invalid or other-family addresses, or unreadable conditions, are left out and named', () => {
    const { object, problems } = norm(
      normalizeEndpointSlice,
      sliceJson({
        ports: [{ name: 'http', port: 8080 }, { name: 'bad', port: -1 }, { name: 'big', port: 70000 }],
        endpoints: [
          { addresses: [] },
          { addresses: ['198.18.1.300'] },
          { addresses: ['2001:db8::1'] },
          { addresses: ['198.18.1.4'], conditions: { ready: 'yes' } },
          { addresses: ['198.18.1.5'] },
          'not an object',
        ],
      }),
    );
    assert.deepEqual(
      object.endpoints.map((e) => e.address),
      ['198.18.1.5'],
    );
    assert.deepEqual(
      object.ports.map((p) => p.port),
      [8080],
    );
    assert.deepEqual(
      problems.map((p) => p.field),
      ['ports[1].port', 'ports[2].port', 'endpoints[0].addresses', 'endpoints[1].addresses[0]', 'endpoints[2].addresses[0]', 'endpoints[3].conditions.ready', 'endpoints[5]'],
    );
    for (const p of problems) assert.equal(p.object, 'EndpointSlice x/web-a');
  });

  test('a Node address or pod CIDR that cannot be read is left out, named; the rest of the Node applies', () => {
    const { object, problems } = norm(normalizeNode, {
      apiVersion: 'v1',
      kind: 'Node',
      metadata: { name: NODE, labels: { 'topology.kubernetes.io/zone': 'a' } },
      spec: { podCIDRs: ['198.18.1.0/24', '198.18.0.0/33', 5] },
      status: { addresses: [{ type: 'InternalIP', address: 'nope' }, { type: 'InternalIP', address: '198.18.0.1' }, { type: 'Hostname', address: NODE }] },
    });
    assert.deepEqual(object, { name: NODE, zone: 'a', labels: { 'topology.kubernetes.io/zone': 'a' }, addresses: [{ type: 'InternalIP', address: '198.18.0.1' }], podCIDRs: ['198.18.1.0/24'] });
    assert.deepEqual(
      problems.map((p) => [p.object, p.field]),
      [
        ['Node node-1', 'status.addresses[0].address'],
        ['Node node-1', 'spec.podCIDRs[1]'],
        ['Node node-1', 'spec.podCIDRs[2]'],
      ],
    );
  });

  test('addresses are read as ParseIPSloppy reads them: leading zeros are decimal, IPv4-mapped IPv6 is IPv4', () => {
    const svc = service(svcJson({ clusterIP: '198.019.000.010', externalIPs: ['::ffff:198.18.200.1', '2001:DB8::1'] }));
    assert.deepEqual(svc.clusterIPs, ['198.19.0.10']);
    assert.deepEqual(svc.externalIPs, ['198.18.200.1', '2001:db8::1']);
    const s = slice(sliceJson({ endpoints: [{ addresses: ['::ffff:198.18.1.1'] }, { addresses: ['198.18.001.002'] }] }));
    assert.deepEqual(
      s.endpoints.map((e) => e.address),
      ['198.18.1.1', '198.18.1.2'],
    );
    throwsField(() => service(svcJson({ clusterIP: '198.18.1.256' })), 'spec.clusterIP');
  });

  test('negative, overflowing and non-integer service ports, and non-string fields, fail the service naming the field', () => {
    throwsField(() => service(svcJson({ ports: [{ name: 'http', port: -80 }] })), 'spec.ports[0].port');
    throwsField(() => service(svcJson({ ports: [{ name: 'http', port: 65536 }] })), 'spec.ports[0].port');
    throwsField(() => service(svcJson({ ports: [{ name: 'http', port: '80' }] })), 'spec.ports[0].port');
    throwsField(() => service(svcJson({ type: 'NodePort', ports: [{ name: 'http', port: 80, nodePort: -1 }] })), 'spec.ports[0].nodePort');
    throwsField(() => service(svcJson({ ports: 'http' })), 'spec.ports');
    throwsField(() => service(svcJson({ type: 7 })), 'spec.type');
    throwsField(() => service(svcJson({ externalIPs: '198.18.200.1' })), 'spec.externalIPs');
    throwsField(() => service(svcJson({ ports: [{ name: 'http', port: 80, protocol: 'ICMP' }] })), 'spec.ports[0].protocol');
  });

  test('names the API would refuse fail the service; the longest it allows still make kernel-sized chain names', () => {
    throwsField(() => service(svcJson({}, { name: 'Web' })), 'metadata.name');
    throwsField(() => service(svcJson({}, { name: 'w'.repeat(64) })), 'metadata.name');
    throwsField(() => service(svcJson({}, { namespace: 'x_y' })), 'metadata.namespace');
    throwsField(() => service(svcJson({ ports: [{ name: 'p'.repeat(250), port: 80 }] })), 'spec.ports[0].name');
    const longest = service(
      svcJson({ clusterIP: '2001:db8:f::a', sessionAffinity: 'ClientIP', ports: [{ name: 'p'.repeat(63), port: 80, protocol: 'SCTP' }] }, { namespace: 'n'.repeat(63), name: 's'.repeat(63) }),
    );
    const s = slice({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { namespace: 'n'.repeat(63), name: 'e', labels: { 'kubernetes.io/service-name': 's'.repeat(63) } },
      addressType: 'IPv6',
      ports: [{ name: 'p'.repeat(63), port: 65535, protocol: 'SCTP' }],
      endpoints: [{ addresses: ['ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe'] }],
    });
    const cs = render(longest, [s]);
    const names = cs.flatMap((c) => [...c.chains.map((ch) => ch.chain.name), ...c.sets.map((st) => st.set.name)]);
    assert.ok(names.some((n) => n.startsWith('endpoint-v6-')));
    for (const n of names) assert.ok(n.length <= 255, `${n.length}: ${n}`);
  });

  test('a service with thousands of ports normalizes and renders every one', () => {
    const ports = Array.from({ length: 3000 }, (_, i) => ({ name: `p${i}`, port: 1000 + i }));
    const svc = service(svcJson({ ports }));
    assert.equal(svc.ports.length, 3000);
    assert.equal(servicePortViews(svc, [], NODE).length, 3000);
  });

  test('random mutations of a valid Service and EndpointSlice only ever throw named errors', () => {
    let seed = 42;
    const rand = () => ((seed = (seed * 1103515245 + 12345) & 0x7fffffff) / 0x80000000);
    const values: unknown[] = [null, 0, -1, 65536, 1.5, '', 'None', ' x ', '198.18.1.1', '::', [], {}, [1], ['a'], true, { name: 1 }, 2 ** 53, 'VIP'];
    const baseSvc = svcJson(
      {
        type: 'LoadBalancer',
        clusterIPs: ['198.19.0.10', '2001:db8:f::a'],
        externalIPs: ['198.18.200.1'],
        externalTrafficPolicy: 'Local',
        healthCheckNodePort: 32000,
        sessionAffinity: 'ClientIP',
        sessionAffinityConfig: { clientIP: { timeoutSeconds: 60 } },
        loadBalancerSourceRanges: ['198.18.100.0/24'],
        ports: [{ name: 'http', port: 80, targetPort: 'web', nodePort: 30080, protocol: 'TCP' }],
      },
      { labels: { a: 'b' }, annotations: { c: 'd' } },
      { loadBalancer: { ingress: [{ ip: '198.18.201.1', ipMode: 'VIP' }] } },
    );
    const baseSlice = sliceJson({ endpoints: [{ addresses: ['198.18.1.1'], conditions: { ready: true }, nodeName: NODE, zone: 'a', hints: { forZones: [{ name: 'a' }], forNodes: [{ name: NODE }] } }] });
    const paths = (o: unknown, at: (string | number)[] = []): (string | number)[][] => {
      if (o === null || typeof o !== 'object') return [at];
      const keys: (string | number)[] = Array.isArray(o) ? o.map((_, i) => i) : Object.keys(o);
      return [at, ...keys.flatMap((k) => paths((o as Json)[k], [...at, k]))];
    };
    for (const [base, fn] of [
      [baseSvc, normalizeService],
      [baseSlice, normalizeEndpointSlice],
    ] as const) {
      const all = paths(base).filter((p) => p.length > 0 && p[0] !== 'metadata');
      for (let i = 0; i < 400; i++) {
        const copy = structuredClone(base);
        const path = all[Math.floor(rand() * all.length)];
        let at: Json = copy;
        for (const k of path.slice(0, -1)) at = at[k];
        at[path[path.length - 1]] = values[Math.floor(rand() * values.length)];
        try {
          const out = norm(fn as (raw: unknown, o: { onProblem: (e: K8sObjectError) => void }) => unknown, copy).object;
          if ((out as ServiceInfo).clusterIPs) servicePortViews(out as ServiceInfo, [], NODE).forEach((v) => renderer.servicePort(v, env()));
        } catch (err) {
          assert.ok(err instanceof K8sObjectError, `${path.join('.')}: ${String(err)}`);
        }
      }
    }
  });
});
