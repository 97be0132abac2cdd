/** The ClusterNetworkPolicy reference evaluator (test/helpers/cnp-spec.ts) checked on its own,
 * with no kernel: on every NetworkPolicy conformance case it decides the whole matrix as that
 * case's hand-written expectation does, and on every ported upstream ClusterNetworkPolicy
 * conformance step it answers each upstream poke as upstream expects (IPv4 and IPv6). */
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { clusterNetworkPolicy, cnpWorld, decide, tierOrder } from '../helpers/cnp-spec';
import { cellName, compareMatrices } from '../helpers/prober';
import { conformancePods, podAddress, type PodEndpoint } from '../helpers/topology';
import { CASES } from '../e2e/cases';
import { cnpCases, nodePeerCases, NODE_PEER_PORTS } from '../e2e/cnp-cases';
import { addressesOf, evaluatorMatrix, HOUSE_PLACEMENTS, initialState, pokeDisagreements, stateWorld, type PodLayout } from '../e2e/cnp-run';
import { NODE_NAME } from '../e2e/harness';
import { clusterObjects, type K8sObject } from '../e2e/manifests';
import { Reachability } from '../e2e/reachability';
import { DEFAULT_PORTS } from '../helpers/prober';

/** A topology's addresses without its namespaces: the evaluator needs nothing else. */
function layout(placements = conformancePods()): PodLayout {
  const pods: PodEndpoint[] = placements.map((p, i) => ({ ...p, id: `${p.namespace}/${p.name}`, ...podAddress(i), netnsPath: '' }));
  return { pods, nodeIPv4: '198.19.255.1', nodeIPv6: '2001:db8:ffff::1' };
}

describe('the reference evaluator on the NetworkPolicy conformance cases', () => {
  const t = layout();
  for (const c of CASES) {
    test(c.name, () => {
      const tweaks = typeof c.tweaks === 'function' ? c.tweaks({ ...t, kind: 'routed', nodeNetnsPath: '', runInNode: async () => '', close: () => undefined }) : c.tweaks;
      const objects: K8sObject[] = clusterObjects(t.pods, NODE_NAME, tweaks);
      const world = cnpWorld({
        node: NODE_NAME,
        namespaces: objects.filter((o) => o.kind === 'Namespace').map((o) => normalizeNamespace(o)),
        pods: objects.filter((o) => o.kind === 'Pod').map((o) => normalizePod(o)),
        policies: c.policies.map((o) => normalizeNetworkPolicy(o)),
      });
      const expected = new Reachability(t.pods.map((p) => p.id));
      c.expect(expected);
      const { matrix, why } = evaluatorMatrix(t, world, DEFAULT_PORTS);
      const comparison = compareMatrices(expected.matrix(), { matrix, outcomes: new Map() });
      assert.equal(comparison.mismatches.length, 0, `${comparison.report}\n${comparison.mismatches.slice(0, 5).map((m) => `${cellName(m)}: ${why(m)}`).join('\n')}`);
    });
  }
});

describe('the reference evaluator answers every upstream ClusterNetworkPolicy poke as upstream does', () => {
  const t = layout(HOUSE_PLACEMENTS);
  const cases = [...cnpCases(addressesOf(t)), ...nodePeerCases()];
  test('the port covers the upstream suite: 92 subtests', () => {
    const subtests = new Set(cases.flatMap((c) => c.steps.map((s) => `${c.test}: ${s.name.replace(/ \(.*\)$/, '')}`)));
    assert.equal(subtests.size, 92);
  });
  for (const c of cases) {
    const nodePeers = c.feature === 'EgressNodePeers';
    test(c.test, () => {
      const state = initialState(c);
      for (const step of c.steps) {
        step.change?.(state);
        const { matrix, why } = evaluatorMatrix(t, stateWorld(t, NODE_NAME, state), nodePeers ? NODE_PEER_PORTS : undefined, { nodeTarget: nodePeers });
        const wrong = pokeDisagreements(step, matrix);
        assert.deepEqual(wrong, [], `${step.name}:\n${wrong.map((w) => `${w} (${why(cellOf(w))})`).join('\n')}`);
      }
    });
  }
});

/** Back from a disagreement line to its cell, for the explanation. */
function cellOf(line: string) {
  const m = /^(\S+) -> (\S+) (tcp|udp|sctp)\/(\d+) IPv(4|6):/.exec(line)!;
  return { from: m[1], to: m[2], protocol: m[3] as 'tcp', port: Number(m[4]), family: Number(m[5]) as 4 | 6 };
}

