/** kube-proxy's /healthz and /livez (proxier-health.ts, as pkg/proxy/healthcheck/proxy_health.go):
 * healthy while starting up and while no queued change is later than the timeout; /healthz also
 * follows the Node (deleted, or tainted by the Cluster Autoscaler), /livez does not; kube-proxy's
 * JSON bodies with Go's time text; fed by the ProxyComponent's changes and commits; served over
 * HTTP; and the proxy's metrics under kube-proxy's `kubeproxy_` names on request. */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { Registry } from 'prom-client';
import { normalizeNode } from '../../src/k8s/normalize-service';
import { ChangeScope } from '../../src/pipeline/scope';
import { ProxyComponent } from '../../src/proxy/component';
import { ProxyMetrics } from '../../src/proxy/metrics';
import { goTimeText, ProxierHealth } from '../../src/proxy/proxier-health';
import { diffRulesets } from '../../src/ruleset/diff';
import { node, NODE, service, snapshotOf } from '../proxy/fixtures';

const T0 = Date.parse('2026-12-04T22:00:00.120Z');

test("Go's time text, as kube-proxy's bodies print it", () => {
  assert.equal(goTimeText(T0), '2026-12-04 22:00:00.12 +0000 UTC');
  assert.equal(goTimeText(Date.parse('2026-12-04T22:00:01Z')), '2026-12-04 22:00:01 +0000 UTC');
  assert.equal(goTimeText(undefined), '0001-01-01 00:00:00 +0000 UTC');
});

test('healthy while starting up and while queued changes are not late; /healthz follows the Node, /livez does not', () => {
  let now = T0;
  const h = new ProxierHealth({ timeoutMs: 60_000, now: () => now });
  h.queued();
  now += 120_000;
  assert.equal(h.answer('/healthz')!.status, 200, 'never updated: starting up');
  h.updated();
  assert.deepEqual(h.answer('/healthz'), { status: 200, body: `{"lastUpdated": "${goTimeText(now)}","currentTime": "${goTimeText(now)}", "nodeEligible": true}` });
  const updatedAt = now;
  h.queued();
  now += 59_000;
  assert.equal(h.answer('/livez')!.status, 200, 'queued, not late yet');
  h.queued();
  now += 2_000;
  assert.deepEqual(h.answer('/livez'), { status: 503, body: `{"lastUpdated": "${goTimeText(updatedAt)}","currentTime": "${goTimeText(now)}"}` }, 'the oldest queued change is late');
  assert.equal(h.answer('/healthz')!.status, 503);
  h.updated();
  assert.equal(h.answer('/healthz')!.status, 200);
  h.syncNode(normalizeNode({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, spec: { taints: [{ key: 'ToBeDeletedByClusterAutoscaler', effect: 'NoSchedule' }] } }));
  assert.deepEqual(h.answer('/healthz'), { status: 503, body: `{"lastUpdated": "${goTimeText(now)}","currentTime": "${goTimeText(now)}", "nodeEligible": false}` });
  assert.equal(h.answer('/livez')!.status, 200, '/livez ignores the Node');
  h.syncNode(normalizeNode({ apiVersion: 'v1', kind: 'Node', metadata: { name: NODE } }));
  assert.equal(h.answer('/healthz')!.status, 200);
  h.syncNode(undefined);
  assert.equal(h.answer('/healthz')!.status, 503, 'the Node is gone');
  assert.equal(h.answer('/metrics'), undefined);
});

test('the ProxyComponent queues its changes, marks its commits and reports its Node', async () => {
  let now = T0;
  const h = new ProxierHealth({ timeoutMs: 60_000, now: () => now });
  const proxy = new ProxyComponent({ nodeName: NODE, proxierHealth: h });
  proxy.start(snapshotOf([], [], [node(NODE)]));
  await proxy.afterCommit(diffRulesets(proxy.desired, proxy.desired), 'full');
  proxy.apply({ kind: 'Service', type: 'upsert', key: 'x/web', object: service('x', 'web', { clusterIPs: ['198.19.0.10'] }) }, new ChangeScope());
  now += 61_000;
  assert.equal(h.answer('/livez')!.status, 503, 'a change queued and not committed in time');
  await proxy.afterCommit(diffRulesets(proxy.desired, proxy.desired), 'incremental');
  assert.equal(h.answer('/livez')!.status, 200);
  proxy.apply({ kind: 'Node', type: 'delete', key: NODE, object: node(NODE) }, new ChangeScope());
  assert.equal(h.answer('/healthz')!.status, 503);
});

test('served over HTTP with kube-proxy headers, counted under kube-proxy metric names on request', async () => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
  const registry = new Registry();
  const metrics = new ProxyMetrics(registry, 'kubeproxy_');
  const h = new ProxierHealth({ counters: { healthz: metrics.healthz, livez: metrics.livez } });
  await h.listen('127.0.0.1', port);
  try {
    const res = await fetch(`http://127.0.0.1:${port}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
    assert.equal(((await res.json()) as { nodeEligible: boolean }).nodeEligible, true);
    assert.equal((await fetch(`http://127.0.0.1:${port}/nothing`)).status, 404);
  } finally {
    await h.close();
  }
  const text = await registry.metrics();
  assert.match(text, /^kubeproxy_proxy_healthz_total\{code="200"\} 1$/m);
  for (const name of ['kubeproxy_sync_proxy_rules_duration_seconds', 'kubeproxy_network_programming_duration_seconds', 'kubeproxy_sync_proxy_rules_last_timestamp_seconds', 'kubeproxy_sync_proxy_rules_nftables_sync_failures_total']) {
    assert.match(text, new RegExp(`^# TYPE ${name} `, 'm'), name);
  }
  assert.doesNotMatch(text, /nfkube_proxy_/);
});
