import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import type { NetworkPolicyInfo, PodInfo } from '../../src/k8s/model';
import { compileFull } from '../../src/policy/engine/compile';
import { applyDelta } from '../../src/policy/engine/delta';
import { PolicyEngine } from '../../src/policy/engine/engine';
import { isEmptyDelta, type PolicyDelta, type PolicyIR } from '../../src/policy/engine/ir';
import { mulberry32 as rng } from '../helpers/prng';
import { NODE, step, World } from '../helpers/random-cluster';

/** The delta is exact: applied to the previous state it gives the new one, and it carries no
 * no-op entries (nothing re-sent unchanged). */
function checkDelta(prev: PolicyIR, delta: PolicyDelta, next: PolicyIR, where: string): void {
  assert.deepStrictEqual(applyDelta(prev, delta), next, `${where}: delta does not transform previous state into the new one`);
  if (isDeepStrictEqual(prev, next)) assert.ok(isEmptyDelta(delta), `${where}: state unchanged but delta not empty`);
  for (const p of delta.policies.upsert) assert.ok(!isDeepStrictEqual(prev.policies.get(p.id), p), `${where}: policy ${p.id} re-sent unchanged`);
  for (const t of delta.targets.upsert) assert.ok(!isDeepStrictEqual(prev.targets.get(t.key), t), `${where}: target ${t.key} re-sent unchanged`);
}

test('engine state equals compileFull after every random event, and deltas are exact', () => {
  for (let seed = 1; seed <= 30; seed++) {
    const w = new World(rng(seed));
    const engine = new PolicyEngine(NODE);
    let prev = engine.state();
    for (let i = 0; i < 200; i++) {
      const delta = step(w, engine);
      const next = engine.state();
      const where = `seed ${seed} step ${i}`;
      assert.deepStrictEqual(next, compileFull(w.inputs(), NODE), `${where}: engine state differs from compileFull`);
      checkDelta(prev, delta, next, where);
      prev = next;
    }
  }
});

test('batch returns the combined net delta of several events', () => {
  for (let seed = 100; seed < 110; seed++) {
    const w = new World(rng(seed));
    const engine = new PolicyEngine(NODE);
    let prev = engine.state();
    for (let i = 0; i < 60; i++) {
      const delta = engine.batch(() => {
        for (let k = 0; k < 5; k++) step(w, engine);
      });
      const next = engine.state();
      assert.deepStrictEqual(next, compileFull(w.inputs(), NODE), `seed ${seed} batch ${i}`);
      checkDelta(prev, delta, next, `seed ${seed} batch ${i}`);
      prev = next;
    }
  }
});

function pod(namespace: string, name: string, labels: Record<string, string>, ip: string, extra: Partial<PodInfo> = {}): PodInfo {
  return { namespace, name, labels, nodeName: NODE, phase: 'Running', ips: [ip], hostNetwork: false, ports: [], ...extra };
}

function seeded(): PolicyEngine {
  const engine = new PolicyEngine(NODE);
  engine.upsertNamespace({ name: 'x', labels: { team: 'red' } });
  engine.upsertNamespace({ name: 'y', labels: { team: 'blue' } });
  engine.upsertPolicy({
    namespace: 'x',
    name: 'web',
    podSelector: { matchLabels: { app: 'web' } },
    ingress: [{ peers: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port: 'http' }] }],
  });
  engine.upsertPod(pod('x', 'web-1', { app: 'web' }, '198.18.0.10', { ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }] }));
  engine.upsertPod(pod('x', 'client-1', { app: 'client' }, '198.18.0.11'));
  return engine;
}

test('irrelevant events give an empty delta', () => {
  const engine = seeded();
  const base = pod('x', 'client-1', { app: 'client' }, '198.18.0.11');
  const irrelevant: Array<[string, () => PolicyDelta]> = [
    ['same pod again (status heartbeat)', () => engine.upsertPod({ ...base })],
    ['phase Pending -> Running', () => engine.upsertPod({ ...base, phase: 'Pending' })],
    ['pod on another node no selector matches', () => engine.upsertPod(pod('y', 'other', { app: 'other' }, '198.18.1.1', { nodeName: 'node-2' }))],
    ['delete of that pod', () => engine.deletePod({ namespace: 'y', name: 'other' })],
    ['label no selector reads', () => engine.upsertPod({ ...base, labels: { app: 'client', version: 'v2' } })],
    ['local pod no policy selects', () => engine.upsertPod(pod('x', 'lonely', { app: 'lonely' }, '198.18.0.12', { ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }] }))],
    ['hostNetwork pod', () => engine.upsertPod(pod('x', 'host', { app: 'client' }, '198.18.0.1', { hostNetwork: true }))],
    ['completed pod', () => engine.upsertPod(pod('x', 'job', { app: 'client' }, '198.18.0.13', { phase: 'Succeeded' }))],
    ['pod without IP', () => engine.upsertPod({ ...pod('x', 'pending', { app: 'client' }, ''), ips: [] })],
    ['namespace relabel no namespaceSelector reads', () => engine.upsertNamespace({ name: 'y', labels: { team: 'blue', cost: 'low' } })],
    ['namespace upsert unchanged', () => engine.upsertNamespace({ name: 'x', labels: { team: 'red' } })],
    ['policy upsert unchanged', () => engine.upsertPolicy({ namespace: 'x', name: 'web', podSelector: { matchLabels: { app: 'web' } }, ingress: [{ peers: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port: 'http' }] }] })],
    ['delete of an unknown policy', () => engine.deletePolicy({ namespace: 'x', name: 'nope' })],
  ];
  for (const [what, run] of irrelevant) {
    const before = engine.state();
    const delta = run();
    assert.ok(isEmptyDelta(delta), `${what}: ${JSON.stringify(delta)}`);
    assert.deepStrictEqual(engine.state(), before, what);
  }
});

