/** Drop log counters: per (namespace, pod, direction, verdict), with the label sets bounded. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { DropLogMetrics, OTHER } from '../../src/policy/droplog/metrics';

test('counters per pod and direction; past the bound new pods count as _other; a deleted pod leaves', async () => {
  const registry = new Registry();
  const m = new DropLogMetrics(registry, 3);
  for (let i = 0; i < 10; i++) m.countLogged('x', `p${i}`, 'ingress', 'drop');
  m.countLogged('x', 'p0', 'egress', 'audit');
  m.countLost('overrun', 4);
  const text = await registry.metrics();
  const series = text.split('\n').filter((l) => l.startsWith('nfkube_drop_log_packets_total{'));
  assert.deepEqual(series.sort(), [
    'nfkube_drop_log_packets_total{namespace="x",pod="_other",direction="ingress",verdict="drop"} 7',
    'nfkube_drop_log_packets_total{namespace="x",pod="p0",direction="egress",verdict="audit"} 1',
    'nfkube_drop_log_packets_total{namespace="x",pod="p0",direction="ingress",verdict="drop"} 1',
    'nfkube_drop_log_packets_total{namespace="x",pod="p1",direction="ingress",verdict="drop"} 1',
    'nfkube_drop_log_packets_total{namespace="x",pod="p2",direction="ingress",verdict="drop"} 1',
  ]);
  assert.match(text, /nfkube_drop_log_lost_total\{reason="overrun"\} 4/);
  assert.equal(OTHER, '_other');

  m.forgetPod('x', 'p1');
  m.countLogged('x', 'p9', 'ingress', 'drop');
  const after = (await registry.metrics()).split('\n').filter((l) => l.startsWith('nfkube_drop_log_packets_total{'));
  assert.ok(!after.some((l) => l.includes('pod="p1"')), 'the deleted pod is gone');
  assert.ok(after.includes('nfkube_drop_log_packets_total{namespace="x",pod="p9",direction="ingress",verdict="drop"} 1'), 'its place is free');
});
