/** The typed equality the engine uses in place of comparing JSON texts: a policy given again
 * unchanged costs nothing, anything compilation reads (the order of matchLabels included) makes
 * it compile again, and hostile values of the wrong type are equal only to themselves. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NetworkPolicyInfo } from '../../src/k8s/model';
import { compileFull } from '../../src/policy/engine/compile';
import { PolicyEngine } from '../../src/policy/engine/engine';
import { sameCompiledPolicy, samePolicyInput } from '../../src/policy/engine/equality';
import { isEmptyDelta } from '../../src/policy/engine/ir';
import { compilePolicy } from '../../src/policy/engine/rules';

const NODE = 'node-a';

function policy(): NetworkPolicyInfo {
  return {
    namespace: 'prod',
    name: 'web',
    podSelector: { matchLabels: { app: 'web', tier: 'front' }, matchExpressions: [{ key: 'env', operator: 'In', values: ['a', 'b'] }] },
    policyTypes: ['Ingress', 'Egress'],
    ingress: [
      {
        ports: [{ protocol: 'TCP', port: 80 }, { port: 'http' }, { protocol: 'UDP', port: 1000, endPort: 2000 }],
        peers: [{ podSelector: { matchLabels: { app: 'api' } } }, { namespaceSelector: {} }, { ipBlock: { cidr: '198.18.0.0/16', except: ['198.18.1.0/24'] } }],
      },
    ],
    egress: [{ peers: [{ ipBlock: { cidr: '2001:db8::/32' } }] }],
    problems: [{ field: 'spec.egress[1]', message: 'dropped' }],
  };
}

test('samePolicyInput: a deep copy is the same; each field the compiler reads tells them apart', () => {
  const a = policy();
  assert.ok(samePolicyInput(a, structuredClone(a)));
  const changes: Array<(p: NetworkPolicyInfo) => void> = [
    (p) => (p.name = 'other'),
    (p) => (p.podSelector.matchLabels!.tier = 'back'),
    (p) => (p.podSelector.matchExpressions![0].values = ['a']),
    (p) => (p.policyTypes = ['Ingress']),
    (p) => (p.ingress![0].ports![1].port = 'https'),
    (p) => (p.ingress![0].ports![2].endPort = 2001),
    (p) => (p.ingress![0].peers![0].podSelector = { matchLabels: { app: 'api2' } }),
    (p) => (p.ingress![0].peers![2].ipBlock!.except = []),
    (p) => (p.egress = undefined),
    (p) => (p.problems = undefined),
  ];
  changes.forEach((change, i) => {
    const b = structuredClone(a);
    change(b);
    assert.equal(samePolicyInput(a, b), false, `change ${i}`);
  });
});

test('samePolicyInput: matchLabels in another order differ (the order of their errors follows it); absent equals undefined', () => {
  const a = policy();
  const reordered = structuredClone(a);
  reordered.podSelector.matchLabels = { tier: 'front', app: 'web' };
  assert.equal(samePolicyInput(a, reordered), false);
  const withUndefined = { ...structuredClone(a), policyTypes: undefined };
  const without = structuredClone(a);
  delete without.policyTypes;
  assert.ok(samePolicyInput(withUndefined, without));
});

test('samePolicyInput: values of a type the model does not allow are equal only to themselves', () => {
  const odd = { cidr: 5 } as unknown as { cidr: string };
  const a: NetworkPolicyInfo = { namespace: 'n', name: 'p', podSelector: {}, ingress: [{ peers: [{ ipBlock: odd }] }] };
  assert.ok(samePolicyInput(a, { ...a }));
  const objectRules = { ...a, ingress: {} as unknown as NetworkPolicyInfo['ingress'] };
  assert.equal(samePolicyInput(objectRules, { ...a, ingress: {} as unknown as NetworkPolicyInfo['ingress'] }), false);
  assert.ok(samePolicyInput(objectRules, { ...objectRules }));
});

test('sameCompiledPolicy: two compilations of one policy are the same, a changed rule is not', () => {
  const a = compilePolicy(policy()).compiled;
  assert.ok(sameCompiledPolicy(a, compilePolicy(policy()).compiled));
  const p = policy();
  p.ingress![0].ports![0].port = 81;
  assert.equal(sameCompiledPolicy(a, compilePolicy(p).compiled), false);
  const q = policy();
  q.ingress![0].peers = undefined;
  assert.equal(sameCompiledPolicy(a, compilePolicy(q).compiled), false);
});

test('engine: a policy given again as an equal copy changes nothing; reordered broken matchLabels recompile to compileFull', () => {
  const engine = new PolicyEngine(NODE);
  const pod = { namespace: 'prod', name: 'w', labels: { app: 'web' }, nodeName: NODE, phase: 'Running', ips: ['198.18.0.5'], hostNetwork: false, ports: [] };
  engine.upsertPod(pod);
  engine.upsertPolicy(policy());
  assert.ok(isEmptyDelta(engine.upsertPolicy(structuredClone(policy()))));

  const broken = (labels: Record<string, unknown>): NetworkPolicyInfo => ({
    namespace: 'prod',
    name: 'broken',
    podSelector: { matchLabels: labels as Record<string, string> },
  });
  engine.upsertPolicy(broken({ a: 1, b: 2 }));
  const reordered = broken({ b: 2, a: 1 });
  const delta = engine.upsertPolicy(reordered);
  assert.equal(delta.policies.upsert.length, 1, 'the errors changed order: the policy is re-sent');
  const inputs = { pods: [pod], namespaces: [], policies: [policy(), reordered] };
  assert.deepStrictEqual(engine.state(), compileFull(inputs, NODE));
});
