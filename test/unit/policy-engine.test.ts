import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import type { LabelSelector, NamespaceInfo, NetworkPolicyInfo, PeerInfo, PodInfo, PolicyPortInfo, PolicyRuleInfo } from '../../src/k8s/model';
import { compileFull } from '../../src/policy/compile';
import { applyDelta } from '../../src/policy/delta';
import { PolicyEngine } from '../../src/policy/engine';
import { isEmptyDelta, type PolicyDelta, type PolicyIR } from '../../src/policy/ir';
import { mulberry32 as rng } from '../helpers/prng';

const NODE = 'node-1';


class World {
  readonly pods = new Map<string, PodInfo>();
  readonly namespaces = new Map<string, NamespaceInfo>();
  readonly policies = new Map<string, NetworkPolicyInfo>();
  constructor(readonly rand: () => number) {}

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rand() * xs.length)];
  }
  chance(p: number): boolean {
    return this.rand() < p;
  }

  labels(): Record<string, string> {
    const out: Record<string, string> = {};
    if (this.chance(0.8)) out.app = this.pick(['a', 'b', 'c']);
    if (this.chance(0.5)) out.tier = this.pick(['fe', 'be']);
    if (this.chance(0.3)) out.env = this.pick(['prod', 'dev']);
    return out;
  }

  selector(): LabelSelector {
    const r = this.rand();
    if (r < 0.2) return {};
    if (r < 0.5) return { matchLabels: { app: this.pick(['a', 'b', 'c']) } };
    if (r < 0.6) return { matchLabels: { app: this.pick(['a', 'b']), tier: this.pick(['fe', 'be']) } };
    const operator = this.pick(['In', 'NotIn', 'Exists', 'DoesNotExist', 'In', 'NotIn', 'Bogus']);
    const key = this.pick(['app', 'tier', 'env']);
    const values = operator === 'In' || operator === 'NotIn' ? [this.pick(['a', 'b', 'fe', 'prod']), this.pick(['c', 'be', 'dev'])] : undefined;
    return { matchExpressions: [{ key, operator, ...(values ? { values } : {}) }] };
  }

  nsSelector(): LabelSelector {
    const r = this.rand();
    if (r < 0.3) return {};
    if (r < 0.7) return { matchLabels: { team: this.pick(['red', 'blue']) } };
    if (r < 0.85) return { matchLabels: { 'kubernetes.io/metadata.name': this.pick(['x', 'y', 'z']) } };
    return { matchExpressions: [{ key: 'team', operator: this.pick(['Exists', 'DoesNotExist']) }] };
  }

  peer(): PeerInfo {
    const r = this.rand();
    if (r < 0.35) return { podSelector: this.selector() };
    if (r < 0.55) return { namespaceSelector: this.nsSelector() };
    if (r < 0.8) return { podSelector: this.selector(), namespaceSelector: this.nsSelector() };
    if (r < 0.95) {
      return this.chance(0.5)
        ? { ipBlock: { cidr: '198.18.0.0/24', except: this.chance(0.5) ? ['198.18.0.0/28'] : undefined } }
        : { ipBlock: { cidr: '2001:db8::/64', except: ['2001:db8::/120'] } };
    }
    return { ipBlock: { cidr: this.pick(['198.18.0.0/33', 'nonsense']) } };
  }

  port(): PolicyPortInfo {
    const r = this.rand();
    if (r < 0.3) return { port: this.pick([80, 53, 443]) };
    if (r < 0.45) return { protocol: 'UDP', port: 53 };
    if (r < 0.55) return { port: 8000, endPort: 8100 };
    if (r < 0.85) return { port: this.pick(['http', 'dns', 'metrics']), protocol: this.pick(['TCP', 'UDP', undefined]) };
    if (r < 0.93) return { protocol: 'SCTP' };
    return this.pick<PolicyPortInfo>([{ protocol: 'ICMP', port: 1 }, { port: 0 }, { port: 90, endPort: 80 }]);
  }

  rules(): PolicyRuleInfo[] | undefined {
    const r = this.rand();
    if (r < 0.25) return undefined;
    if (r < 0.35) return [];
    const n = 1 + Math.floor(this.rand() * 3);
    return Array.from({ length: n }, () => {
      const rule: PolicyRuleInfo = {};
      const p = this.rand();
      if (p < 0.2) rule.peers = [];
      else if (p < 0.85) rule.peers = Array.from({ length: 1 + Math.floor(this.rand() * 2) }, () => this.peer());
      const q = this.rand();
      if (q < 0.15) rule.ports = [];
      else if (q < 0.7) rule.ports = Array.from({ length: 1 + Math.floor(this.rand() * 2) }, () => this.port());
      return rule;
    });
  }

  policy(namespace: string, name: string): NetworkPolicyInfo {
    const types = this.pick<string[] | undefined>([undefined, undefined, ['Ingress'], ['Egress'], ['Ingress', 'Egress'], ['Bogus']]);
    return { namespace, name, podSelector: this.selector(), policyTypes: types, ingress: this.rules(), egress: this.rules() };
  }

  pod(namespace: string, name: string): PodInfo {
    const n = Math.floor(this.rand() * 24);
    const ips = this.pick([[`198.18.0.${n}`], [`2001:db8::${n.toString(16)}`], [`198.18.0.${n}`, `2001:db8::${n.toString(16)}`], []]);
    const ports = this.pick([
      [],
      [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
      [{ name: 'http', containerPort: 8080, protocol: 'TCP' }, { name: 'dns', containerPort: 53, protocol: 'UDP' }],
      [{ name: 'metrics', containerPort: 9090, protocol: 'TCP' }, { containerPort: 22, protocol: 'TCP' }],
    ]);
    return {
      namespace,
      name,
      labels: this.labels(),
      nodeName: this.pick([NODE, NODE, 'node-2']),
      phase: this.pick([undefined, 'Running', 'Running', 'Pending', 'Succeeded', 'Failed']),
      ips,
      hostNetwork: this.chance(0.08),
      ports,
    };
  }

  inputs() {
    return { pods: this.pods.values(), namespaces: this.namespaces.values(), policies: this.policies.values() };
  }
}

