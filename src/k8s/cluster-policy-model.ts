/** ClusterNetworkPolicy (policy.networking.k8s.io/v1alpha2, cluster-scoped) as enforcement reads
 * it: plain data normalized from a LIST model, a WATCH event or a manifest
 * (normalize-cluster-policy.ts). What could not be read is already resolved here, failing
 * closed per rule (see CnpRuleInfo.failedClosed), and listed in `problems`. */
import type { LabelSelector } from './model';

export const CNP_API_VERSION = 'policy.networking.k8s.io/v1alpha2';

export type CnpTier = 'Admin' | 'Baseline';
export type CnpAction = 'Accept' | 'Deny' | 'Pass';

/** Pods in the namespaces `namespaceSelector` selects whose labels `podSelector` matches
 * (`{}`: every pod). The subject `namespaces` and the peer `namespaces` are this with an empty
 * podSelector. Host-network pods never match. */
export interface CnpPodsSelector {
  namespaceSelector: LabelSelector;
  podSelector: LabelSelector;
}

export type CnpPeerInfo =
  | ({ kind: 'pods' } & CnpPodsSelector)
  /** Egress only: CIDRs, as written (the compiler parses them). */
  | { kind: 'networks'; networks: string[] }
  /** Egress only (experimental): the status.addresses of the Nodes the selector matches. */
  | { kind: 'nodes'; nodeSelector: LabelSelector };

/** A TCP/UDP/SCTP destination port: every port (no `port`), one, or port..endPort; or a named
 * container port of the destination pod (experimental). */
export type CnpProtocolInfo = { protocol: 'TCP' | 'UDP' | 'SCTP'; port?: number; endPort?: number } | { namedPort: string };

export interface CnpRuleInfo {
  /** spec.ingress[i].name / spec.egress[i].name, when given. */
  name?: string;
  action: CnpAction;
  /** Readable peers; every rule of the API has at least one. */
  peers: CnpPeerInfo[];
  /** Absent: every protocol and port. */
  protocols?: CnpProtocolInfo[];
  /** Part of the rule could not be read: an Accept rule then matches nothing, a Deny or Pass
   * rule every packet of its direction (as the API asks of an implementation that meets a peer
   * it does not know). The reason is in the policy's problems. */
  failedClosed?: true;
}

export interface ClusterNetworkPolicyInfo {
  name: string;
  tier: CnpTier;
  /** 0-1000; lower goes first. */
  priority: number;
  subject: CnpPodsSelector;
  ingress: CnpRuleInfo[];
  egress: CnpRuleInfo[];
  /** What was survived by failing closed, with the field; absent when read whole. */
  problems?: Array<{ field: string; message: string }>;
}
