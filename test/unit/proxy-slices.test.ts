/** EndpointSlice events as the proxy component indexes them: an update is stored in place (its
 * key is not deleted and added again), a relabelled slice moves to its new service, a label
 * removed or a slice deleted leaves its old service; after each, the incremental model equals a
 * full render of the same objects and the scoped diffs reach it. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { EndpointSliceInfo } from '../../src/k8s/service-model';
import { ChangeScope } from '../../src/pipeline/scope';
import { ProxyComponent } from '../../src/proxy/component';
import { applyDiff, cloneModel, diffRulesets, isEmptyDiff } from '../../src/ruleset/diff';
import { endpoint, node, service, slice, snapshotOf } from '../proxy/fixtures';

const nodes = [node('node-1', { podCIDRs: ['198.18.0.0/16'] })];
const services = [service('x', 'a', { clusterIPs: ['198.19.0.1'] }), service('x', 'b', { clusterIPs: ['198.19.0.2'] })];
const eps = (n: number, base = 1) => Array.from({ length: n }, (_, i) => endpoint(`198.18.1.${base + i}`, i === 0 ? 'node-1' : 'node-2'));
/** Endpoint-map elements in the model: one per endpoint share. */
const shares = (p: ProxyComponent) => [...p.desired.sets.values()].filter((s) => s.set.name.startsWith('endpoint-draws-')).reduce((n, s) => n + s.elements.size, 0);

test('slice updates, relabels and deletes: incremental == full render after each', () => {
  const proxy = new ProxyComponent({ nodeName: 'node-1' });
  const slices = new Map<string, EndpointSliceInfo>([['x/a-1', slice('x', 'a-1', 'a', { endpoints: eps(3) })]]);
  proxy.start(snapshotOf(services, [...slices.values()], nodes));
  const committed = cloneModel(proxy.desired);
  const step = (type: 'upsert' | 'delete', key: string, object: EndpointSliceInfo) => {
    const scope = new ChangeScope();
    proxy.apply({ kind: 'EndpointSlice', type, key, object }, scope);
    if (type === 'upsert') slices.set(key, object);
    else slices.delete(key);
    applyDiff(committed, proxy.desired, diffRulesets(committed, proxy.desired, scope));
    const full = new ProxyComponent({ nodeName: 'node-1' });
    full.start(snapshotOf(services, [...slices.values()], nodes));
    assert.ok(isEmptyDiff(diffRulesets(proxy.desired, full.desired)), `${type} ${key}: incremental == full render`);
    assert.ok(isEmptyDiff(diffRulesets(committed, full.desired)), `${type} ${key}: the scoped diffs reach it`);
    assert.deepEqual(proxy.stats(), full.stats(), `${type} ${key}: the same counts`);
  };
  // The same slice updated again and again (an endpoint flapping), in place.
  for (let i = 0; i < 7; i++) step('upsert', 'x/a-1', slice('x', 'a-1', 'a', { endpoints: eps(i % 2 ? 4 : 3) }));
  assert.equal(proxy.stats().endpoints, 3);
  // A second slice of the same service, then the first relabelled to service b.
  step('upsert', 'x/a-2', slice('x', 'a-2', 'a', { endpoints: eps(2, 20) }));
  assert.equal(proxy.stats().endpoints, 5);
  step('upsert', 'x/a-1', slice('x', 'a-1', 'b', { endpoints: eps(3) }));
  assert.equal(proxy.stats().endpoints, 5, 'b now has a-1 endpoints, a keeps a-2 ones');
  assert.equal(shares(proxy), 5);
  // Its label removed: it belongs to no service; then deleted.
  step('upsert', 'x/a-1', slice('x', 'a-1', '', { endpoints: eps(3) }));
  assert.equal(proxy.stats().endpoints, 2);
  step('delete', 'x/a-1', slice('x', 'a-1', '', { endpoints: eps(3) }));
  step('delete', 'x/a-2', slice('x', 'a-2', 'a', { endpoints: eps(2, 20) }));
  assert.equal(proxy.stats().endpoints, 0);
  assert.equal(shares(proxy), 0, 'no endpoint shares left');
});