const NAMESPACES = ['x', 'y', 'z'];

/** One random event, applied to both the world and the engine. */
function step(w: World, engine: PolicyEngine): PolicyDelta {
  const r = w.rand();
  const ns = w.pick(NAMESPACES);
  if (r < 0.45) {
    const name = `pod${Math.floor(w.rand() * 8)}`;
    const key = `${ns}/${name}`;
    const existing = w.pods.get(key);
    if (existing && w.chance(0.3)) {
      w.pods.delete(key);
      return engine.deletePod(existing);
    }
    const pod = existing && w.chance(0.5) ? { ...existing, labels: w.labels() } : w.pod(ns, name);
    w.pods.set(key, pod);
    return engine.upsertPod(pod);
  }
  if (r < 0.6) {
    if (w.namespaces.has(ns) && w.chance(0.2)) {
      w.namespaces.delete(ns);
      return engine.deleteNamespace({ name: ns });
    }
    const labels: Record<string, string> = {};
    if (w.chance(0.7)) labels.team = w.pick(['red', 'blue']);
    const info = { name: ns, labels };
    w.namespaces.set(ns, info);
    return engine.upsertNamespace(info);
  }
  const name = `np${Math.floor(w.rand() * 5)}`;
  const key = `${ns}/${name}`;
  if (w.policies.has(key) && w.chance(0.3)) {
    w.policies.delete(key);
    return engine.deletePolicy({ namespace: ns, name });
  }
  const np = w.policy(ns, name);
  w.policies.set(key, np);
  return engine.upsertPolicy(np);
}

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
