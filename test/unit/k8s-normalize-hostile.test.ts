/** Hostile and careless input to normalization (issue 11, defects 4 and 7): a NetworkPolicy that
 * cannot be understood isolates what it could select, in the directions it could name, and says
 * so (object and field); every number is range-checked with a named error. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { FailClosedError, K8sObjectError } from '../../src/k8s/errors';
import type { NetworkPolicyInfo, PodInfo } from '../../src/k8s/model';
import { normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { normalizers } from '../../src/k8s/normalizers';
import { compileFull } from '../../src/policy/engine/compile';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function policy(spec: unknown, apiVersion = 'networking.k8s.io/v1'): Json {
  return { apiVersion, kind: 'NetworkPolicy', metadata: { name: 'p', namespace: 'x' }, spec };
}

function failClosed(raw: unknown): FailClosedError<NetworkPolicyInfo> {
  try {
    normalizeNetworkPolicy(raw);
  } catch (err) {
    assert.ok(err instanceof FailClosedError, `expected a FailClosedError, got ${String(err)}`);
    return err as FailClosedError<NetworkPolicyInfo>;
  }
  assert.fail('expected a FailClosedError');
}

/** Through the table the sources use: the problem is reported and the replacement returned. */
function viaSource(raw: unknown): { object: NetworkPolicyInfo; problems: K8sObjectError[] } {
  const problems: K8sObjectError[] = [];
  const object = normalizers.NetworkPolicy(raw, { onProblem: (e) => problems.push(e) }) as NetworkPolicyInfo;
  return { object, problems };
}

test('an unreadable spec or podSelector isolates every pod of the namespace, both directions, allowing nothing', () => {
  const cases: [unknown, string][] = [
    [[{ podSelector: {} }], 'spec'],
    ['deny', 'spec'],
    [{ podSelector: 'app=web', ingress: [{}] }, 'spec.podSelector'],
    [{ podSelector: [], ingress: [{}] }, 'spec.podSelector'],
    [{ podSelector: { matchLabels: ['app', 'web'] }, ingress: [{}] }, 'spec.podSelector.matchLabels'],
    [{ podSelector: { matchExpressions: { key: 'app', operator: 'In', values: ['web'] } }, ingress: [{}] }, 'spec.podSelector.matchExpressions'],
  ];
  for (const [spec, field] of cases) {
    const err = failClosed(policy(spec));
    assert.equal(err.object, 'NetworkPolicy x/p');
    assert.equal(err.field, field, err.message);
    assert.match(err.message, /failing closed: every pod of its namespace isolated \(Ingress, Egress\), allowing nothing/);
    assert.deepEqual(err.replacement, {
      namespace: 'x',
      name: 'p',
      podSelector: {},
      policyTypes: ['Ingress', 'Egress'],
      problems: [{ field, message: err.problem.replace(/; failing closed.*$/, '') }],
    });
    const { object, problems } = viaSource(policy(spec));
    assert.deepEqual(object, err.replacement);
    assert.deepEqual(problems.map((e) => e.field), [field]);
  }
});

test('what can be read of the selector and policyTypes is kept: the selection only widens', () => {
  const err = failClosed(
    policy({
      podSelector: { matchLabels: { app: 'web', pod: ['a'] }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['db'] }, { key: 7, operator: 'In' }] },
      policyTypes: ['Egress'],
      egress: [{ to: [{ ipBlock: { cidr: '0.0.0.0/0' } }] }],
    }),
  );
  assert.equal(err.field, 'spec.podSelector.matchLabels.pod');
  assert.deepEqual(err.replacement.podSelector, { matchLabels: { app: 'web' }, matchExpressions: [{ key: 'tier', operator: 'In', values: ['db'] }] });
  assert.deepEqual(err.replacement.policyTypes, ['Egress'], 'the direction it names');
  assert.equal(err.replacement.egress, undefined, 'its rules allow nothing');
  assert.match(err.message, /the pods it could select isolated \(Egress\)/);
  // Unknown policyTypes: both directions.
  const both = failClosed(policy({ podSelector: 'x', policyTypes: ['Ingres'] }));
  assert.deepEqual(both.replacement.policyTypes, ['Ingress', 'Egress']);
});

test('identity errors are still thrown as they are (nothing can be named)', () => {
  for (const raw of [{ kind: 'NetworkPolicy', metadata: { namespace: 'x' }, spec: [] }, { metadata: { name: 'p' }, spec: [] }, 'nope']) {
    assert.throws(() => normalizers.NetworkPolicy(raw, { onProblem: () => undefined }), (e) => e instanceof K8sObjectError && !(e instanceof FailClosedError));
  }
});

