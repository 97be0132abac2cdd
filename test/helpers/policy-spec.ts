/** NetworkPolicy read straight from the API reference, naively (no indexes, no sets, no sharing):
 * which pods a policy isolates in a direction and whether it then allows a flow. The independent
 * model the property tests compare the compiler (and the ClusterNetworkPolicy evaluator) with. */
import type { LabelSelector, NamespaceInfo, NetworkPolicyInfo, PeerInfo, PodInfo, PolicyPortInfo } from '../../src/k8s/model';
import { ipInCidr, parseCidr, parseIp } from '../../src/net/ip';
import type { Direction, Protocol } from '../../src/policy/engine/ir';

/** The namespaces and NetworkPolicies a verdict depends on. */
export interface PolicyWorld {
  namespaces: Map<string, NamespaceInfo>;
  policies: Map<string, NetworkPolicyInfo>;
}

const has = (o: Record<string, string>, key: string): boolean => Object.prototype.hasOwnProperty.call(o, key);

/** Label selector semantics; an unknown operator selects nothing. */
export function selects(sel: LabelSelector, labels: Record<string, string>): boolean {
  for (const [k, v] of Object.entries(sel.matchLabels ?? {})) if (labels[k] !== v) return false;
  for (const e of sel.matchExpressions ?? []) {
    const present = has(labels, e.key);
    if (e.operator === 'In' && !(present && e.values!.includes(labels[e.key]))) return false;
    if (e.operator === 'NotIn' && present && e.values!.includes(labels[e.key])) return false;
    if (e.operator === 'Exists' && !present) return false;
    if (e.operator === 'DoesNotExist' && present) return false;
    if (!['In', 'NotIn', 'Exists', 'DoesNotExist'].includes(e.operator)) return false;
  }
  return true;
}

/** Pods that take part in policy at all: running (or pending) with an address, not host network. */
export const live = (p: PodInfo): boolean => p.phase !== 'Succeeded' && p.phase !== 'Failed' && !p.hostNetwork && p.ips.length > 0;

/** A namespace's labels, with the one the API server gives every namespace. */
export function namespaceLabels(namespaces: Map<string, NamespaceInfo>, name: string): Record<string, string> {
  return { ...(namespaces.get(name)?.labels ?? {}), 'kubernetes.io/metadata.name': name };
}

/** Whether `ip` lies in `cidr` (false across families or for an unreadable CIDR). */
export function inCidr(ip: string, cidr: string): boolean {
  const addr = parseIp(ip);
  const net = parseCidr(cidr);
  return !!addr && !!net && net.family === addr.family && ipInCidr(addr, net);
}

/** Whether a named container port of `pod` is this protocol and port. */
export function namedPortIs(pod: PodInfo | undefined, name: string, protocol: Protocol, port: number): boolean {
  return (pod?.ports ?? []).some((c) => c.name === name && (c.protocol ?? 'TCP') === protocol && c.containerPort === port);
}

export function effectiveTypes(np: NetworkPolicyInfo): Direction[] {
  if (np.policyTypes && np.policyTypes.length > 0) return np.policyTypes.map((t) => (t === 'Ingress' ? 'ingress' : 'egress'));
  return np.egress && np.egress.length > 0 ? ['ingress', 'egress'] : ['ingress'];
}

export interface Flow {
  /** The pod the policy is about (destination for ingress, source for egress). */
  self: PodInfo;
  /** The other end's address and, when it is a pod, the pod. */
  peerIp: string;
  peerPod?: PodInfo;
  protocol: Protocol;
  port: number;
  /** The destination pod, whose container ports named ports resolve against. */
  dst?: PodInfo;
}

function peerMatches(w: PolicyWorld, peers: PeerInfo[] | undefined, policyNs: string, f: Flow): boolean {
  if (!peers || peers.length === 0) return true;
  return peers.some((p) => {
    if (p.ipBlock) return inCidr(f.peerIp, p.ipBlock.cidr) && !(p.ipBlock.except ?? []).some((c) => inCidr(f.peerIp, c));
    const pod = f.peerPod;
    if (!pod || !live(pod)) return false;
    const nsOk = p.namespaceSelector ? selects(p.namespaceSelector, namespaceLabels(w.namespaces, pod.namespace)) : pod.namespace === policyNs;
    return nsOk && (!p.podSelector || selects(p.podSelector, pod.labels ?? {}));
  });
}

function portMatches(ports: PolicyPortInfo[] | undefined, f: Flow): boolean {
  if (!ports || ports.length === 0) return true;
  return ports.some((p) => {
    if ((p.protocol ?? 'TCP') !== f.protocol) return false;
    if (p.port === undefined) return true;
    if (typeof p.port === 'number') return p.endPort !== undefined ? f.port >= p.port && f.port <= p.endPort : f.port === p.port;
    return namedPortIs(f.dst, p.port, f.protocol, f.port);
  });
}

/** Which rules count: all of them unless the caller knows some could not be read. */
export type RuleValidity = (np: NetworkPolicyInfo, dir: Direction, index: number) => boolean;

/** The spec's answer for one direction: undefined when no policy isolates `self` that way. */
export function networkPolicyAllows(w: PolicyWorld, dir: Direction, f: Flow, valid: RuleValidity = () => true): boolean | undefined {
  const selecting = [...w.policies.values()].filter((np) => np.namespace === f.self.namespace && selects(np.podSelector, f.self.labels ?? {}) && effectiveTypes(np).includes(dir));
  if (selecting.length === 0) return undefined;
  return selecting.some((np) => (np[dir] ?? []).some((r, i) => valid(np, dir, i) && peerMatches(w, r.peers, np.namespace, f) && portMatches(r.ports, f)));
}
