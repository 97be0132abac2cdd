/** Endpoint selection as kube-proxy's CategorizeEndpoints (pkg/proxy/topology.go) decides it:
 * ready endpoints, topology hints (same node, then same zone) only when every ready endpoint has
 * one and one fits, serving-and-terminating fallback, Local policies' node-local subset. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { categorizeEndpoints, ProxyEndpoint, TrafficPolicies } from '../../src/proxy/endpoints';

const ep = (ip: string, o: Partial<ProxyEndpoint> = {}): ProxyEndpoint => ({ ip, port: 80, ready: true, serving: true, terminating: false, local: false, ...o });
const cluster: TrafficPolicies = { internalLocal: false, externalLocal: false, externallyAccessible: false };
const ips = (list: ProxyEndpoint[]) => list.map((e) => e.ip).sort();

test('Cluster policy: ready endpoints; hints narrow only when all ready ones have one and one fits', () => {
  const none = categorizeEndpoints([ep('a'), ep('b'), ep('c', { ready: false, serving: false })], cluster, 'n1', 'z1');
  assert.deepEqual(ips(none.cluster), ['a', 'b']);
  assert.equal(none.hasAny, true);
  const zoned = [ep('a', { zoneHints: ['z1'] }), ep('b', { zoneHints: ['z2'] }), ep('c', { zoneHints: ['z1'] })];
  assert.deepEqual(ips(categorizeEndpoints(zoned, cluster, 'n1', 'z1').cluster), ['a', 'c']);
  assert.deepEqual(ips(categorizeEndpoints(zoned, cluster, 'n1', 'z3').cluster), ['a', 'b', 'c'], 'no hint for this zone: all');
  assert.deepEqual(ips(categorizeEndpoints(zoned, cluster, 'n1', undefined).cluster), ['a', 'b', 'c'], 'node without zone: all');
  const partly = [ep('a', { zoneHints: ['z1'] }), ep('b')];
  assert.deepEqual(ips(categorizeEndpoints(partly, cluster, 'n1', 'z1').cluster), ['a', 'b'], 'one ready endpoint without hints: all');
  const notReadyUnhinted = [ep('a', { zoneHints: ['z1'] }), ep('b', { zoneHints: ['z2'] }), ep('x', { ready: false })];
  assert.deepEqual(ips(categorizeEndpoints(notReadyUnhinted, cluster, 'n1', 'z1').cluster), ['a'], 'unready endpoints do not count');
  const noded = [ep('a', { nodeHints: ['n1'], zoneHints: ['z2'] }), ep('b', { nodeHints: ['n2'], zoneHints: ['z1'] })];
  assert.deepEqual(ips(categorizeEndpoints(noded, cluster, 'n1', 'z1').cluster), ['a'], 'PreferSameNode before PreferSameZone');
  assert.deepEqual(ips(categorizeEndpoints(noded, cluster, 'n3', 'z1').cluster), ['b'], 'no node hint for this node: zones');
});

test('no ready endpoint: serving and terminating ones serve; none at all: hasAny false', () => {
  const eps = [ep('a', { ready: false, serving: true, terminating: true }), ep('b', { ready: false, serving: false, terminating: true }), ep('c', { ready: false })];
  const c = categorizeEndpoints(eps, cluster, 'n1', undefined);
  assert.deepEqual(ips(c.cluster), ['a']);
  assert.equal(c.hasAny, true);
  const empty = categorizeEndpoints([ep('b', { ready: false, serving: false, terminating: true })], cluster, 'n1', undefined);
  assert.deepEqual(empty.cluster, []);
  assert.equal(empty.hasAny, false);
});

test('Local policies: node-local subset with its own fallback; cluster endpoints kept for short-circuits', () => {
  const etpLocal: TrafficPolicies = { internalLocal: false, externalLocal: true, externallyAccessible: true };
  const eps = [ep('a', { local: true }), ep('b'), ep('c', { local: true, ready: false, serving: true, terminating: true })];
  const c = categorizeEndpoints(eps, etpLocal, 'n1', undefined);
  assert.deepEqual(ips(c.local), ['a']);
  assert.deepEqual(ips(c.cluster), ['a', 'b']);
  assert.deepEqual(ips(c.reachable), ['a', 'b']);
  const onlyTerminatingLocal = categorizeEndpoints([ep('b'), ep('c', { local: true, ready: false, serving: true, terminating: true })], etpLocal, 'n1', undefined);
  assert.deepEqual(ips(onlyTerminatingLocal.local), ['c']);
  assert.deepEqual(ips(onlyTerminatingLocal.reachable), ['b', 'c'], 'the union when Local fell back to terminating');
  const remoteOnly = categorizeEndpoints([ep('b')], etpLocal, 'n1', undefined);
  assert.deepEqual(remoteOnly.local, []);
  assert.equal(remoteOnly.hasAny, true, 'endpoints elsewhere: drop, not reject');
  const itpOnly: TrafficPolicies = { internalLocal: true, externalLocal: false, externallyAccessible: false };
  const i = categorizeEndpoints([ep('a', { local: true }), ep('b')], itpOnly, 'n1', undefined);
  assert.deepEqual(i.cluster, [], 'ITP Local without external access never uses Cluster endpoints');
  assert.deepEqual(ips(i.reachable), ['a']);
});
