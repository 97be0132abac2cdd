/** The reference evaluator for ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2), written
 * from the API types' documentation and issue 27, never from the compiler: for a flow between two
 * addresses it walks, per direction, the Admin tier (ascending priority, then metadata.name, then
 * rule order), NetworkPolicy (test/helpers/policy-spec.ts) for pods it isolates, the Baseline tier,
 * then default allow. A connection passes when the source's egress and the destination's ingress
 * both allow it; an egress Accept decides only the egress side. */
import type { LabelSelector, NamespaceInfo, NetworkPolicyInfo, PodInfo } from '../../src/k8s/model';
import type { Direction, Protocol } from '../../src/policy/engine/ir';
import { inCidr, live, namedPortIs, namespaceLabels, networkPolicyAllows, selects, type PolicyWorld } from './policy-spec';

// --- the public API shape, as written in manifests ----------------------------------------------

export type Tier = 'Admin' | 'Baseline';
export type Action = 'Accept' | 'Deny' | 'Pass';

export interface NamespacedPod {
  namespaceSelector?: LabelSelector;
  podSelector?: LabelSelector;
}

export interface CnpPeer {
  namespaces?: LabelSelector;
  pods?: NamespacedPod;
  networks?: string[];
  nodes?: LabelSelector;
  /** Any field this version does not know (domainNames included) makes the peer unreadable. */
  [unknown: string]: unknown;
}

export interface CnpPort {
  number?: number;
  range?: { start: number; end: number };
}

export interface CnpProtocol {
  tcp?: { destinationPort?: CnpPort };
  udp?: { destinationPort?: CnpPort };
  sctp?: { destinationPort?: CnpPort };
  destinationNamedPort?: string;
  [unknown: string]: unknown;
}

export interface CnpRule {
  name?: string;
  action: Action;
  from?: CnpPeer[];
  to?: CnpPeer[];
  protocols?: CnpProtocol[];
}

export interface CnpSpec {
  tier: Tier;
  priority: number;
  subject: { namespaces?: LabelSelector; pods?: NamespacedPod };
  ingress?: CnpRule[];
  egress?: CnpRule[];
}

export interface ClusterNetworkPolicy {
  apiVersion: 'policy.networking.k8s.io/v1alpha2';
  kind: 'ClusterNetworkPolicy';
  metadata: { name: string };
  spec: CnpSpec;
}

export function clusterNetworkPolicy(name: string, spec: CnpSpec): ClusterNetworkPolicy {
  return { apiVersion: 'policy.networking.k8s.io/v1alpha2', kind: 'ClusterNetworkPolicy', metadata: { name }, spec };
}

// --- the cluster and the question -----------------------------------------------------------------

export interface NodeInfo {
  name: string;
  labels: Record<string, string>;
  /** status.addresses[].address */
  addresses: string[];
}

export interface CnpWorld extends PolicyWorld {
  /** The node whose view this is: pods of other nodes are enforced there, so they are peers only. */
  node?: string;
  pods: PodInfo[];
  nodes: NodeInfo[];
  clusterPolicies: ClusterNetworkPolicy[];
}

/** One end of a flow: an address, and the pod that owns it when there is one. */
export interface Endpoint {
  ip: string;
  pod?: PodInfo;
}

export interface FlowQuery {
  src: Endpoint;
  dst: Endpoint;
  protocol: Protocol;
  port: number;
}

/** What decided one direction. */
export type Decision =
  | { by: 'cnp'; tier: Tier; policy: string; rule: number; ruleName?: string; action: 'Accept' | 'Deny' }
  | { by: 'networkpolicy'; allowed: boolean }
  | { by: 'default' }
  | { by: 'not-a-subject' };

export interface Verdict {
  allowed: boolean;
  egress: Decision;
  ingress: Decision;
}

const KNOWN_PEER_FIELDS: Record<Direction, string[]> = { ingress: ['namespaces', 'pods'], egress: ['namespaces', 'pods', 'networks', 'nodes'] };
const PROTOCOL_FIELDS = { tcp: 'TCP', udp: 'UDP', sctp: 'SCTP' } as const;
const OPERATORS = ['In', 'NotIn', 'Exists', 'DoesNotExist'];

/** A selector this evaluator can apply: known operators, values exactly where they belong. */
function readableSelector(sel: LabelSelector | undefined): boolean {
  return (sel?.matchExpressions ?? []).every((e) => OPERATORS.includes(e.operator)
    && ((e.operator === 'In' || e.operator === 'NotIn') ? (e.values?.length ?? 0) > 0 : !e.values?.length));
}

