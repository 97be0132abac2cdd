/** The compiled ClusterNetworkPolicy intent: plain data the cluster tiers' renderer
 * (render.ts) turns into chains. Sets are shared with NetworkPolicy's kinds (ir.ts): pod address
 * sets (PeerSet), CIDR sets (IpBlockSet), named-port sets (NamedPortSet); two kinds are the
 * tiers' own: the subject sets (the local pods a policy applies to) and the node address sets. */
import type { CnpAction, CnpTier } from '../../k8s/cluster-policy-model';
import type { Direction, PeerRef, PolicyError, PortMatch } from '../engine/ir';

export type { CnpAction, CnpTier };

/** A peer: a pod address set or a node address set (both `<id>_v4`/`<id>_v6`), or a CIDR set. */
export type ClusterPeerRef = PeerRef | { kind: 'nodes'; set: string };

/** One rule, in spec order. It matches when (peer matches) and (port matches), as a
 * NetworkPolicy rule entry does (ir.ts CompiledRule): `peers: []` matches nothing; 'any'
 * everything. */
export interface CompiledClusterRule {
  /** Index in spec.ingress / spec.egress. */
  index: number;
  /** The rule's `name`, when given. */
  name?: string;
  action: CnpAction;
  peers: 'any' | ClusterPeerRef[];
  ports: 'any' | PortMatch[];
  /** A NamedPortSet id (the destination pod's named ports, cluster-wide). */
  namedPorts?: string;
  /** Read or compiled failing closed (see CnpRuleInfo.failedClosed). */
  failedClosed?: true;
}

export interface CompiledClusterPolicy {
  /** `c` + 12 hex digits of the policy's name: stable, safe in nft names. */
  id: string;
  name: string;
  tier: CnpTier;
  priority: number;
  ingress: CompiledClusterRule[];
  egress: CompiledClusterRule[];
  errors: PolicyError[];
}

/** The addresses of the Nodes a node selector matches (status.addresses). */
export interface NodeSet {
  id: string;
  describe: string;
  v4: string[];
  v6: string[];
}

/** The local, eligible (not host-network) pods a policy's subject selects: their addresses. */
export interface SubjectSet {
  /** The policy's id. */
  id: string;
  v4: string[];
  v6: string[];
}

/** The order policies are evaluated in within a tier: ascending priority, then ascending name
 * (names are unique: a cluster-scoped kind), so equal priorities are never left to chance. */
export function comparePolicies(a: Pick<CompiledClusterPolicy, 'priority' | 'name'>, b: Pick<CompiledClusterPolicy, 'priority' | 'name'>): number {
  return a.priority - b.priority || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0);
}

export const TIERS: readonly CnpTier[] = ['Admin', 'Baseline'];
export const DIRECTIONS: readonly Direction[] = ['ingress', 'egress'];
