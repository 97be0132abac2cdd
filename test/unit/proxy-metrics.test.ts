/** The proxy's metrics under kube-proxy's names with the nfkube_proxy_ prefix follow the proxy
 * table's syncs only: a policy table's commit or failure beside it is not the proxy's. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import type { SyncReport } from '../../src/pipeline/sync-report';
import { ProxyMetrics, withProxyMetrics } from '../../src/proxy/metrics';

const report = (component: string, durationMs: number): SyncReport => ({ kind: 'incremental', component, messages: 3, byType: new Map(), durationMs });

test("sync duration, last-sync timestamp and sync failures count the proxy table's syncs, not the policy table's", async () => {
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry);
  const seen: string[] = [];
  const observer = withProxyMetrics({ synced: (r) => seen.push(`synced ${r.component}`), failed: (kind, _err, component) => seen.push(`failed ${kind} ${component}`) }, metrics);
  observer.synced!(report('policy', 40));
  observer.failed!('incremental', new Error('EBUSY'), 'policy');
  let text = await registry.metrics();
  assert.match(text, /^nfkube_proxy_sync_proxy_rules_duration_seconds_count 0$/m);
  assert.match(text, /^nfkube_proxy_sync_proxy_rules_nftables_sync_failures_total 0$/m);
  assert.match(text, /^nfkube_proxy_sync_proxy_rules_last_timestamp_seconds 0$/m);

  const before = Date.now() / 1000;
  observer.synced!(report('proxy', 2.5));
  observer.failed!('full', new Error('ENOENT'), 'proxy');
  observer.failed!('incremental', new Error('ENOENT'), 'proxy');
  text = await registry.metrics();
  assert.match(text, /^nfkube_proxy_sync_proxy_rules_duration_seconds_count 1$/m);
  assert.match(text, /^nfkube_proxy_sync_proxy_rules_duration_seconds_bucket\{le="0.005"\} 1$/m);
  assert.match(text, /^nfkube_proxy_sync_proxy_rules_duration_seconds_bucket\{le="0.001"\} 0$/m);
  assert.match(text, /^nfkube_proxy_sync_proxy_rules_nftables_sync_failures_total 2$/m);
  const last = Number(/^nfkube_proxy_sync_proxy_rules_last_timestamp_seconds (\S+)$/m.exec(text)![1]);
  assert.ok(last >= before && last <= Date.now() / 1000 + 1, `last sync ${last}`);
  // The agent's own observer still sees everything.
  assert.deepEqual(seen, ['synced policy', 'failed incremental policy', 'synced proxy', 'failed full proxy', 'failed incremental proxy']);
});

test('network programming latency is measured from each EndpointSlice trigger time to the commit', async () => {
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry);
  const now = 1_000_000;
  metrics.programmed([now - 30, now - 700, now + 5_000], now);
  const text = await registry.metrics();
  // A trigger time in the future (a skewed clock) is not a latency.
  assert.match(text, /^nfkube_proxy_network_programming_duration_seconds_count 2$/m);
  assert.match(text, /^nfkube_proxy_network_programming_duration_seconds_bucket\{le="0.05"\} 1$/m);
  assert.match(text, /^nfkube_proxy_network_programming_duration_seconds_bucket\{le="1"\} 2$/m);
});
