/** Normalization of Pods, Namespaces and NetworkPolicies from raw JSON (watch, manifests) and from
 * client-node's typed models (list), which must give identical results. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
// The deserializer client-node applies to LIST responses; not re-exported by the package index.
import { ObjectSerializer } from '@kubernetes/client-node/dist/gen/models/ObjectSerializer.js';
import { K8sObjectError } from '../../src/k8s/errors';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod, objectId } from '../../src/k8s/normalize';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

const typed = (raw: Json, type: string): unknown => ObjectSerializer.deserialize(structuredClone(raw), type, '');

function rawPod(): Json {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'a',
      namespace: 'x',
      labels: { pod: 'a', app: 'web' },
      annotations: { note: 'ignored' },
      resourceVersion: '17',
      creationTimestamp: '2024-05-01T10:00:00Z',
    },
    spec: {
      nodeName: 'node-1',
      containers: [
        { name: 'web', image: 'nginx', ports: [{ name: 'http', containerPort: 80 }, { containerPort: 53, protocol: 'UDP' }] },
        { name: 'side', image: 'busybox' },
      ],
    },
    status: {
      phase: 'Running',
      podIP: '198.18.0.10',
      podIPs: [{ ip: '198.18.0.10' }, { ip: '2001:db8::10' }],
      conditions: [{ type: 'Ready', status: 'True', lastTransitionTime: '2024-05-01T10:00:05Z' }],
      startTime: '2024-05-01T10:00:01Z',
    },
  };
}

function rawPolicy(): Json {
  return {
    apiVersion: 'networking.k8s.io/v1',
    kind: 'NetworkPolicy',
    metadata: { name: 'p', namespace: 'x', creationTimestamp: '2024-05-01T10:00:00Z' },
    spec: {
      podSelector: { matchLabels: { pod: 'a' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['db'] }] },
      policyTypes: ['Ingress', 'Egress'],
      ingress: [
        {
          from: [
            { namespaceSelector: { matchExpressions: [{ key: 'ns', operator: 'Exists' }] }, podSelector: { matchLabels: { pod: 'b' } } },
            { ipBlock: { cidr: '198.18.0.0/15', except: ['198.18.2.0/24'] } },
          ],
          ports: [{ port: 'http' }, { protocol: 'TCP', port: 8000, endPort: 8080 }],
        },
        { from: [] },
      ],
      egress: [{ to: [{ ipBlock: { cidr: '2001:db8::/32' } }], ports: [{ protocol: 'SCTP', port: 9 }] }, { ports: [] }],
    },
  };
}

const expectedPolicy = {
  namespace: 'x',
  name: 'p',
  podSelector: { matchLabels: { pod: 'a' }, matchExpressions: [{ key: 'tier', operator: 'NotIn', values: ['db'] }] },
  policyTypes: ['Ingress', 'Egress'],
  ingress: [
    {
      ports: [{ protocol: 'TCP', port: 'http' }, { protocol: 'TCP', port: 8000, endPort: 8080 }],
      peers: [
        { podSelector: { matchLabels: { pod: 'b' } }, namespaceSelector: { matchExpressions: [{ key: 'ns', operator: 'Exists' }] } },
        { ipBlock: { cidr: '198.18.0.0/15', except: ['198.18.2.0/24'] } },
      ],
    },
    {},
  ],
  egress: [{ ports: [{ protocol: 'SCTP', port: 9 }], peers: [{ ipBlock: { cidr: '2001:db8::/32' } }] }, {}],
};

function problem(fn: () => unknown): K8sObjectError {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof K8sObjectError, `expected a K8sObjectError, got ${String(err)}`);
    return err;
  }
  assert.fail('expected an error');
}

describe('normalizePod', () => {
  const expected = {
    namespace: 'x',
    name: 'a',
    labels: { app: 'web', pod: 'a' },
    nodeName: 'node-1',
    phase: 'Running',
    ips: ['198.18.0.10', '2001:db8::10'],
    hostNetwork: false,
    ports: [
      { name: 'http', containerPort: 80, protocol: 'TCP' },
      { containerPort: 53, protocol: 'UDP' },
    ],
  };

  test('raw JSON and the typed list model give the same result', () => {
    assert.deepEqual(normalizePod(rawPod()), expected);
    const model = typed(rawPod(), 'V1Pod') as { metadata: { creationTimestamp: unknown } };
    assert.ok(model.metadata.creationTimestamp instanceof Date, 'really the typed form');
    assert.deepEqual(normalizePod(model), expected);
  });

  test('podIP alone, no IP yet, hostNetwork, no containers', () => {
    const p = rawPod();
    delete p.status.podIPs;
    assert.deepEqual(normalizePod(p).ips, ['198.18.0.10']);
    p.status = { phase: 'Pending' };
    p.spec = { hostNetwork: true };
    assert.deepEqual(normalizePod(p), {
      namespace: 'x',
      name: 'a',
      labels: { app: 'web', pod: 'a' },
      phase: 'Pending',
      ips: [],
      hostNetwork: true,
      ports: [],
    });
  });

  test('what enforcement ignores does not change the result', () => {
    const p = rawPod();
    p.metadata.annotations = { other: 'x' };
    p.metadata.resourceVersion = '99';
    p.status.conditions[0].lastProbeTime = '2024-05-01T11:00:00Z';
    p.spec.containers[0].image = 'nginx:2';
    assert.deepEqual(normalizePod(p), normalizePod(rawPod()));
  });

  test('errors name the object and the field', () => {
    const cases: [(p: Json) => void, string, string][] = [
      [(p) => (p.metadata.labels.version = 1), 'Pod x/a', 'metadata.labels.version'],
      [(p) => (p.status.podIPs[1].ip = '2001:db8::zz'), 'Pod x/a', 'status.podIPs[1].ip'],
      [(p) => (p.status.podIPs = '198.18.0.1'), 'Pod x/a', 'status.podIPs'],
      [(p) => delete p.spec.containers[0].ports[1].containerPort, 'Pod x/a', 'spec.containers[0].ports[1].containerPort'],
      [(p) => (p.spec.hostNetwork = 'yes'), 'Pod x/a', 'spec.hostNetwork'],
      [(p) => delete p.metadata.name, 'Pod (unnamed)', 'metadata.name'],
      [(p) => delete p.metadata.namespace, 'Pod a', 'metadata.namespace'],
    ];
    for (const [breakIt, object, field] of cases) {
      const p = rawPod();
      breakIt(p);
      const err = problem(() => normalizePod(p));
      assert.equal(err.object, object, err.message);
      assert.equal(err.field, field, err.message);
      assert.ok(err.message.startsWith(`${object}: ${field}: `), err.message);
    }
  });

  test('a default namespace for manifests without one', () => {
    const p = rawPod();
    delete p.metadata.namespace;
    assert.equal(normalizePod(p, { defaultNamespace: 'default' }).namespace, 'default');
    assert.equal(objectId('Pod', p, { defaultNamespace: 'default' }).key, 'default/a');
  });
});

describe('normalizeNamespace', () => {
  test('name and labels, from both forms', () => {
    const raw = { kind: 'Namespace', metadata: { name: 'x', labels: { 'kubernetes.io/metadata.name': 'x' }, annotations: { a: 'b' } }, status: { phase: 'Active' } };
    const expected = { name: 'x', labels: { 'kubernetes.io/metadata.name': 'x' } };
    assert.deepEqual(normalizeNamespace(raw), expected);
    assert.deepEqual(normalizeNamespace(typed(raw, 'V1Namespace')), expected);
    assert.deepEqual(normalizeNamespace({ metadata: { name: 'y' } }), { name: 'y', labels: {} });
    assert.equal(objectId('Namespace', raw).key, 'x');
  });
});

describe('normalizeNetworkPolicy', () => {
  test('raw JSON and the typed list model (`_from`) give the same result', () => {
    assert.deepEqual(normalizeNetworkPolicy(rawPolicy()), expectedPolicy);
    const model = typed(rawPolicy(), 'V1NetworkPolicy') as { spec: { ingress: Json[] } };
    assert.ok('_from' in model.spec.ingress[0], 'really the typed form');
    assert.deepEqual(normalizeNetworkPolicy(model), expectedPolicy);
  });

  test('one form for "everything": empty lists and selectors', () => {
    const p = rawPolicy();
    p.spec = { podSelector: { matchLabels: {}, matchExpressions: [] }, policyTypes: [], ingress: [{ from: [], ports: [] }] };
    assert.deepEqual(normalizeNetworkPolicy(p), { namespace: 'x', name: 'p', podSelector: {}, ingress: [{}] });
    p.spec = {};
    assert.deepEqual(normalizeNetworkPolicy(p), { namespace: 'x', name: 'p', podSelector: {} });
    delete p.spec;
    assert.deepEqual(normalizeNetworkPolicy(p), { namespace: 'x', name: 'p', podSelector: {} });
  });

  test('values are kept as written for the compiler to judge', () => {
    const p = rawPolicy();
    p.spec.ingress[0].from[1].ipBlock.cidr = '300.1.1.1/40';
    p.spec.ingress[0].ports[0] = { protocol: 'ICMP', port: '80' };
    p.spec.podSelector.matchExpressions[0].operator = 'Near';
    const n = normalizeNetworkPolicy(p);
    assert.equal(n.ingress![0].peers![1].ipBlock!.cidr, '300.1.1.1/40');
    assert.deepEqual(n.ingress![0].ports![0], { protocol: 'ICMP', port: '80' });
    assert.equal(n.podSelector.matchExpressions![0].operator, 'Near');
  });

  test('a malformed rule is dropped (it allows nothing) and reported', () => {
    const p = rawPolicy();
    p.spec.ingress[0].from[1].ipBlock.cidr = 42;
    const problems: K8sObjectError[] = [];
    const n = normalizeNetworkPolicy(p, { onProblem: (e) => problems.push(e) });
    assert.deepEqual(n.ingress, [{}]);
    assert.deepEqual(
      problems.map((e) => [e.object, e.field]),
      [['NetworkPolicy x/p', 'spec.ingress[0].from[1].ipBlock.cidr']],
    );
    // Without a problem sink the first problem is thrown.
    assert.equal(problem(() => normalizeNetworkPolicy(p)).field, 'spec.ingress[0].from[1].ipBlock.cidr');
  });

  test('malformed rule lists and policyTypes fail closed', () => {
    const problems: K8sObjectError[] = [];
    const onProblem = (e: K8sObjectError) => problems.push(e);
    const p = rawPolicy();
    delete p.spec.policyTypes;
    p.spec.egress = { to: [] };
    const n = normalizeNetworkPolicy(p, { onProblem });
    assert.deepEqual(n.egress, []);
    assert.deepEqual(n.policyTypes, ['Ingress', 'Egress'], 'a malformed egress section still isolates egress');
    p.spec.ingress = 'all';
    p.spec.policyTypes = 'Ingress';
    const m = normalizeNetworkPolicy(p, { onProblem });
    assert.deepEqual(m.ingress, []);
    assert.deepEqual(m.policyTypes, ['Ingress', 'Egress']);
    assert.deepEqual(
      problems.map((e) => e.field),
      ['spec.egress', 'spec.policyTypes', 'spec.ingress', 'spec.egress'],
    );
  });

  test('peers: empty, or ipBlock mixed with a selector, are errors', () => {
    const p = rawPolicy();
    p.spec.ingress[0].from[0] = {};
    assert.equal(problem(() => normalizeNetworkPolicy(p)).field, 'spec.ingress[0].from[0]');
    p.spec.ingress[0].from[0] = { ipBlock: { cidr: '198.18.0.0/16' }, podSelector: {} };
    assert.equal(problem(() => normalizeNetworkPolicy(p)).field, 'spec.ingress[0].from[0].ipBlock');
    p.spec.ingress[0].from[0] = { podSelector: { matchExpressions: [{ key: 'a', operator: 'In', values: [1] }] } };
    assert.equal(problem(() => normalizeNetworkPolicy(p)).field, 'spec.ingress[0].from[0].podSelector.matchExpressions[0].values[0]');
  });

  test('a malformed podSelector or identity is fatal: the targets are unknown', () => {
    const p = rawPolicy();
    p.spec.podSelector = { matchLabels: { pod: ['a'] } };
    const err = problem(() => normalizeNetworkPolicy(p, { onProblem: () => assert.fail('not survivable') }));
    assert.equal(err.field, 'spec.podSelector.matchLabels.pod');
    assert.equal(problem(() => normalizeNetworkPolicy({ metadata: { name: 'p' } })).field, 'metadata.namespace');
    assert.equal(problem(() => normalizeNetworkPolicy('nope')).field, '(object)');
  });
});