/** Exactly one known field, with readable content. */
function readablePeer(p: CnpPeer, dir: Direction): boolean {
  const fields = Object.keys(p).filter((k) => p[k] !== undefined);
  if (fields.length !== 1 || !KNOWN_PEER_FIELDS[dir].includes(fields[0])) return false;
  if (p.namespaces) return readableSelector(p.namespaces);
  if (p.pods) return readableSelector(p.pods.namespaceSelector) && readableSelector(p.pods.podSelector);
  if (p.nodes) return readableSelector(p.nodes);
  return (p.networks ?? []).length > 0 && p.networks!.every((c) => /^[0-9a-fA-F:.]+\/\d+$/.test(c) && (inCidr(c.split('/')[0], c)));
}

function readableProtocol(p: CnpProtocol): boolean {
  const fields = Object.keys(p).filter((k) => p[k] !== undefined);
  if (fields.length !== 1) return false;
  if (fields[0] === 'destinationNamedPort') return typeof p.destinationNamedPort === 'string' && p.destinationNamedPort !== '';
  if (!(fields[0] in PROTOCOL_FIELDS)) return false;
  const port = (p[fields[0]] as { destinationPort?: CnpPort }).destinationPort;
  if (port === undefined) return true;
  const valid = (n: unknown) => Number.isInteger(n) && (n as number) >= 1 && (n as number) <= 65535;
  if (port.range) return port.number === undefined && valid(port.range.start) && valid(port.range.end) && port.range.start < port.range.end;
  return valid(port.number);
}

function subjectSelects(w: CnpWorld, spec: CnpSpec, pod: PodInfo): boolean {
  if (!live(pod)) return false;
  const nsLabels = namespaceLabels(w.namespaces, pod.namespace);
  if (spec.subject.namespaces) return selects(spec.subject.namespaces, nsLabels);
  const pods = spec.subject.pods;
  return !!pods && selects(pods.namespaceSelector ?? {}, nsLabels) && selects(pods.podSelector ?? {}, pod.labels);
}

function podPeerMatches(w: CnpWorld, p: CnpPeer, peer: Endpoint): boolean {
  const pod = peer.pod;
  if (!pod || !live(pod)) return false;
  const nsLabels = namespaceLabels(w.namespaces, pod.namespace);
  if (p.namespaces) return selects(p.namespaces, nsLabels);
  return selects(p.pods!.namespaceSelector ?? {}, nsLabels) && selects(p.pods!.podSelector ?? {}, pod.labels);
}

function peerMatches(w: CnpWorld, p: CnpPeer, peer: Endpoint): boolean {
  if (p.networks) return p.networks.some((c) => inCidr(peer.ip, c));
  if (p.nodes) return w.nodes.some((n) => selects(p.nodes!, n.labels) && n.addresses.includes(peer.ip));
  return podPeerMatches(w, p, peer);
}

function protocolMatches(p: CnpProtocol, q: FlowQuery): boolean {
  if (p.destinationNamedPort !== undefined) return namedPortIs(q.dst.pod && live(q.dst.pod) ? q.dst.pod : undefined, p.destinationNamedPort, q.protocol, q.port);
  const field = (Object.keys(PROTOCOL_FIELDS) as (keyof typeof PROTOCOL_FIELDS)[]).find((k) => p[k] !== undefined)!;
  if (PROTOCOL_FIELDS[field] !== q.protocol) return false;
  const port = p[field]!.destinationPort;
  if (!port) return true;
  return port.range ? q.port >= port.range.start && q.port <= port.range.end : q.port === port.number;
}

/** The action a rule takes on this flow, or undefined when it does not match. Unreadable rules
 * fail closed as the API types ask: Accept matches nothing, Deny and Pass become "Deny all". */
