/** nfkube_network_programming_duration_seconds (API change time -> kernel commit) and
 * nfkube_event_to_commit_duration_seconds (event arrival -> commit, sub-millisecond), and the
 * build and process metrics under their standard names. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Agent } from '../../src/pipeline/agent';
import { PolicyComponent } from '../../src/policy/component';
import { metricsObserver } from '../../src/policy/metrics-bridge';
import { ProgrammingLatency } from '../../src/pipeline/programming-latency';
import { lastChangeTime, normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { ClusterChange } from '../../src/k8s/source';
import { AgentMetrics } from '../../src/observe/metrics';
import { withSandbox } from '../helpers/netns';
import { namespace, NODE, pod, policy } from './fixtures';

function sample(text: string, line: string): number | undefined {
  const l = text.split('\n').find((x) => x.startsWith(`${line} `));
  return l === undefined ? undefined : Number(l.slice(l.lastIndexOf(' ') + 1));
}

const change = (kind: ClusterChange['kind'], changedAt?: number) => ({ kind, type: 'upsert', key: 'x/a', object: {}, changedAt }) as unknown as ClusterChange;

test('tracker: a queued change is observed by the first commit that started after it arrived; an unqueued one never', () => {
  let now = 1000;
  const wall = 1_700_000_010_000;
  const seen: [string, number | undefined, number][] = [];
  const t = new ProgrammingLatency((k, c, a) => seen.push([k, c, a]), { monotonic: () => now, wall: () => wall });
  t.deliver(change('Pod', wall - 3000), () => t.queued());
  now += 0.25;
  t.deliver(change('Namespace'), () => undefined); // changed nothing in the kernel: not queued
  now += 0.5;
  t.committed(0.5); // started at 1000.25, after the Pod change arrived
  assert.deepEqual(seen, [['Pod', 3, 0.00075]]);
  t.deliver(change('NetworkPolicy', wall - 1000), () => t.queued());
  now += 2;
  t.committed(2.5); // started before the NetworkPolicy change arrived: not in it
  assert.equal(seen.length, 1);
  assert.equal(t.pending, 1);
  now += 1;
  t.committed(0.5);
  assert.deepEqual(seen[1], ['NetworkPolicy', 1, 0.003]);
  assert.equal(t.pending, 0);
});

test('lastChangeTime: the latest managedFields time, from WATCH text or LIST Dates; else creationTimestamp', () => {
  const managedFields = [{ manager: 'kubectl', time: '2026-01-02T03:04:05Z' }, { manager: 'kubelet', subresource: 'status', time: '2026-01-02T03:04:09Z' }];
  assert.equal(lastChangeTime({ metadata: { managedFields } }), Date.parse('2026-01-02T03:04:09Z'));
  assert.equal(lastChangeTime({ metadata: { managedFields: managedFields.map((f) => ({ ...f, time: new Date(f.time) })) } }), Date.parse('2026-01-02T03:04:09Z'));
  assert.equal(lastChangeTime({ metadata: { creationTimestamp: '2026-01-02T00:00:00Z', managedFields: [{ time: 'garbage' }] } }), Date.parse('2026-01-02T00:00:00Z'));
  assert.equal(lastChangeTime({ metadata: {} }), undefined);
  assert.equal(lastChangeTime(null), undefined);
});

test('agent: a pod change committed to the kernel is observed in both histograms; a change that writes nothing is not', async () => {
  await withSandbox(async (sb) => {
    const metrics = new AgentMetrics({ processMetrics: false, build: { version: '9.9.9', revision: 'abc' } });
    const latency = new ProgrammingLatency((k, c, a) => metrics.observeProgramming(k, c, a));
    const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) })], observer: metricsObserver(metrics, latency) });
    try {
      await agent.start({ namespaces: new Map([['x', normalizeNamespace(namespace('x'))]]), pods: new Map(), policies: new Map([['x/web', normalizeNetworkPolicy(policy('x', 'web', { podSelector: { matchLabels: { app: 'web' } } }))]]) });
      const deliver = (c: ClusterChange) => latency.deliver(c, () => agent.onChange(c));
      const changedAt = Date.now() - 2000;
      deliver({ kind: 'Pod', type: 'upsert', key: 'x/a', object: normalizePod(pod('x', 'a', '198.18.0.2', { app: 'web' })), changedAt });
      await agent.idle();
      // A pod on another node that no selector matches: nothing to write, nothing observed.
      deliver({ kind: 'Pod', type: 'upsert', key: 'x/far', object: normalizePod(pod('x', 'far', '198.18.0.9', {}, { node: 'node-2' })), changedAt });
      await agent.idle();
      const body = (await metrics.expose()).body;
      assert.equal(sample(body, 'nfkube_network_programming_duration_seconds_count{kind="Pod"}'), 1);
      const sinceChange = sample(body, 'nfkube_network_programming_duration_seconds_sum{kind="Pod"}')!;
      assert.ok(sinceChange >= 2 && sinceChange < 60, `API change -> commit ${sinceChange}s`);
      assert.equal(sample(body, 'nfkube_event_to_commit_duration_seconds_count{kind="Pod"}'), 1);
      const sinceArrival = sample(body, 'nfkube_event_to_commit_duration_seconds_sum{kind="Pod"}')!;
      assert.ok(sinceArrival > 0 && sinceArrival < 10, `arrival -> commit ${sinceArrival}s`);
      assert.notEqual(sinceArrival, Math.round(sinceArrival * 1000) / 1000, 'finer than a millisecond');
      assert.match(body, /^nfkube_event_to_commit_duration_seconds_bucket\{le="0.0001",kind="Pod"\} \d+$/m);
      assert.equal(sample(body, `nfkube_build_info{version="9.9.9",revision="abc",node_version="${process.version}"}`), 1);
      assert.equal(latency.pending, 0);
    } finally {
      await agent.stop();
    }
  });
});

test('process metrics carry the standard names, without the nfkube prefix', async () => {
  const body = (await new AgentMetrics().expose()).body;
  for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'process_start_time_seconds', 'nodejs_heap_size_used_bytes', 'nodejs_eventloop_lag_seconds']) {
    assert.match(body, new RegExp(`^# TYPE ${name} `, 'm'), name);
  }
  assert.doesNotMatch(body, /^nfkube_(process|nodejs)_/m);
  assert.match(body, /^nfkube_build_info\{version="[^"]+",revision="[^"]+",node_version="v\d+\.\d+\.\d+"\} 1$/m);
});
