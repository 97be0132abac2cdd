/** The proxy component without a kernel: after random Service, EndpointSlice and Node events the
 * incrementally kept model equals a full render of the same cluster, and the scope it records is
 * enough (a scoped diff against the committed model reaches the full render); one endpoint
 * change is a handful of element messages; headless, ExternalName and irrelevant updates are 0. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChangeScope } from '../../src/pipeline/scope';
import { Registry } from 'prom-client';
import { ProxyComponent } from '../../src/proxy/component';
import { ProxyMetrics } from '../../src/proxy/metrics';
import { applyDiff, cloneModel, diffRulesets, diffTransaction, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import type { RulesetModel } from '../../src/ruleset/model';
import { mulberry32 as rng } from '../helpers/prng';
import { endpoint, node, NODE, port, service, ServiceWorld, slice, snapshotOf } from './fixtures';

const opts = { nodeName: NODE };

function assertSame(a: RulesetModel, b: RulesetModel, what: string): void {
  const d = diffRulesets(a, b);
  assert.ok(isEmptyDiff(d), `${what}:\n${formatDiff(a, b, d)}`);
}

for (const seed of [1, 2, 3, 4]) {
  test(`random events (seed ${seed}): incremental model == full render, scoped diffs reach it`, () => {
    const w = new ServiceWorld(rng(seed));
    for (let i = 0; i < 10; i++) w.change();
    const proxy = new ProxyComponent({ ...opts, masqueradeAll: seed === 4, nodePortAddresses: seed === 3 ? ['198.18.0.0/16', '0.0.0.0/0'] : 'primary' });
    proxy.start(w.snapshot());
    const committed = cloneModel(proxy.desired);
    for (let i = 0; i < 400; i++) {
      const change = w.change();
      const scope = new ChangeScope();
      proxy.apply(change, scope);
      const d = diffRulesets(committed, proxy.desired, scope);
      applyDiff(committed, proxy.desired, d);
      const full = new ProxyComponent({ ...proxy.opts });
      full.start(w.snapshot());
      assertSame(proxy.desired, full.desired, `event ${i} (${change.type} ${change.kind} ${change.key}): incremental vs full`);
      assertSame(committed, full.desired, `event ${i} (${change.type} ${change.kind} ${change.key}): committed through scoped diffs vs full`);
    }
  });
}

function messages(proxy: ProxyComponent, committed: RulesetModel, scope: ChangeScope): number {
  const d = diffRulesets(committed, proxy.desired, scope);
  const tx = diffTransaction(committed, proxy.desired, d);
  applyDiff(committed, proxy.desired, d);
  // Elements of one set go in one message; count element messages as the kernel sees them.
  return tx.operations.length;
}

test('one endpoint added or removed is a handful of messages, flat in the number of services', () => {
  const sizes = [10, 1000];
  const counts: number[] = [];
  for (const n of sizes) {
    const services = [];
    const slices = [];
    for (let i = 0; i < n; i++) {
      services.push(service('x', `s${i}`, { clusterIPs: [`198.19.${i >> 8}.${i & 255}`] }));
      slices.push(slice('x', `s${i}-a`, `s${i}`, { endpoints: [1, 2, 3, 4, 5].map((h) => endpoint(`198.18.1.${h}`, 'node-2')) }));
    }
    const proxy = new ProxyComponent(opts);
    proxy.start(snapshotOf(services, slices, [node(NODE, { podCIDRs: ['198.18.1.0/24'] })]));
    const committed = cloneModel(proxy.desired);
    const grown = { ...slices[0], endpoints: [...slices[0].endpoints, endpoint('198.18.1.6', NODE)] };
    const scope = new ChangeScope();
    assert.equal(proxy.apply({ kind: 'EndpointSlice', type: 'upsert', key: 'x/s0-a', object: grown }, scope), true);
    const added = messages(proxy, committed, scope);
    const scope2 = new ChangeScope();
    proxy.apply({ kind: 'EndpointSlice', type: 'upsert', key: 'x/s0-a', object: slices[0] }, scope2);
    const removed = messages(proxy, committed, scope2);
    counts.push(added, removed);
    // The service's old draw shares out, its new shares in, the endpoint's hairpin element: 3.
    assert.ok(added <= 8, `adding one endpoint took ${added} messages`);
    assert.ok(removed <= 8, `removing one endpoint took ${removed} messages`);
  }
  assert.deepEqual(counts.slice(0, 2), counts.slice(2), 'the same messages at 10 and 1000 services');
});

test('headless and ExternalName services and their endpoint churn, and irrelevant updates, cost 0 messages', () => {
  const headless = service('moon', 'browsers', { headless: true, ports: [port('vnc', 'TCP', 5900)] });
  const ext = service('x', 'ext', { type: 'ExternalName' });
  const web = service('x', 'web', { clusterIPs: ['198.19.0.10'] });
  const webSlice = slice('x', 'web-a', 'web', { endpoints: [endpoint('198.18.1.10', NODE)], triggerTimeMs: 1 });
  const proxy = new ProxyComponent(opts);
  proxy.start(snapshotOf([headless, ext, web], [webSlice], [node(NODE)]));
  const committed = cloneModel(proxy.desired);
  let total = 0;
  for (let i = 0; i < 200; i++) {
    const s = slice('moon', 'browsers-a', 'browsers', { ports: [{ name: 'vnc', protocol: 'TCP', port: 5900 }], endpoints: [endpoint(`198.18.2.${1 + (i % 50)}`, 'node-2')] });
    const scope = new ChangeScope();
    const touched = proxy.apply({ kind: 'EndpointSlice', type: 'upsert', key: 'moon/browsers-a', object: s }, scope);
    assert.equal(touched, false);
    total += messages(proxy, committed, scope);
  }
  for (const svc of [headless, ext]) {
    const scope = new ChangeScope();
    assert.equal(proxy.apply({ kind: 'Service', type: 'upsert', key: `${svc.namespace}/${svc.name}`, object: { ...svc, ports: [port('other', 'TCP', 1)] } }, scope), false);
    total += messages(proxy, committed, scope);
  }
  // Only the trigger time changed: nothing to program.
  const scope = new ChangeScope();
  assert.equal(proxy.apply({ kind: 'EndpointSlice', type: 'upsert', key: 'x/web-a', object: { ...webSlice, triggerTimeMs: 2 } }, scope), false);
  total += messages(proxy, committed, scope);
  // A node that is not this one, without pod CIDRs: nothing the proxy reads changes.
  const scope2 = new ChangeScope();
  assert.equal(proxy.apply({ kind: 'Node', type: 'upsert', key: 'node-9', object: node('node-9') }, scope2), false);
  total += messages(proxy, committed, scope2);
  assert.equal(total, 0);
});

test('metrics under kube-proxy names with the nfkube_proxy_ prefix: queued on a change, programming latency from the trigger time at commit', async () => {
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry);
  const proxy = new ProxyComponent({ ...opts, metrics });
  proxy.start(snapshotOf([service('x', 'web', { clusterIPs: ['198.19.0.10'] })], [], [node(NODE)]));
  const s = slice('x', 'web-a', 'web', { endpoints: [endpoint('198.18.1.10', NODE)], triggerTimeMs: Date.now() - 1500 });
  assert.equal(proxy.apply({ kind: 'EndpointSlice', type: 'upsert', key: 'x/web-a', object: s }, new ChangeScope()), true);
  await proxy.afterCommit(diffRulesets(proxy.desired, proxy.desired), 'incremental');
  metrics.synced(2);
  const text = await registry.metrics();
  for (const name of [
    'nfkube_proxy_sync_proxy_rules_duration_seconds_count 1',
    'nfkube_proxy_network_programming_duration_seconds_count 1',
    'nfkube_proxy_sync_proxy_rules_last_queued_timestamp_seconds',
    'nfkube_proxy_sync_proxy_rules_last_timestamp_seconds',
    'nfkube_proxy_sync_proxy_rules_nftables_sync_failures_total 0',
  ]) {
    assert.ok(text.includes(name), name);
  }
  assert.match(text, /nfkube_proxy_network_programming_duration_seconds_bucket\{le="1"\} 0/);
  assert.match(text, /nfkube_proxy_network_programming_duration_seconds_bucket\{le="2"\} 1/);
});
