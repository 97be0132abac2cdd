/** The node composition without root or kernel: which features the option values enable, what
 * they read, which tables they own, and the desired tables they build for a snapshot (what
 * render prints and verify compares), against each feature's component built directly. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FEATURES } from '../../src/node/features';
import { desiredComponents, policyOf } from '../../src/node/desired';
import { enabledFeatures, kindsOf, ownedTables } from '../../src/node/enabled';
import { NODE_OPTIONS } from '../../src/node/run';
import type { ClusterSnapshot } from '../../src/k8s/source';
import type { NamespaceInfo, NetworkPolicyInfo, PodInfo } from '../../src/k8s/model';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { PolicyComponent } from '../../src/policy/component';
import { createLogger } from '../../src/log';
import { formatTable } from '../../src/nft/format';
import { modelToContents, RulesetModel } from '../../src/ruleset/model';
import { namespace, NODE, pod, policy } from '../agent/fixtures';

const text = (m: RulesetModel) => formatTable(modelToContents(m));

function snapshotOf(objects: Record<string, any>[]): ClusterSnapshot {
  const namespaces = new Map<string, NamespaceInfo>();
  const pods = new Map<string, PodInfo>();
  const policies = new Map<string, NetworkPolicyInfo>();
  for (const o of objects) {
    if (o.kind === 'Namespace') namespaces.set(o.metadata.name, normalizeNamespace(o));
    else if (o.kind === 'Pod') pods.set(`${o.metadata.namespace}/${o.metadata.name}`, normalizePod(o));
    else policies.set(`${o.metadata.namespace}/${o.metadata.name}`, normalizeNetworkPolicy(o));
  }
  return { pods, namespaces, policies, services: new Map(), endpointSlices: new Map(), nodes: new Map() };
}

const CLUSTER = [
  namespace('shop'),
  pod('shop', 'web', '198.18.0.2', { app: 'web' }),
  pod('shop', 'db', '198.18.0.3', { app: 'db' }),
  policy('shop', 'db-from-web', { podSelector: { matchLabels: { app: 'db' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }] }),
];

test('the option values enable features in registry order; kinds are their union, each once', () => {
  assert.deepEqual(FEATURES.map((f) => f.name), ['policy', 'droplog', 'proxy', 'ipam']);
  const all = enabledFeatures({ proxy: true, 'log-drops': true, ipam: true, kubeconfig: '/k' });
  assert.deepEqual(all.map((e) => e.feature.name), ['policy', 'droplog', 'proxy', 'ipam']);
  assert.deepEqual(kindsOf(all), ['Namespace', 'Pod', 'NetworkPolicy', 'Node', 'ClusterNetworkPolicy', 'Service', 'EndpointSlice']);
  assert.deepEqual(enabledFeatures({}).map((e) => e.feature.name), ['policy']);
  // The drop log follows policy: with --no-policy there are no deny rules to log.
  assert.deepEqual(enabledFeatures({ 'no-policy': true, proxy: true, 'log-drops': true }).map((e) => e.feature.name), ['proxy']);
});

test('contradicting values are refused naming the flag, before anything runs', () => {
  assert.throws(() => enabledFeatures({ 'cluster-cidr': '198.18.0.0/16' }), /--cluster-cidr applies to --proxy only/);
  assert.throws(() => enabledFeatures({ 'log-group': '7' }), /--log-group needs --log-drops/);
  assert.throws(() => enabledFeatures({ ipam: true, manifests: '/m' }), /--ipam needs an API server/);
  assert.throws(() => enabledFeatures({ 'deny-action': 'allow' }), /--deny-action: "allow" is not drop or reject/);
});

test('every table a feature can own is named by the values, on or off (cleanup, uninstall)', () => {
  assert.deepEqual(ownedTables({}), [{ family: 'inet', name: 'nfkube' }, { family: 'inet', name: 'nfkube-proxy' }]);
  assert.deepEqual(ownedTables({ table: 't1', 'proxy-table': 't2' }), [{ family: 'inet', name: 't1' }, { family: 'inet', name: 't2' }]);
});

test("the features' options and the node's are one table: no option is declared twice with another meaning", () => {
  const seen = new Map<string, string>();
  for (const table of [NODE_OPTIONS, ...FEATURES.map((f) => f.options)]) {
    for (const [name, o] of Object.entries(table)) {
      const was = seen.get(name);
      assert.ok(was === undefined || was === o.type, `--${name} declared as ${was} and ${o.type}`);
      seen.set(name, o.type);
    }
  }
});

test('the desired policy table is the one the policy component builds for the same snapshot', () => {
  const snap = snapshotOf(CLUSTER);
  const values = { 'node-name': NODE, 'deny-action': 'reject' };
  const components = desiredComponents(enabledFeatures(values), snap, NODE, values);
  assert.deepEqual(components.map((c) => c.name), ['policy']);
  const direct = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'reject', logger: createLogger('silent') });
  direct.start(snap);
  assert.equal(text(components[0].desired), text(direct.desired));
  assert.match(text(components[0].desired), /reject/);
  assert.equal(policyOf(components)?.state().targets.size, direct.state().targets.size);
});

test('input problems reach the report, naming the object and field, while the rest is still built', () => {
  const bad = policy('shop', 'bad-port', { podSelector: {}, ingress: [{ ports: [{ port: 'no-such-port-name-that-is-far-too-long', protocol: 'TCP' }] }] });
  const problems: { object: string; field?: string; message: string }[] = [];
  const values = { 'node-name': NODE };
  const [component] = desiredComponents(enabledFeatures(values), snapshotOf([...CLUSTER, bad]), NODE, values, { problem: (p) => problems.push(p) });
  assert.ok(problems.length > 0, 'the bad rule entry is reported');
  assert.equal(problems[0].object, 'NetworkPolicy shop/bad-port');
  assert.match(problems[0].field ?? '', /^spec\.ingress\[0\]\.ports\[0\]/);
  assert.ok(component.desired.chains.size > 0, 'the table is still built, the bad entry failing closed');
});
