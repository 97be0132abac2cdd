/** The compiled NetworkPolicy intent for one node: what the renderer turns into nftables objects.
 *
 * Plain data, no behaviour. `compileFull` (compile.ts) builds a whole `PolicyIR` from a snapshot;
 * `PolicyEngine` (engine.ts) keeps one up to date and returns a `PolicyDelta` per event.
 *
 * Rendering this IR is meant to look like (names are the renderer's choice; ids below are safe
 * to embed: `[a-z0-9_]`, at most 20 characters, stable across restarts and recompiles because
 * they are hashes of canonical identities, never counters):
 *
 *   ingress base chain:  ip daddr vmap @ingress_v4 / ip6 daddr vmap @ingress_v6
 *                        (every ip of a Target whose `ingress` is not null -> goto the chain
 *                        of its combination of policies)
 *   egress base chain:   ip saddr vmap @egress_v4 / ip6 saddr vmap @egress_v6 (same for egress)
 *   combination chain:   jump pol_<policyId>_<dir> for each id in Target.ingress / .egress (shared
 *                        by the targets of the same ids); the default deny
 *   policy chain:        per CompiledRule, per peer kind and address family, one rule that
 *                        accepts on (peer match) and (port match)
 *
 * Address semantics per direction: for ingress the peer is the packet's source and the port
 * is the destination port on the target; for egress the peer is the packet's destination.
 */
import type { IpFamily } from '../../net/ip';

/** Protocols NetworkPolicy knows; the API's spelling. */
export type Protocol = 'TCP' | 'UDP' | 'SCTP';

export type Direction = 'ingress' | 'egress';

/** What the policy engine consumes: normalized objects (src/k8s/model.ts). */
export interface PolicyInputs {
  pods: Iterable<import('../../k8s/model').PodInfo>;
  namespaces: Iterable<import('../../k8s/model').NamespaceInfo>;
  policies: Iterable<import('../../k8s/model').NetworkPolicyInfo>;
}

/** A pod on this node that at least one policy isolates (in either direction). Pods that no
 * policy selects are not listed: they need no enforcement. */
export interface Target {
  /** `namespace/name`. The map key of `PolicyIR.targets`. */
  key: string;
  /** Short stable id derived from `key`. */
  id: string;
  /** Canonical addresses (IPv4 dotted quad, IPv6 RFC 5952), sorted, unique. */
  v4: string[];
  v6: string[];
  /** Ids of the policies that isolate this pod for ingress, sorted; null = not isolated for
   * ingress (no vmap entry: traffic to it passes). Never an empty array. */
  ingress: string[] | null;
  /** Same for egress. */
  egress: string[] | null;
}

/** A numeric port match. `port` absent = every port of `protocol`; `endPort` present =
 * the inclusive range port..endPort. */
export interface PortMatch {
  protocol: Protocol;
  port?: number;
  endPort?: number;
}

/** A reference to something a rule matches the peer address against. */
export type PeerRef =
  | { kind: 'pods'; set: string } // id of a PeerSet
  | { kind: 'ipBlock'; set: string }; // id of an IpBlockSet

/** One entry of spec.ingress[] / spec.egress[].
 *
 * Matches a packet when (peer matches) AND (port matches):
 * - `peers`: 'any' = every address (from/to missing or empty). Otherwise a union of refs; an
 *   EMPTY array matches nothing (a rule entry with an input error fails closed), so the entry
 *   renders to no nft rule at all.
 * - `ports`: 'any' = every port and protocol (ports missing or empty). Otherwise the union of
 *   the numeric `PortMatch`es and, when `namedPorts` is set, of (address, protocol, dport)
 *   membership in that NamedPortSet, where address is the packet's destination (the target pod
 *   for ingress, the peer for egress). `ports: []` with no `namedPorts` matches nothing.
 */
export interface CompiledRule {
  peers: 'any' | PeerRef[];
  ports: 'any' | PortMatch[];
  /** id of a NamedPortSet; only when ports is an array and the entry has named ports. */
  namedPorts?: string;
}

/** An input error in a policy. The policy still isolates what it selects; the rule entry the
 * error is in allows nothing. */
export interface PolicyError {
  /** `namespace/name` of the NetworkPolicy. */
  policy: string;
  /** Field path, e.g. `spec.ingress[0].from[1].ipBlock.cidr`. */
  field: string;
  message: string;
}

/** A NetworkPolicy as compiled. Depends only on the policy object itself (set ids are identities
 * of selectors, not of members), so it changes only when the policy does. */