test('a pod joining a selector is peer-set element adds only', () => {
  const engine = seeded();
  const delta = engine.upsertPod(pod('x', 'client-2', { app: 'client' }, '198.18.0.20', { nodeName: 'node-2' }));
  const [set] = [...engine.state().peerSets.keys()];
  assert.deepStrictEqual(delta.peerSets.add, [{ set, v4: ['198.18.0.20'], v6: [] }]);
  const rest: PolicyDelta = { ...delta, peerSets: { ...delta.peerSets, add: [] } };
  assert.ok(isEmptyDelta(rest), JSON.stringify(rest));

  const leave = engine.upsertPod(pod('x', 'client-2', { app: 'gone' }, '198.18.0.20', { nodeName: 'node-2' }));
  assert.deepStrictEqual(leave.peerSets.del, [{ set, v4: ['198.18.0.20'], v6: [] }]);
});

test('a changed policy rewrites only that policy', () => {
  const engine = seeded();
  engine.upsertPolicy({ namespace: 'x', name: 'other', podSelector: {}, ingress: [{ ports: [{ port: 22 }] }] });
  const delta = engine.upsertPolicy({
    namespace: 'x',
    name: 'web',
    podSelector: { matchLabels: { app: 'web' } },
    ingress: [{ peers: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port: 'http' }, { port: 443 }] }],
  });
  assert.deepStrictEqual(delta.policies.upsert.map((p) => p.name), ['web']);
  assert.deepStrictEqual(delta.policies.remove, []);
  assert.deepStrictEqual(delta.targets, { upsert: [], remove: [] }, 'same targets, same policy ids');
  assert.deepStrictEqual(delta.peerSets.create.length + delta.peerSets.remove.length, 0, 'peer set reused');
});

test('sets are removed when the last policy referencing them goes, and shared while any does', () => {
  const engine = seeded();
  const twin: NetworkPolicyInfo = {
    namespace: 'x',
    name: 'twin',
    podSelector: { matchLabels: { app: 'db' } },
    ingress: [{ peers: [{ podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['client'] }] } }] }],
  };
  const add = engine.upsertPolicy(twin);
  assert.equal(add.peerSets.create.length, 0, 'matchLabels {app: client} and app In (client) are one set');
  assert.equal(engine.state().peerSets.size, 1);
  const del1 = engine.deletePolicy({ namespace: 'x', name: 'web' });
  assert.deepStrictEqual(del1.peerSets.remove, []);
  assert.equal(del1.namedPortSets.remove.length, 1, 'named-port set of web dropped');
  assert.deepStrictEqual(del1.targets.remove, ['x/web-1']);
  const del2 = engine.deletePolicy({ namespace: 'x', name: 'twin' });
  assert.equal(del2.peerSets.remove.length, 1);
  assert.deepStrictEqual(engine.state().peerSets.size, 0);
});

test('a pod becoming isolated adds its named-port triples; a target change is a target upsert', () => {
  const engine = seeded();
  const delta = engine.upsertPod(pod('x', 'web-2', { app: 'web' }, '198.18.0.30', { ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }] }));
  assert.equal(delta.targets.upsert.length, 1);
  assert.deepStrictEqual(delta.targets.upsert[0].v4, ['198.18.0.30']);
  assert.deepStrictEqual(delta.namedPortSets.add.map((c) => c.v4), [[{ ip: '198.18.0.30', protocol: 'TCP', port: 8080 }]]);
  const moved = engine.upsertPod(pod('x', 'web-2', { app: 'web' }, '198.18.0.31', { ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }] }));
  assert.deepStrictEqual(moved.targets.upsert.map((t) => t.v4), [['198.18.0.31']]);
  assert.deepStrictEqual(moved.namedPortSets.del.map((c) => c.v4[0].ip), ['198.18.0.30']);
  assert.deepStrictEqual(moved.namedPortSets.add.map((c) => c.v4[0].ip), ['198.18.0.31']);
});

test('a namespace relabel moves its pods in and out of namespaceSelector peer sets', () => {
  const engine = seeded();
  engine.upsertPolicy({ namespace: 'x', name: 'from-red', podSelector: {}, ingress: [{ peers: [{ namespaceSelector: { matchLabels: { team: 'red' } } }] }] });
  engine.upsertPod(pod('y', 'b', { app: 'b' }, '198.18.1.2', { nodeName: 'node-2' }));
  const delta = engine.upsertNamespace({ name: 'y', labels: { team: 'red' } });
  assert.deepStrictEqual(delta.peerSets.add.map((c) => c.v4), [['198.18.1.2']]);
  const back = engine.deleteNamespace({ name: 'y' });
  assert.deepStrictEqual(back.peerSets.del.map((c) => c.v4), [['198.18.1.2']]);
});

test('two pods sharing an address keep it in the set until both leave', () => {
  const engine = seeded();
  engine.upsertPod(pod('x', 'client-2', { app: 'client' }, '198.18.0.11', { nodeName: 'node-2' }));
  const first = engine.deletePod({ namespace: 'x', name: 'client-1' });
  assert.ok(isEmptyDelta(first));
  const second = engine.deletePod({ namespace: 'x', name: 'client-2' });
  assert.deepStrictEqual(second.peerSets.del.map((c) => c.v4), [['198.18.0.11']]);
});