function ruleAction(w: CnpWorld, rule: CnpRule, dir: Direction, q: FlowQuery): 'Accept' | 'Deny' | 'Pass' | undefined {
  const peers = (dir === 'ingress' ? rule.from : rule.to) ?? [];
  // A named port cannot apply to nodes or networks (the API forbids the pairing): unreadable.
  const namedPortOffPods = (rule.protocols ?? []).some((p) => p.destinationNamedPort !== undefined) && peers.some((p) => p.networks !== undefined || p.nodes !== undefined);
  const readable = peers.length > 0 && peers.every((p) => readablePeer(p, dir)) && (rule.protocols ?? []).every(readableProtocol)
    && ['Accept', 'Deny', 'Pass'].includes(rule.action) && !namedPortOffPods;
  if (!readable) return rule.action === 'Accept' ? undefined : 'Deny';
  const peer = dir === 'ingress' ? q.src : q.dst;
  if (!peers.some((p) => peerMatches(w, p, peer))) return undefined;
  const protocols = rule.protocols ?? [];
  if (protocols.length > 0 && !protocols.some((p) => protocolMatches(p, q))) return undefined;
  return rule.action;
}

/** The tier's policies in evaluation order: priority, then name (the agreed tie-break). */
export function tierOrder(policies: ClusterNetworkPolicy[], tier: Tier): ClusterNetworkPolicy[] {
  return policies.filter((p) => p.spec.tier === tier)
    .sort((a, b) => a.spec.priority - b.spec.priority || (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0));
}

/** The first matching rule of a tier for the subject pod: Accept, Deny, Pass, or nothing. */
function evaluateTier(w: CnpWorld, tier: Tier, dir: Direction, subject: PodInfo, q: FlowQuery): Decision | 'pass' | undefined {
  for (const cnp of tierOrder(w.clusterPolicies, tier)) {
    if (!subjectSelects(w, cnp.spec, subject)) continue;
    const rules = cnp.spec[dir] ?? [];
    for (let i = 0; i < rules.length; i++) {
      const action = ruleAction(w, rules[i], dir, q);
      if (action === undefined) continue;
      if (action === 'Pass') return 'pass';
      return { by: 'cnp', tier, policy: cnp.metadata.name, rule: i, ruleName: rules[i].name, action };
    }
  }
  return undefined;
}

/** One direction, from the subject pod's side (the source for egress, the destination for ingress). */
export function decideDirection(w: CnpWorld, dir: Direction, q: FlowQuery): Decision {
  const subject = dir === 'ingress' ? q.dst.pod : q.src.pod;
  if (!subject || !live(subject) || (w.node !== undefined && subject.nodeName !== w.node)) return { by: 'not-a-subject' };
  const admin = evaluateTier(w, 'Admin', dir, subject, q);
  if (admin !== undefined && admin !== 'pass') return admin;
  const other = dir === 'ingress' ? q.src : q.dst;
  const np = networkPolicyAllows(w, dir, { self: subject, peerIp: other.ip, peerPod: other.pod, protocol: q.protocol, port: q.port, dst: q.dst.pod });
  if (np !== undefined) return { by: 'networkpolicy', allowed: np };
  const baseline = evaluateTier(w, 'Baseline', dir, subject, q);
  if (baseline !== undefined && baseline !== 'pass') return baseline;
  return { by: 'default' };
}

const allows = (d: Decision): boolean => (d.by === 'cnp' ? d.action === 'Accept' : d.by === 'networkpolicy' ? d.allowed : true);

export function decide(w: CnpWorld, q: FlowQuery): Verdict {
  const egress = decideDirection(w, 'egress', q);
  const ingress = decideDirection(w, 'ingress', q);
  return { allowed: allows(egress) && allows(ingress), egress, ingress };
}

export function describeDecision(d: Decision): string {
  switch (d.by) {
    case 'cnp': return `${d.tier} clusternetworkpolicy/${d.policy} rule ${d.ruleName ?? d.rule} ${d.action}`;
    case 'networkpolicy': return `NetworkPolicy ${d.allowed ? 'allows' : 'isolates'}`;
    default: return d.by;
  }
}

/** The world from namespaces, pods, nodes, NetworkPolicies and ClusterNetworkPolicies. */
export function cnpWorld(parts: { node?: string; namespaces: NamespaceInfo[]; pods: PodInfo[]; nodes?: NodeInfo[]; policies?: NetworkPolicyInfo[]; clusterPolicies?: ClusterNetworkPolicy[] }): CnpWorld {
  return {
    node: parts.node,
    namespaces: new Map(parts.namespaces.map((n) => [n.name, n])),
    policies: new Map((parts.policies ?? []).map((p) => [`${p.namespace}/${p.name}`, p])),
    pods: parts.pods,
    nodes: parts.nodes ?? [],
    clusterPolicies: parts.clusterPolicies ?? [],
  };
}