export interface CompiledPolicy {
  /** Short stable id derived from `namespace/name`; the map key of `PolicyIR.policies`. */
  id: string;
  namespace: string;
  name: string;
  /** Present iff the policy isolates its pods for ingress (after policyTypes defaulting);
   * `[]` = isolate and allow nothing. Rules keep spec order. */
  ingress?: CompiledRule[];
  /** Same for egress. */
  egress?: CompiledRule[];
  /** Input errors, in field order; empty when the policy is valid. */
  errors: PolicyError[];
}

/** The addresses of the pods a peer selector matches, cluster-wide. Shared by every rule in every
 * policy whose peer has the same identity: (policy namespace when there is no namespaceSelector,
 * canonical namespaceSelector, canonical podSelector). Excludes hostNetwork pods, pods without an
 * IP, and pods in phase Succeeded/Failed. */
export interface PeerSet {
  id: string;
  /** Human-readable identity, e.g. `ns=prod pods={app=web}` or `nsSel={team=a} pods={}`. */
  describe: string;
  v4: string[];
  v6: string[];
}

/** An ipBlock: `cidr` minus `except`, as inclusive address ranges (an interval set). One family. */
export interface IpBlockSet {
  id: string;
  family: IpFamily;
  /** Canonical cidr (host bits cleared) and excepts, sorted. */
  cidr: string;
  except: string[];
  /** Disjoint, sorted, inclusive [first, last] address ranges. */
  ranges: Array<[string, string]>;
}

export interface PortTriple {
  ip: string;
  protocol: Protocol;
  port: number;
}

/** Concatenated-set content (ip . protocol . port) resolving named ports.
 * - ingress: for the pods on this node that are isolated for ingress, every container port whose
 *   (name, protocol) is in `ports` -> (pod ip, protocol, containerPort). Keyed by `ports` only:
 *   the rule is reached only for the policy's own targets, so a triple of another pod is inert.
 * - egress: the same over every eligible pod in the cluster (any pod may be the destination); the
 *   rule also requires the peer match, so only peers' triples take effect.
 * Identity: (direction, sorted list of (protocol, name)). */
export interface NamedPortSet {
  id: string;
  direction: Direction;
  ports: Array<{ protocol: Protocol; name: string }>;
  /** Sorted by ip, protocol, port. */
  v4: PortTriple[];
  v6: PortTriple[];
}

/** The whole compiled intent. Maps are keyed by id (targets by `namespace/name`); every array
 * inside is canonically sorted so two IRs of the same intent are deep-equal. */
export interface PolicyIR {
  nodeName: string;
  targets: Map<string, Target>;
  policies: Map<string, CompiledPolicy>;
  peerSets: Map<string, PeerSet>;
  ipBlockSets: Map<string, IpBlockSet>;
  namedPortSets: Map<string, NamedPortSet>;
}

/** Element changes of an existing set (never of one created or removed in the same delta). */
export interface SetElementChange<E> {
  set: string;
  v4: E[];
  v6: E[];
}

/** What one engine call changed, net (a change undone within the call does not appear).
 *
 * Apply in this order so nothing references a missing object:
 *   1. create sets (peerSets.create, ipBlockSets.create, namedPortSets.create: full contents)
 *   2. set element adds/removes (existing sets only)
 *   3. policies.upsert (rewrite both chains of each listed policy; a direction that became
 *      absent deletes that chain after step 4), then targets.upsert (vmap entries + combination chains)
 *   4. targets.remove, policies.remove
 *   5. remove sets
 * A delta where every list is empty means nothing enforcement needs changed. */
export interface PolicyDelta {
  targets: { upsert: Target[]; remove: string[] };
  policies: { upsert: CompiledPolicy[]; remove: string[] };
  peerSets: {
    create: PeerSet[];
    remove: string[];
    add: SetElementChange<string>[];
    del: SetElementChange<string>[];
  };
  ipBlockSets: { create: IpBlockSet[]; remove: string[] };
  namedPortSets: {
    create: NamedPortSet[];
    remove: string[];
    add: SetElementChange<PortTriple>[];
    del: SetElementChange<PortTriple>[];
  };
}

export function emptyDelta(): PolicyDelta {
  return {
    targets: { upsert: [], remove: [] },
    policies: { upsert: [], remove: [] },
    peerSets: { create: [], remove: [], add: [], del: [] },
    ipBlockSets: { create: [], remove: [] },
    namedPortSets: { create: [], remove: [], add: [], del: [] },
  };
}

export function isEmptyDelta(d: PolicyDelta): boolean {
  return (
    d.targets.upsert.length + d.targets.remove.length +
      d.policies.upsert.length + d.policies.remove.length +
      d.peerSets.create.length + d.peerSets.remove.length + d.peerSets.add.length + d.peerSets.del.length +
      d.ipBlockSets.create.length + d.ipBlockSets.remove.length +
      d.namedPortSets.create.length + d.namedPortSets.remove.length +
      d.namedPortSets.add.length + d.namedPortSets.del.length ===
    0
  );
}