test('the compiled replacement isolates every pod of its namespace and allows nothing; the error is listed', () => {
  const pods: PodInfo[] = ['a', 'b'].map((name, i) => ({ namespace: 'x', name, labels: { pod: name }, nodeName: 'n', phase: 'Running', ips: [`198.18.0.${i + 2}`], hostNetwork: false, ports: [] }));
  const other: PodInfo = { ...pods[0], namespace: 'y' };
  const { object } = viaSource(policy([]));
  const ir = compileFull({ pods: [...pods, other], namespaces: [], policies: [object] }, 'n');
  assert.deepEqual([...ir.targets.keys()].sort(), ['x/a', 'x/b']);
  for (const t of ir.targets.values()) {
    assert.equal(t.ingress?.length, 1);
    assert.equal(t.egress?.length, 1);
  }
  const compiled = [...ir.policies.values()][0];
  assert.deepEqual(compiled.ingress, []);
  assert.deepEqual(compiled.egress, []);
  assert.deepEqual(compiled.errors.map((e) => e.field), ['spec']);
});

test('policy ports and endPorts are range-checked at normalization, with a named error; the rule allows nothing', () => {
  for (const [port, field, value] of [
    [{ port: 0 }, 'port', 0],
    [{ port: 65536 }, 'port', 65536],
    [{ port: 99999999 }, 'port', 99999999],
    [{ port: -80 }, 'port', -80],
    [{ port: 80, endPort: 70000 }, 'endPort', 70000],
  ] as const) {
    const problems: K8sObjectError[] = [];
    const n = normalizeNetworkPolicy(policy({ podSelector: {}, ingress: [{ ports: [port] }, {}] }), { onProblem: (e) => problems.push(e) });
    assert.deepEqual(n.ingress, [{}], 'the broken rule is dropped, the other stays');
    assert.deepEqual(problems.map((e) => [e.object, e.field]), [['NetworkPolicy x/p', `spec.ingress[0].ports[0].${field}`]]);
    assert.match(problems[0].problem, new RegExp(`${value} is out of range \\(expected a port number 1-65535\\)`));
    assert.deepEqual(n.problems, [{ field: `spec.ingress[0].ports[0].${field}`, message: problems[0].problem }]);
    assert.throws(() => normalizeNetworkPolicy(policy({ podSelector: {}, ingress: [{ ports: [port] }] })), /out of range/);
  }
  const fraction = normalizeNetworkPolicy(policy({ podSelector: {}, ingress: [{ ports: [{ port: 80.5 }] }] }), { onProblem: () => undefined });
  assert.deepEqual(fraction.ingress, []);
});

test('container ports out of range or of an unknown protocol are left out, named; the pod stays', () => {
  const raw = {
    kind: 'Pod',
    metadata: { name: 'a', namespace: 'x' },
    spec: {
      containers: [
        {
          ports: [
            { name: 'huge', containerPort: 99999999 },
            { name: 'zero', containerPort: 0 },
            { name: 'icmp', containerPort: 7, protocol: 'ICMP' },
            { name: 'http', containerPort: 80 },
          ],
        },
      ],
    },
    status: { podIP: '198.18.0.2' },
  };
  const problems: K8sObjectError[] = [];
  const pod = normalizePod(raw, { onProblem: (e) => problems.push(e) });
  assert.deepEqual(pod.ports, [{ name: 'http', containerPort: 80, protocol: 'TCP' }]);
  assert.deepEqual(problems.map((e) => e.field), ['spec.containers[0].ports[0].containerPort', 'spec.containers[0].ports[1].containerPort', 'spec.containers[0].ports[2].protocol']);
  assert.ok(problems.every((e) => e.object === 'Pod x/a'));
  // Without a problem sink the first is thrown, named.
  assert.throws(() => normalizePod(raw), (e) => e instanceof K8sObjectError && e.field === 'spec.containers[0].ports[0].containerPort');
});

test("YAML's explicit tags (!!set, !!omap, !!binary, !!timestamp) are not objects: a peer is never widened by one", () => {
  for (const value of [new Set(['app']), new Map([['app', 'client']]), Buffer.from('app'), new Date(0)]) {
    const problems: K8sObjectError[] = [];
    const n = normalizeNetworkPolicy(policy({ podSelector: {}, ingress: [{ from: [{ podSelector: value }] }, { from: [{ podSelector: { matchLabels: value } }] }] }), {
      onProblem: (e) => problems.push(e),
    });
    assert.deepEqual(n.ingress, [], 'both rules allow nothing (never "all pods")');
    assert.deepEqual(problems.map((e) => e.field), ['spec.ingress[0].from[0].podSelector', 'spec.ingress[1].from[0].podSelector.matchLabels']);
    // As the policy's own selector: it fails closed.
    assert.ok(failClosed(policy({ podSelector: value })).replacement.policyTypes!.length === 2);
  }
});
