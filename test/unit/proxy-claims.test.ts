/** Who owns a service address or port (claims.ts through the ProxyComponent, no kernel): a
 * ClusterIP belongs to its Service, so another Service listing it as an external or load-balancer
 * IP is refused it (CVE-2020-8554), whichever is older; two Services claiming one cluster IP, one
 * external IP and port, or one node port: the older keeps it, and the later one gets it when the
 * older lets go; --allowed-external-ip-cidrs restricts externalIPs. Each refusal is a warning
 * naming both Services, a metric and a Warning Event, once. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import pino from 'pino';
import { Registry } from 'prom-client';
import type { ServiceInfo } from '../../src/k8s/service-model';
import { ChangeScope } from '../../src/pipeline/scope';
import { ProxyComponent, ProxyOptions, REFUSAL_REASON, ServiceEventSink } from '../../src/proxy/component';
import { ProxyMetrics } from '../../src/proxy/metrics';
import { N, protoPortKey, tripleKey } from '../../src/proxy/render';
import { elementKey } from '../../src/ruleset/model';
import type { Verdict } from '../../src/nft/types';
import { endpoint, node, NODE, port, service, slice, snapshotOf } from '../proxy/fixtures';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const VICTIM_IP = '198.19.0.10';

interface Harness {
  proxy: ProxyComponent;
  logs: { msg: string; service?: string; holder?: string; kind?: string }[];
  events: { namespace: string; name: string; reason: string; message: string }[];
  metrics: ProxyMetrics;
  upsert(svc: ServiceInfo): void;
  remove(svc: ServiceInfo): void;
}

/** A proxy started on `services`, each with a ready local endpoint, as are `later` ones added by
 * upsert. */
function harness(services: ServiceInfo[], opts: Partial<ProxyOptions> = {}, later: ServiceInfo[] = []): Harness {
  const logs: Harness['logs'] = [];
  const events: Harness['events'] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const sink: ServiceEventSink = { warning: (o, reason, message) => events.push({ namespace: o.namespace, name: o.name, reason, message }) };
  const metrics = new ProxyMetrics(new Registry());
  const proxy = new ProxyComponent({ nodeName: NODE, clusterCIDRs: ['198.18.1.0/24'], logger, metrics, events: sink, ...opts });
  const slices = [...services, ...later].map((s, i) => slice(s.namespace, `${s.name}-a`, s.name, { endpoints: [endpoint(`198.18.1.${10 + i}`, NODE)] }));
  proxy.start(snapshotOf(services, slices, [node(NODE, { addresses: [{ type: 'InternalIP', address: '198.18.0.1' }] })]));
  const change = (type: 'upsert' | 'delete', svc: ServiceInfo) => proxy.apply({ kind: 'Service', type, key: `${svc.namespace}/${svc.name}`, object: svc }, new ChangeScope());
  return { proxy, logs, events, metrics, upsert: (s) => change('upsert', s), remove: (s) => change('delete', s) };
}

function verdict(proxy: ProxyComponent, map: string, key: Buffer): Verdict | undefined {
  return proxy.desired.sets.get(map)!.elements.get(elementKey({ key }))?.verdict;
}

const victim = () => service('prod', 'db', { clusterIPs: [VICTIM_IP], createdMs: T0 + 1000 });
const attacker = (over: Partial<ServiceInfo> = {}) => service('attacker', 'steal', { clusterIPs: ['198.19.0.66'], externalIPs: [VICTIM_IP], createdMs: T0, ...over });

async function refusedCount(m: ProxyMetrics, kind: string): Promise<number> {
  return (await m.refused.get()).values.find((v) => v.labels.kind === kind)?.value ?? 0;
}

