/** explain over the tiers: the model (written from the v1alpha2 semantics) and the kernel
 * interpreter running the rendered table agree flow by flow, and the model names the tier, the
 * policy and the rule that decided. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { normalizers } from '../../src/k8s/normalizers';
import type { ClusterSnapshot } from '../../src/k8s/source';
import type { NamespaceInfo, NetworkPolicyInfo, PodInfo } from '../../src/k8s/model';
import type { ClusterNetworkPolicyInfo } from '../../src/k8s/cluster-policy-model';
import { compileFull } from '../../src/policy/engine/compile';
import { Renderer } from '../../src/policy/render/render';
import { fullPolicyTable } from '../../src/policy/cluster/tiers';
import { PolicyModes } from '../../src/policy/modes';
import { modelToContents } from '../../src/ruleset/model';
import { explainFlow } from '../../src/explain/explain';
import { explainTiers } from '../../src/explain/tier-verdict';
import type { FlowPacket } from '../../src/explain/flow';
import type { Rule } from '../../src/nft/types';
import { policyCounterRows } from '../../src/policy/metrics-bridge';
import { clusterRuleCounters } from '../../src/explain/cluster-counters';
import { compileClusterPolicy } from '../../src/policy/cluster/compile';

const NODE = 'node-1';
type Json = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const ns = (name: string, extra: Json = {}) => normalizers.Namespace({ metadata: { name, labels: { ns: name }, ...extra } }) as NamespaceInfo;
const pod = (n: string, name: string, last: number, labels: Record<string, string> = {}) =>
  normalizers.Pod({ metadata: { name, namespace: n, labels }, spec: { nodeName: NODE, containers: [{ name: 'c', ports: [{ name: 'http', containerPort: 8080 }] }] }, status: { phase: 'Running', podIPs: [{ ip: `198.18.0.${last}` }, { ip: `2001:db8::${last}` }] } }) as PodInfo;
const cnp = (name: string, spec: Json) => normalizers.ClusterNetworkPolicy({ metadata: { name }, spec }) as ClusterNetworkPolicyInfo;
const netpol = (n: string, name: string, spec: Json) => normalizers.NetworkPolicy({ metadata: { name, namespace: n }, spec }) as NetworkPolicyInfo;

const PODS = [pod('x', 'a', 10), pod('y', 'b', 20), pod('z', 'c', 30)];
const NAMESPACES = [ns('x'), ns('y'), ns('z', { annotations: { 'nfkube.io/policy-mode': 'audit' } })];
const POLICIES = [netpol('y', 'only-x', { podSelector: {}, policyTypes: ['Ingress'], ingress: [{ from: [{ namespaceSelector: { matchLabels: { ns: 'x' } } }], ports: [{ port: 80 }] }] })];
const CNPS = [
  cnp('guard', { tier: 'Admin', priority: 1, subject: { namespaces: {} }, egress: [{ name: 'no-imds', action: 'Deny', to: [{ networks: ['169.254.169.254/32'] }] }], ingress: [{ name: 'ops', action: 'Accept', from: [{ namespaces: { matchLabels: { ns: 'z' } } }], protocols: [{ destinationNamedPort: 'http' }] }] }),
  cnp('pass-x', { tier: 'Admin', priority: 2, subject: { namespaces: { matchLabels: { ns: 'y' } } }, ingress: [{ action: 'Pass', from: [{ namespaces: { matchLabels: { ns: 'x' } } }] }, { action: 'Deny', from: [{ namespaces: {} }] }] }),
  cnp('isolate', { tier: 'Baseline', priority: 5, subject: { namespaces: {} }, ingress: [{ name: 'deny-all', action: 'Deny', from: [{ namespaces: {} }] }] }),
];

test('model and kernel interpreter agree over the tiers, and the model names tier, policy and rule', () => {
  const snap: ClusterSnapshot = {
    pods: new Map(PODS.map((p) => [`${p.namespace}/${p.name}`, p])),
    namespaces: new Map(NAMESPACES.map((n) => [n.name, n])),
    policies: new Map(POLICIES.map((p) => [`${p.namespace}/${p.name}`, p])),
    nodes: new Map(),
    clusterPolicies: new Map(CNPS.map((c) => [c.name, c])),
  };
  const modes = new PolicyModes('enforce');
  for (const n of NAMESPACES) modes.setNamespace(n);
  const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, NODE);
  const { model } = fullPolicyTable(new Renderer({ table: 'nfkube', denyAction: 'drop', modes }), ir, snap, pino({ level: 'silent' }));
  const table = modelToContents(model);
  const tiers = explainTiers(snap, NODE, modes);
  const flow = (src: number, dst: string | number, dport: number, protocol: 'tcp' | 'udp' = 'tcp', v6 = false): FlowPacket => ({
    family: v6 ? 'ipv6' : 'ipv4',
    src: v6 ? `2001:db8::${src}` : `198.18.0.${src}`,
    dst: typeof dst === 'string' ? dst : v6 ? `2001:db8::${dst}` : `198.18.0.${dst}`,
    protocol,
    dport,
    sport: 40000,
  });
  const cases: [FlowPacket, boolean, string][] = [
    [flow(10, '169.254.169.254', 80), false, 'egress Admin Deny clusternetworkpolicy/guard egress[0] (no-imds)'],
    [flow(10, 20, 80), true, 'ingress NetworkPolicy'],
    [flow(10, 20, 81), false, 'ingress NetworkPolicy'],
    [flow(30, 20, 8080), true, 'ingress Admin Accept clusternetworkpolicy/guard ingress[0] (ops)'],
    [flow(30, 20, 80, 'tcp', true), false, 'ingress Admin Deny clusternetworkpolicy/pass-x ingress[1] (#1)'],
    [flow(20, 10, 80, 'udp'), false, 'ingress Baseline Deny clusternetworkpolicy/isolate ingress[0] (deny-all)'],
    [flow(10, 30, 80), true, 'ingress Baseline Deny clusternetworkpolicy/isolate ingress[0] (deny-all) audit'],
  ];
  for (const [packet, allowed, why] of cases) {
    const e = explainFlow(ir, modes, table, packet, tiers);
    const what = `${packet.src} -> ${packet.dst} ${packet.protocol}/${packet.dport}`;
    assert.equal(e.model.allowed, allowed, what);
    assert.ok(e.agree, `${what}: model ${e.model.allowed}, kernel ${e.kernel?.allowed ?? e.kernelError}`);
    const side = why.startsWith('egress') ? e.model.egress : e.model.ingress;
    const said = side.tier ? `${side.direction} ${side.tier.tier} ${side.tier.action} ${side.tier.decidedBy}${side.audit ? ' audit' : ''}` : `${side.direction} NetworkPolicy`;
    assert.equal(said, why, what);
  }
});

test('a ClusterNetworkPolicy rule counter is counted for its rule, never as a NetworkPolicy accept', () => {
  const policy = compileClusterPolicy(cnp('guard', { tier: 'Admin', priority: 1, subject: { namespaces: {} }, egress: [{ name: 'no-imds', action: 'Deny', to: [{ networks: ['169.254.169.254/32'] }] }] })).compiled;
  const rule = (comment: string, packets: bigint): Rule => ({ family: 'inet', table: 'nfkube', chain: 'c', comment, exprs: [{ type: 'counter', packets, bytes: packets * 100n }] });
  const rules = [rule('clusternetworkpolicy/guard egress[0]', 5n), rule('clusternetworkpolicy/guard egress[0]', 2n), rule('x/web ingress[0]', 3n)];
  assert.deepEqual(policyCounterRows(rules, new Map(), () => undefined).rows.map((r) => [r.policy, r.packets]), [['x/web', 3n]]);
  assert.deepEqual(clusterRuleCounters(rules, [policy]).map((r) => [r.policy, r.rule, r.action, r.packets, r.bytes]), [['clusternetworkpolicy/guard', 'no-imds', 'Deny', 7n, 700n]]);
});

test('/metrics counts each ClusterNetworkPolicy rule under its policy and rule, with the verdict of its action', () => {
  const rule = (comment: string, packets: bigint, verdict: 'accept' | 'return' | 'goto'): Rule => ({
    family: 'inet',
    table: 'nfkube',
    chain: 'c',
    comment,
    exprs: [{ type: 'counter', packets, bytes: packets * 100n }, { type: 'immediate', dreg: 0, verdict: verdict === 'goto' ? { kind: 'goto', chain: 'cnp_deny_out' } : { kind: verdict } }],
  });
  const rules = [rule('clusternetworkpolicy/guard egress[0]', 5n, 'goto'), rule('clusternetworkpolicy/guard egress[0]', 2n, 'goto'), rule('clusternetworkpolicy/guard egress[1]', 4n, 'return'), rule('clusternetworkpolicy/open ingress[0]', 1n, 'accept')];
  const read = policyCounterRows(rules, new Map(), () => undefined);
  assert.deepEqual(
    read.clusterRules.map((r) => [r.policy, r.rule, r.direction, r.verdict, r.packets, r.bytes]),
    [
      ['clusternetworkpolicy/guard', 'egress[0]', 'egress', 'drop', 7n, 700n],
      ['clusternetworkpolicy/guard', 'egress[1]', 'egress', 'pass', 4n, 400n],
      ['clusternetworkpolicy/open', 'ingress[0]', 'ingress', 'accept', 1n, 100n],
    ],
  );
  assert.deepEqual(read.rows, [], 'none of them is a NetworkPolicy accept');
});