describe('the reference evaluator on the semantics the port relies on', () => {
  const pod = (ns: string, name: string, ip: string, labels: Record<string, string> = {}) =>
    normalizePod({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace: ns, labels }, spec: { nodeName: 'n1', containers: [] }, status: { phase: 'Running', podIP: ip } });
  const ns = (name: string) => ({ name, labels: {} });
  const a = pod('x', 'a', '198.18.0.10');
  const b = pod('y', 'b', '198.18.0.20');
  const flow = { src: { ip: '198.18.0.10', pod: a }, dst: { ip: '198.18.0.20', pod: b }, protocol: 'TCP' as const, port: 80 };
  const everyone = { namespaces: {} };

  test('equal priorities: the lower metadata.name goes first', () => {
    const accept = clusterNetworkPolicy('a-accept', { tier: 'Admin', priority: 5, subject: everyone, egress: [{ action: 'Accept', to: [everyone] }] });
    const deny = clusterNetworkPolicy('b-deny', { tier: 'Admin', priority: 5, subject: everyone, egress: [{ action: 'Deny', to: [everyone] }] });
    assert.deepEqual(tierOrder([deny, accept], 'Admin').map((p) => p.metadata.name), ['a-accept', 'b-deny']);
    const w = cnpWorld({ namespaces: [ns('x'), ns('y')], pods: [a, b], clusterPolicies: [deny, accept] });
    assert.equal(decide(w, flow).allowed, true);
  });

  test('an egress Accept still meets the destination ingress rules', () => {
    const accept = clusterNetworkPolicy('accept-out', { tier: 'Admin', priority: 1, subject: everyone, egress: [{ action: 'Accept', to: [everyone] }] });
    const isolate = normalizeNetworkPolicy({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'deny', namespace: 'y' }, spec: { podSelector: {}, policyTypes: ['Ingress'] } });
    const w = cnpWorld({ namespaces: [ns('x'), ns('y')], pods: [a, b], policies: [isolate], clusterPolicies: [accept] });
    const v = decide(w, flow);
    assert.equal(v.allowed, false);
    assert.deepEqual(v.ingress, { by: 'networkpolicy', allowed: false });
  });

  test('unreadable peers fail closed: Accept matches nothing, Pass becomes Deny all', () => {
    const bogus = { domainNames: ['example.com'] };
    const accept = clusterNetworkPolicy('accept', { tier: 'Admin', priority: 1, subject: everyone, egress: [{ action: 'Accept', to: [bogus] }] });
    const pass = clusterNetworkPolicy('pass', { tier: 'Admin', priority: 2, subject: everyone, egress: [{ action: 'Pass', to: [bogus], protocols: [{ udp: {} }] }] });
    const w = cnpWorld({ namespaces: [ns('x'), ns('y')], pods: [a, b], clusterPolicies: [accept, pass] });
    assert.deepEqual(decide(w, flow).egress, { by: 'cnp', tier: 'Admin', policy: 'pass', rule: 0, ruleName: undefined, action: 'Deny' });
  });

  test('Baseline is not consulted for a pod a NetworkPolicy isolates; host-network pods are never subjects', () => {
    const baselineDeny = clusterNetworkPolicy('default', { tier: 'Baseline', priority: 1, subject: everyone, ingress: [{ action: 'Deny', from: [everyone] }] });
    const allowAll = normalizeNetworkPolicy({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name: 'all', namespace: 'y' }, spec: { podSelector: {}, ingress: [{}] } });
    assert.equal(decide(cnpWorld({ namespaces: [ns('x'), ns('y')], pods: [a, b], clusterPolicies: [baselineDeny] }), flow).allowed, false);
    assert.equal(decide(cnpWorld({ namespaces: [ns('x'), ns('y')], pods: [a, b], policies: [allowAll], clusterPolicies: [baselineDeny] }), flow).allowed, true);
    const host = { ...b, hostNetwork: true };
    assert.equal(decide(cnpWorld({ namespaces: [ns('x'), ns('y')], pods: [a, host], clusterPolicies: [baselineDeny] }), { ...flow, dst: { ip: b.ips[0], pod: host } }).allowed, true);
  });
});