describe('service claims (issue 23 item 6)', () => {
  test("an externalIP that is another Service's ClusterIP is refused, even from an older Service; reported once", async () => {
    const h = harness([victim(), attacker()]);
    assert.deepEqual(verdict(h.proxy, N.serviceIPs('v4'), tripleKey(VICTIM_IP, 'TCP', 80)), { kind: 'goto', chain: 'service-v4-prod/db/tcp/http' });
    const warn = h.logs.filter((l) => l.service === 'attacker/steal');
    assert.equal(warn.length, 1);
    assert.equal(warn[0].holder, 'prod/db');
    assert.match(warn[0].msg, /attacker\/steal.*198\.19\.0\.10.*prod\/db/);
    assert.equal(await refusedCount(h.metrics, 'external-ip'), 1);
    assert.deepEqual(h.events.map((e) => [e.namespace, e.name, e.reason]), [['attacker', 'steal', REFUSAL_REASON]]);
    assert.match(h.events[0].message, /prod\/db/);
    // A re-render of the attacker (an unrelated change) reports nothing new.
    h.upsert(attacker({ ports: [port('http', 'TCP', 80), port('https', 'TCP', 443)] }));
    assert.equal(h.events.length, 1);
    assert.deepEqual(verdict(h.proxy, N.serviceIPs('v4'), tripleKey(VICTIM_IP, 'TCP', 443)), undefined, 'no port of the victim IP goes to the attacker');
  });

  test('a load-balancer ingress IP equal to a ClusterIP is refused; the ClusterIP arriving later takes it from the load balancer', () => {
    const lb = service('attacker', 'lb', { type: 'LoadBalancer', clusterIPs: ['198.19.0.67'], loadBalancerIPs: [VICTIM_IP], createdMs: T0 });
    const h = harness([lb], {}, [victim()]);
    assert.deepEqual(verdict(h.proxy, N.serviceIPs('v4'), tripleKey(VICTIM_IP, 'TCP', 80)), { kind: 'goto', chain: 'external-v4-attacker/lb/tcp/http' }, 'no conflict yet');
    h.upsert(victim());
    assert.deepEqual(verdict(h.proxy, N.serviceIPs('v4'), tripleKey(VICTIM_IP, 'TCP', 80)), { kind: 'goto', chain: 'service-v4-prod/db/tcp/http' });
    assert.deepEqual(h.events.map((e) => e.name), ['lb']);
  });

  test('two Services with one ClusterIP: the older keeps it; when it goes, the other gets it', () => {
    const older = service('a', 'first', { clusterIPs: [VICTIM_IP], createdMs: T0 });
    const later = service('b', 'second', { clusterIPs: [VICTIM_IP], createdMs: T0 + 1 });
    const h = harness([later, older]);
    assert.deepEqual(verdict(h.proxy, N.serviceIPs('v4'), tripleKey(VICTIM_IP, 'TCP', 80)), { kind: 'goto', chain: 'service-v4-a/first/tcp/http' });
    assert.deepEqual(h.events.map((e) => e.name), ['second']);
    h.remove(older);
    assert.deepEqual(verdict(h.proxy, N.serviceIPs('v4'), tripleKey(VICTIM_IP, 'TCP', 80)), { kind: 'goto', chain: 'service-v4-b/second/tcp/http' });
  });

  test('two Services with one nodePort: the older keeps it; equal timestamps: namespace/name decides', () => {
    const np = (ns: string, name: string, ip: string, createdMs: number) => service(ns, name, { type: 'NodePort', clusterIPs: [ip], ports: [port('http', 'TCP', 80, { nodePort: 30080 })], createdMs });
    const h = harness([np('z', 'old', '198.19.0.20', T0), np('a', 'new', '198.19.0.21', T0 + 5)]);
    assert.deepEqual(verdict(h.proxy, N.serviceNodePorts('v4'), protoPortKey('TCP', 30080)), { kind: 'goto', chain: 'external-v4-z/old/tcp/http' });
    const tie = harness([np('b', 'two', '198.19.0.20', T0), np('a', 'one', '198.19.0.21', T0)]);
    assert.deepEqual(verdict(tie.proxy, N.serviceNodePorts('v4'), protoPortKey('TCP', 30080)), { kind: 'goto', chain: 'external-v4-a/one/tcp/http' });
    assert.equal(tie.logs.filter((l) => l.kind === 'node-port').length, 1);
  });

  test('one external IP and port in two Services: the older keeps it, other ports stay shared', () => {
    const a = service('a', 'one', { clusterIPs: ['198.19.0.30'], externalIPs: ['198.18.200.9'], createdMs: T0 });
    const b = service('b', 'two', { clusterIPs: ['198.19.0.31'], externalIPs: ['198.18.200.9'], ports: [port('http', 'TCP', 80), port('dns', 'UDP', 53)], createdMs: T0 + 1 });
    const h = harness([a, b]);
    assert.deepEqual(verdict(h.proxy, N.serviceIPs('v4'), tripleKey('198.18.200.9', 'TCP', 80)), { kind: 'goto', chain: 'external-v4-a/one/tcp/http' });
    // The dns port has no endpoint: rejected, and so its own.
    assert.deepEqual(verdict(h.proxy, N.noEndpointServices('v4'), tripleKey('198.18.200.9', 'UDP', 53)), { kind: 'goto', chain: N.reject });
    assert.equal(h.logs.filter((l) => l.service === 'b/two').length, 1);
  });

  test('--allowed-external-ip-cidrs: externalIPs outside are refused; empty allows all', () => {
    const svc = service('a', 'ext', { clusterIPs: ['198.19.0.40'], externalIPs: ['198.18.200.1', '198.18.201.1'] });
    const h = harness([svc], { allowedExternalIPCIDRs: ['198.18.200.0/24'] });
    assert.ok(verdict(h.proxy, N.serviceIPs('v4'), tripleKey('198.18.200.1', 'TCP', 80)));
    assert.equal(verdict(h.proxy, N.serviceIPs('v4'), tripleKey('198.18.201.1', 'TCP', 80)), undefined);
    assert.equal(h.logs.filter((l) => l.kind === 'external-ip-not-allowed').length, 1);
    const all = harness([svc]);
    assert.ok(verdict(all.proxy, N.serviceIPs('v4'), tripleKey('198.18.201.1', 'TCP', 80)));
    assert.throws(() => harness([], { allowedExternalIPCIDRs: ['not-a-cidr'] }), /--allowed-external-ip-cidrs: "not-a-cidr" is not a CIDR/);
  });
});
