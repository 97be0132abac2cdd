/** The ClusterNetworkPolicy engine and tiers event by event: a pod or label change is set
 * elements only, a policy edit rewrites that policy's chains, a priority change relinks the
 * tier; the state reached incrementally equals the state of the same objects loaded at once; the
 * table is exactly NetworkPolicy's while no ClusterNetworkPolicy exists. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizers } from '../../src/k8s/normalizers';
import type { ClusterChange, ClusterSnapshot } from '../../src/k8s/source';
import type { ClusterNetworkPolicyInfo } from '../../src/k8s/cluster-policy-model';
import type { NamespaceInfo, PodInfo } from '../../src/k8s/model';
import type { NodeInfo } from '../../src/k8s/service-model';
import { ChangeScope } from '../../src/pipeline/scope';
import { PolicyComponent } from '../../src/policy/component';
import { ClusterPolicyEngine } from '../../src/policy/cluster/engine';
import { recordingLogger } from '../helpers/recording-logger';

const NODE = 'node-1';
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const ns = (name: string, labels: Record<string, string> = {}) => normalizers.Namespace({ metadata: { name, labels: { ns: name, ...labels } } }) as NamespaceInfo;
const pod = (n: string, name: string, ip: string, labels: Record<string, string>, extra: Json = {}) =>
  normalizers.Pod({ metadata: { name, namespace: n, labels }, spec: { nodeName: NODE, ...extra.spec }, status: { phase: 'Running', podIPs: [{ ip }, { ip: ip.replace('198.18.0.', '2001:db8::') }] } }) as PodInfo;
const node = (name: string, labels: Record<string, string>, address: string) =>
  normalizers.Node({ metadata: { name, labels }, status: { addresses: [{ type: 'InternalIP', address }] } }) as NodeInfo;
const cnp = (name: string, spec: Json) => normalizers.ClusterNetworkPolicy({ metadata: { name }, spec }) as ClusterNetworkPolicyInfo;

const GUARD = cnp('guard', {
  tier: 'Admin',
  priority: 10,
  subject: { pods: { namespaceSelector: { matchLabels: { ns: 'x' } }, podSelector: { matchLabels: { app: 'web' } } } },
  egress: [
    { action: 'Deny', to: [{ nodes: { matchLabels: { role: 'db' } } }] },
    { action: 'Accept', to: [{ pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'db' } } } }], protocols: [{ destinationNamedPort: 'sql' }] },
  ],
});
const BASE = cnp('base', { tier: 'Baseline', priority: 1, subject: { namespaces: {} }, ingress: [{ action: 'Deny', from: [{ namespaces: {} }] }] });

function snapshot(objs: { pods?: PodInfo[]; namespaces?: NamespaceInfo[]; nodes?: NodeInfo[]; cnps?: ClusterNetworkPolicyInfo[] }): ClusterSnapshot {
  const by = <T>(list: T[] | undefined, key: (t: T) => string) => new Map((list ?? []).map((t) => [key(t), t]));
  return {
    pods: by(objs.pods, (p) => `${p.namespace}/${p.name}`),
    namespaces: by(objs.namespaces, (n) => n.name),
    policies: new Map(),
    nodes: by(objs.nodes, (n) => n.name),
    clusterPolicies: by(objs.cnps, (c) => c.name),
  };
}

test('the engine reaches by events the state it loads at once', () => {
  const events = new ClusterPolicyEngine(NODE);
  events.upsertPolicy(GUARD);
  events.upsertNamespace(ns('x'));
  events.upsertNode(node('n1', { role: 'db' }, '198.18.5.1'));
  events.upsertPod(pod('x', 'a', '198.18.0.10', { app: 'web' }));
  events.upsertPod(pod('x', 'b', '198.18.0.11', { app: 'db' }, { spec: { containers: [{ name: 'c', ports: [{ name: 'sql', containerPort: 5432 }] }] } }));
  events.upsertPod(pod('x', 'c', '198.18.0.12', { app: 'other' }));
  events.upsertPolicy(BASE);
  events.upsertNode(node('n2', { role: 'web' }, '198.18.5.2'));
  events.upsertPod(pod('x', 'c', '198.18.0.12', { app: 'web' }));
  events.deletePolicy(BASE);

  const once = new ClusterPolicyEngine(NODE);
  once.batch(() => {
    once.upsertNamespace(ns('x'));
    for (const p of [pod('x', 'a', '198.18.0.10', { app: 'web' }), pod('x', 'b', '198.18.0.11', { app: 'db' }, { spec: { containers: [{ name: 'c', ports: [{ name: 'sql', containerPort: 5432 }] }] } }), pod('x', 'c', '198.18.0.12', { app: 'web' })]) once.upsertPod(p);
    once.upsertNode(node('n1', { role: 'db' }, '198.18.5.1'));
    once.upsertNode(node('n2', { role: 'web' }, '198.18.5.2'));
    once.upsertPolicy(GUARD);
  });
  assert.deepEqual(events.state(), once.state());
  const state = once.state();
  const id = [...state.policies.keys()][0];
  assert.deepEqual(state.addressSets.get(`${id}_subj`)!.v4, ['198.18.0.10', '198.18.0.12']);
  const named = [...state.namedPortSets.values()][0];
  assert.deepEqual(named.v4, [{ ip: '198.18.0.11', protocol: 'TCP', port: 5432 }]);
  const nodes = [...state.addressSets.values()].find((s) => s.id.startsWith('cd'))!;
  assert.deepEqual(nodes.v4, ['198.18.5.1']);
});

test('in the table: a label change is elements only, an edit rewrites its own chain, a priority change rewrites the entry chain, the last policy gone restores the table', () => {
  const { logger } = recordingLogger('silent');
  const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger });
  const withoutTiers = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger });
  const objs = { namespaces: [ns('x'), ns('y')], pods: [pod('x', 'a', '198.18.0.10', { app: 'web' }), pod('y', 'b', '198.18.0.20', { app: 'web' })] };
  withoutTiers.start(snapshot(objs));
  component.start(snapshot({ ...objs, cnps: [GUARD] }));
  const chains = () => [...component.desired.chains.keys()].filter((n) => n.startsWith('cnp_')).sort();
  assert.ok(chains().includes('cnp_admin_out'));
  const change = (c: ClusterChange) => {
    const scope = new ChangeScope();
    component.apply(c, scope);
    return scope;
  };

  // y/b joins the subject by its namespace's label: two elements of the subject set.
  let scope = change({ kind: 'Namespace', type: 'upsert', key: 'y', object: ns('y', { ns: 'x' }) });
  assert.deepEqual([...scope.chains], []);
  assert.deepEqual([...scope.elements.keys()].filter((s) => s.includes('_subj_')).sort().length, 2);
  assert.deepEqual([...scope.sets], []);

  // A second Admin policy after it, then before it: its chain and the tier's entry chain, which
  // jumps to each policy in order; the first policy's chain is not touched.
  const second = cnp('second', { tier: 'Admin', priority: 20, subject: { namespaces: {} }, egress: [{ action: 'Pass', to: [{ namespaces: {} }] }] });
  scope = change({ kind: 'ClusterNetworkPolicy', type: 'upsert', key: 'second', object: second });
  const guardOut = chains().find((n) => n !== 'cnp_admin_out' && n.endsWith('_out') && component.desired.chains.get(n)!.rules.some((r) => r.comment?.includes('guard')))!;
  const secondOut = chains().find((n) => n.endsWith('_out') && component.desired.chains.get(n)!.rules.some((r) => r.comment?.includes('second')))!;
  assert.deepEqual([...scope.chains].sort(), ['cnp_admin_out', secondOut].sort(), 'the new chain, and the entry chain now jumping to it');
  assert.ok(!scope.chains.has(guardOut));
  scope = change({ kind: 'ClusterNetworkPolicy', type: 'upsert', key: 'second', object: { ...second, priority: 1 } });
  assert.deepEqual([...scope.chains].sort(), ['cnp_admin_out', secondOut].sort(), 'the entry chain in the new order; the other policy chain untouched');

  // Deleting both: the table is NetworkPolicy's alone again, base chains included.
  change({ kind: 'ClusterNetworkPolicy', type: 'delete', key: 'second', object: second });
  change({ kind: 'ClusterNetworkPolicy', type: 'delete', key: 'guard', object: GUARD });
  change({ kind: 'Namespace', type: 'upsert', key: 'y', object: ns('y') });
  assert.deepEqual([...component.desired.chains.keys()].sort(), [...withoutTiers.desired.chains.keys()].sort());
  assert.deepEqual([...component.desired.sets.keys()].sort(), [...withoutTiers.desired.sets.keys()].sort());
  assert.deepEqual(component.desired.chains.get('forward_egress'), withoutTiers.desired.chains.get('forward_egress'));
});

test('while no ClusterNetworkPolicy exists the tiers index nothing; the first one loads what changed meanwhile, as if loaded at once', () => {
  const { logger } = recordingLogger('silent');
  const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger });
  const sqlPod = pod('x', 'b', '198.18.0.11', { app: 'db' }, { spec: { containers: [{ name: 'c', ports: [{ name: 'sql', containerPort: 5432 }] }] } });
  component.start(snapshot({ namespaces: [ns('x'), ns('y')], pods: [pod('x', 'a', '198.18.0.10', { app: 'web' }), pod('y', 'gone', '198.18.0.30', { app: 'web' })], nodes: [node('n1', { role: 'db' }, '198.18.5.1')] }));
  const change = (c: ClusterChange) => component.apply(c, new ChangeScope());
  change({ kind: 'Pod', type: 'upsert', key: 'x/b', object: sqlPod });
  change({ kind: 'Pod', type: 'upsert', key: 'x/c', object: pod('x', 'c', '198.18.0.12', { app: 'web' }) });
  change({ kind: 'Pod', type: 'delete', key: 'y/gone', object: pod('y', 'gone', '198.18.0.30', { app: 'web' }) });
  change({ kind: 'Namespace', type: 'upsert', key: 'y', object: ns('y', { ns: 'x' }) });
  change({ kind: 'Node', type: 'upsert', key: 'n2', object: node('n2', { role: 'db' }, '198.18.5.2') });
  change({ kind: 'Node', type: 'delete', key: 'n1', object: node('n1', { role: 'db' }, '198.18.5.1') });
  assert.equal(component.tiers.indexing, false, 'pod, namespace and node changes only kept while no policy exists');
  assert.equal(component.tiers.engine.state().addressSets.size, 0);

  change({ kind: 'ClusterNetworkPolicy', type: 'upsert', key: 'guard', object: GUARD });
  assert.equal(component.tiers.indexing, true);
  const once = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger });
  once.start(snapshot({ namespaces: [ns('x'), ns('y', { ns: 'x' })], pods: [pod('x', 'a', '198.18.0.10', { app: 'web' }), sqlPod, pod('x', 'c', '198.18.0.12', { app: 'web' })], nodes: [node('n2', { role: 'db' }, '198.18.5.2')], cnps: [GUARD] }));
  assert.deepEqual(component.tiers.engine.state(), once.tiers.engine.state());
  assert.deepEqual(component.desired, once.desired);
  const nodes = [...component.tiers.engine.state().addressSets.values()].find((s) => s.id.startsWith('cd'))!;
  assert.deepEqual(nodes.v4, ['198.18.5.2'], 'the node added while dormant, not the one deleted');

  // From then on the engine indexes every change (a policy deleted keeps it so).
  change({ kind: 'Pod', type: 'upsert', key: 'x/d', object: pod('x', 'd', '198.18.0.13', { app: 'web' }) });
  const subject = [...component.tiers.engine.state().addressSets.values()].find((s) => s.id.endsWith('_subj'))!;
  assert.deepEqual(subject.v4, ['198.18.0.10', '198.18.0.12', '198.18.0.13']);
});
