/** The slice of Kubernetes objects enforcement needs, normalized from either a LIST (typed
 * client models) or a WATCH (raw JSON) or a manifest file. Nothing else is kept. */

export interface LabelSelectorRequirement {
  key: string;
  operator: string;
  values?: string[];
}

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: LabelSelectorRequirement[];
}

export interface ContainerPortInfo {
  name?: string;
  containerPort: number;
  protocol: string;
}

export interface PodInfo {
  namespace: string;
  name: string;
  labels: Record<string, string>;
  nodeName?: string;
  phase?: string;
  /** status.podIPs (or status.podIP), as given. */
  ips: string[];
  hostNetwork: boolean;
  ports: ContainerPortInfo[];
}

export interface NamespaceInfo {
  name: string;
  labels: Record<string, string>;
  /** The `nfkube.io/policy-mode` annotation, when present (src/policy/modes.ts reads it). */
  policyMode?: string;
}

export interface IPBlockInfo {
  cidr: string;
  except?: string[];
}

export interface PeerInfo {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: IPBlockInfo;
}

export interface PolicyPortInfo {
  protocol?: string;
  /** A number, or a named container port. */
  port?: number | string;
  endPort?: number;
}

export interface PolicyRuleInfo {
  ports?: PolicyPortInfo[];
  /** `from` for ingress, `to` for egress; undefined means all peers. */
  peers?: PeerInfo[];
}

export interface NetworkPolicyInfo {
  namespace: string;
  name: string;
  podSelector: LabelSelector;
  /** As written; undefined means the API's defaulting applies. */
  policyTypes?: string[];
  ingress?: PolicyRuleInfo[];
  egress?: PolicyRuleInfo[];
  /** Input problems survived by failing closed (a part that could not be read was left out and
   * allows nothing); absent when the object was read whole. */
  problems?: Array<{ field: string; message: string }>;
}
