/** The slice of Services, EndpointSlices and Nodes the service proxy reads, normalized (see
 * normalize-service.ts). Addresses and CIDRs are canonical text, so two spellings of one
 * address are one value; absent optional fields are omitted, never `undefined`. */

export type ServiceProtocol = 'TCP' | 'UDP' | 'SCTP';

export interface ServicePortInfo {
  /** `''` for the single unnamed port. */
  name: string;
  protocol: ServiceProtocol;
  port: number;
  /** A number, or the name of the endpoints' port (resolved through the EndpointSlice). */
  targetPort: number | string;
  nodePort?: number;
}

export interface ServiceInfo {
  namespace: string;
  name: string;
  type: 'ClusterIP' | 'NodePort' | 'LoadBalancer' | 'ExternalName';
  /** spec.clusterIPs (or spec.clusterIP); empty for headless (`None`) and ExternalName. */
  clusterIPs: string[];
  headless: boolean;
  ports: ServicePortInfo[];
  externalIPs: string[];
  /** status.loadBalancer.ingress[].ip, without those whose ipMode is Proxy (kube-proxy leaves
   * those to the load balancer). */
  loadBalancerIPs: string[];
  /** spec.loadBalancerSourceRanges, else the service.beta.kubernetes.io/load-balancer-source-ranges
   * annotation, as canonical CIDRs. */
  loadBalancerSourceRanges: string[];
  externalTrafficPolicy: 'Cluster' | 'Local';
  internalTrafficPolicy: 'Cluster' | 'Local';
  healthCheckNodePort?: number;
  sessionAffinity: 'None' | 'ClientIP';
  /** sessionAffinityConfig.clientIP.timeoutSeconds, defaulted to 10800 for ClientIP. */
  affinityTimeoutSeconds?: number;
  /** The service.kubernetes.io/service-proxy-name label: another proxy's service. */
  proxyName?: string;
  /** The service.kubernetes.io/headless label is set: kube-proxy's informers never see it. */
  headlessLabel?: true;
  /** metadata.creationTimestamp, ms since the epoch: the older of two Services claiming one
   * address or port keeps it. */
  createdMs?: number;
}

export interface EndpointPortInfo {
  /** `''` when unnamed. */
  name: string;
  protocol: ServiceProtocol;
  port?: number;
}

export interface EndpointInfo {
  /** addresses[0]: kube-proxy uses the first address only. */
  address: string;
  /** Conditions as kube-proxy defaults them: ready and serving when absent, not terminating. */
  ready: boolean;
  serving: boolean;
  terminating: boolean;
  nodeName?: string;
  zone?: string;
  zoneHints?: string[];
  nodeHints?: string[];
}

export interface EndpointSliceInfo {
  namespace: string;
  name: string;
  /** The kubernetes.io/service-name label; a slice without it (or with kube-proxy's skip labels,
   * service.kubernetes.io/service-proxy-name or service.kubernetes.io/headless) belongs to no
   * Service. */
  serviceName?: string;
  addressType: 'IPv4' | 'IPv6' | 'FQDN';
  ports: EndpointPortInfo[];
  endpoints: EndpointInfo[];
  /** endpoints.kubernetes.io/last-change-trigger-time, ms since the epoch. */
  triggerTimeMs?: number;
}

export interface NodeAddressInfo {
  type: string;
  address: string;
}

export interface NodeInfo {
  name: string;
  /** metadata.labels, when it has any (ClusterNetworkPolicy `nodes` peers select by them). */
  labels?: Record<string, string>;
  /** topology.kubernetes.io/zone */
  zone?: string;
  addresses: NodeAddressInfo[];
  /** spec.podCIDRs (or spec.podCIDR), canonical. */
  podCIDRs: string[];
  /** Being deleted (metadata.deletionTimestamp), or tainted ToBeDeletedByClusterAutoscaler: the
   * proxy's /healthz turns 503 so load balancers drain the node first. */
  toBeDeleted?: true;
}

/** A ClusterIP Service as the API server defaults one: no external addresses, Cluster traffic
 * policies, no session affinity; `over` sets the rest. */
export function defaultedService(namespace: string, name: string, over: Partial<ServiceInfo> = {}): ServiceInfo {
  return {
    namespace,
    name,
    type: 'ClusterIP',
    clusterIPs: [],
    headless: false,
    ports: [],
    externalIPs: [],
    loadBalancerIPs: [],
    loadBalancerSourceRanges: [],
    externalTrafficPolicy: 'Cluster',
    internalTrafficPolicy: 'Cluster',
    sessionAffinity: 'None',
    ...over,
  };
}
