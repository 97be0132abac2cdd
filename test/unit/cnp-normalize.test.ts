/** ClusterNetworkPolicy normalization: the API's shapes (typed LIST model and raw JSON alike)
 * become plain data; hostile or newer input fails closed per rule, naming object and field (an
 * Accept rule then matches nothing, a Deny or Pass rule everything). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { K8sObjectError } from '../../src/k8s/errors';
import type { ClusterNetworkPolicyInfo } from '../../src/k8s/cluster-policy-model';
import { normalizers } from '../../src/k8s/normalizers';
import { compileClusterPolicy } from '../../src/policy/cluster/compile';

type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function cnp(spec: unknown): Json {
  return { apiVersion: 'policy.networking.k8s.io/v1alpha2', kind: 'ClusterNetworkPolicy', metadata: { name: 'guard' }, spec };
}

function read(raw: unknown): { object: ClusterNetworkPolicyInfo; problems: K8sObjectError[] } {
  const problems: K8sObjectError[] = [];
  const object = normalizers.ClusterNetworkPolicy(raw, { onProblem: (e) => problems.push(e) }) as ClusterNetworkPolicyInfo;
  return { object, problems };
}

const GOOD = {
  tier: 'Admin',
  priority: 10,
  subject: { pods: { namespaceSelector: { matchLabels: { team: 'a' } }, podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }] } } },
  ingress: [{ name: 'from-mon', action: 'Accept', from: [{ namespaces: { matchLabels: { ns: 'mon' } } }], protocols: [{ tcp: { destinationPort: { number: 9090 } } }] }],
  egress: [
    { name: 'no-imds', action: 'Deny', to: [{ networks: ['169.254.169.254/32'] }] },
    { action: 'Pass', to: [{ nodes: { matchLabels: { role: 'db' } } }, { pods: { namespaceSelector: {}, podSelector: { matchLabels: { app: 'db' } } } }], protocols: [{ udp: { destinationPort: { range: { start: 53, end: 60 } } } }, { sctp: { destinationPort: { number: 9003 } } }] },
  ],
};

test('a well-formed ClusterNetworkPolicy normalizes to plain data, the same from raw JSON and from a LIST model', () => {
  const { object, problems } = read(cnp(GOOD));
  assert.deepEqual(problems, []);
  assert.deepEqual(object, {
    name: 'guard',
    tier: 'Admin',
    priority: 10,
    subject: { namespaceSelector: { matchLabels: { team: 'a' } }, podSelector: { matchExpressions: [{ key: 'app', operator: 'In', values: ['web'] }] } },
    ingress: [{ name: 'from-mon', action: 'Accept', peers: [{ kind: 'pods', namespaceSelector: { matchLabels: { ns: 'mon' } }, podSelector: {} }], protocols: [{ protocol: 'TCP', port: 9090 }] }],
    egress: [
      { name: 'no-imds', action: 'Deny', peers: [{ kind: 'networks', networks: ['169.254.169.254/32'] }] },
      {
        action: 'Pass',
        peers: [{ kind: 'nodes', nodeSelector: { matchLabels: { role: 'db' } } }, { kind: 'pods', namespaceSelector: {}, podSelector: { matchLabels: { app: 'db' } } }],
        protocols: [{ protocol: 'UDP', port: 53, endPort: 60 }, { protocol: 'SCTP', port: 9003 }],
      },
    ],
  });
  // A typed LIST model: absent fields present as undefined, `from` renamed `_from`.
  const typed = structuredClone(GOOD) as Json;
  typed.ingress[0]._from = typed.ingress[0].from;
  delete typed.ingress[0].from;
  typed.subject.namespaces = undefined;
  typed.egress[0].protocols = undefined;
  assert.deepEqual(read(cnp(typed)).object, object);
});

test('hostile rules fail closed one at a time, naming the field: Accept matches nothing, Deny and Pass everything', () => {
  const rules: [Json, string][] = [
    [{ action: 'Deny', to: [{ foo: {} }] }, 'spec.egress[0].to[0].foo'],
    [{ action: 'Deny', to: [{}] }, 'spec.egress[0].to[0]'],
    [{ action: 'Pass', to: [{ domainNames: ['*.example.com'] }] }, 'spec.egress[0].to[0].domainNames'],
    [{ action: 'Deny', to: [{ networks: ['198.18.0.0/24'], nodes: {} }] }, 'spec.egress[0].to[0]'],
    [{ action: 'Deny', to: [] }, 'spec.egress[0].to'],
    [{ action: 'Deny', to: 'everyone' }, 'spec.egress[0].to'],
    [{ action: 'Deny', to: [{ networks: [] }] }, 'spec.egress[0].to[0].networks'],
    [{ action: 'Deny', to: [{ namespaces: {} }], protocols: [{ icmp: {} }] }, 'spec.egress[0].protocols[0].icmp'],
    [{ action: 'Deny', to: [{ namespaces: {} }], protocols: [{ tcp: { destinationPort: { number: 70000 } } }] }, 'spec.egress[0].protocols[0].tcp.destinationPort.number'],
    [{ action: 'Deny', to: [{ namespaces: {} }], protocols: [{ tcp: { destinationPort: { range: { start: 90, end: 80 } } } }] }, 'spec.egress[0].protocols[0].tcp.destinationPort.range'],
    [{ action: 'Deny', to: [{ networks: ['198.18.0.0/24'] }], protocols: [{ destinationNamedPort: 'http' }] }, 'spec.egress[0].protocols'],
    [{ action: 'Log', to: [{ namespaces: {} }] }, 'spec.egress[0].action'],
    [{ action: 42, to: [{ namespaces: {} }] }, 'spec.egress[0].action'],
    [{ action: 'Deny', to: [{ namespaces: { matchLabels: ['a'] } }] }, 'spec.egress[0].to[0].namespaces.matchLabels'],
  ];
  for (const [rule, field] of rules) {
    const { object, problems } = read(cnp({ tier: 'Admin', priority: 1, subject: { namespaces: {} }, egress: [rule, { action: 'Accept', to: [{ namespaces: {} }] }] }));
    assert.equal(problems.length, 1, `${JSON.stringify(rule)}: ${problems.map((p) => p.message).join('; ')}`);
    assert.equal(problems[0].object, 'ClusterNetworkPolicy guard');
    assert.equal(problems[0].field, field, JSON.stringify(rule));
    assert.equal(object.egress.length, 2, 'the other rule stands');
    assert.equal(object.egress[0].failedClosed, true);
    assert.equal(object.egress[1].failedClosed, undefined);
    const compiled = compileClusterPolicy(object).compiled.egress[0];
    assert.deepEqual([compiled.peers, compiled.ports], ['any', 'any'], 'a Deny (or unknown action, read as Deny) matches everything');
  }
  // The same unknown peer in an Accept rule matches nothing.
  const { object } = read(cnp({ tier: 'Admin', priority: 1, subject: { namespaces: {} }, ingress: [{ action: 'Accept', from: [{ networks: ['0.0.0.0/0'] }] }] }));
  assert.equal(object.ingress[0].failedClosed, true, 'networks is not an ingress peer');
  assert.deepEqual(compileClusterPolicy(object).compiled.ingress[0].peers, []);
});

test('an unreadable tier, priority or subject is enforced failing closed: Admin, priority 0, the readable subject, Accept rules matching nothing', () => {
  const cases: [Json, string][] = [
    [{ ...GOOD, tier: 'Emergency' }, 'spec.tier'],
    [{ ...GOOD, priority: 1001 }, 'spec.priority'],
    [{ ...GOOD, priority: '5' }, 'spec.priority'],
    [{ ...GOOD, subject: { pods: GOOD.subject.pods, namespaces: {} } }, 'spec.subject'],
    [{ ...GOOD, subject: { services: {} } }, 'spec.subject.services'],
  ];
  for (const [spec, field] of cases) {
    const { object, problems } = read(cnp(spec));
    assert.deepEqual(problems.map((p) => p.field), [field]);
    assert.equal(object.tier, spec.tier === 'Emergency' ? 'Admin' : 'Admin');
    assert.equal(object.ingress[0].failedClosed, true, `${field}: the Accept rule matches nothing`);
    assert.equal(object.egress[0].failedClosed, undefined, `${field}: the Deny rule stands`);
  }
  assert.equal(read(cnp({ ...GOOD, priority: -1 })).object.priority, 0);
  // A subject selector that cannot be read whole selects what its readable part selects: more.
  const wide = read(cnp({ ...GOOD, subject: { pods: { namespaceSelector: { matchLabels: { team: 'a' } }, podSelector: 'app=web' } } })).object;
  assert.deepEqual(wide.subject, { namespaceSelector: { matchLabels: { team: 'a' } }, podSelector: {} });
});

test('an invalid selector operator or CIDR is caught by the compiler, naming policy, rule and field', () => {
  const { object } = read(cnp({
    tier: 'Baseline',
    priority: 3,
    subject: { namespaces: {} },
    egress: [
      { name: 'bad-cidr', action: 'Accept', to: [{ networks: ['198.18.0.0/33'] }] },
      { action: 'Deny', to: [{ pods: { namespaceSelector: {}, podSelector: { matchExpressions: [{ key: 'a', operator: 'Near' }] } } }] },
    ],
  }));
  const plan = compileClusterPolicy(object);
  assert.deepEqual(plan.compiled.egress.map((r) => [r.peers, r.failedClosed]), [[[], true], ['any', true]]);
  assert.deepEqual(plan.compiled.errors.map((e) => e.field), ['spec.egress[0].to[0].networks[0].cidr', 'spec.egress[1].to[0].podSelector.matchExpressions[0].operator']);
  assert.match(plan.compiled.errors[0].message, /rule "bad-cidr"\); failing closed: this Accept rule matches nothing/);
  assert.match(plan.compiled.errors[1].message, /rule 1\); failing closed: this Deny rule denies every egress packet/);
});
