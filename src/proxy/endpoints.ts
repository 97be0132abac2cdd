/** Which endpoints of a service port this node sends traffic to, as kube-proxy decides it
 * (pkg/proxy/topology.go CategorizeEndpoints): ready endpoints, narrowed by topology hints when
 * every ready endpoint has one and one names this node (or its zone); serving-and-terminating ones
 * when none is ready; for Local traffic policies the node-local subset, with the same fallback. */

export interface ProxyEndpoint {
  ip: string;
  port: number;
  ready: boolean;
  serving: boolean;
  terminating: boolean;
  /** On this node. */
  local: boolean;
  zoneHints?: readonly string[];
  nodeHints?: readonly string[];
}

export interface TrafficPolicies {
  internalLocal: boolean;
  /** ETP Local on an externally reachable service. */
  externalLocal: boolean;
  /** NodePort, externalIPs or load-balancer IPs. */
  externallyAccessible: boolean;
}

export interface Categorized {
  /** For Cluster policy (topology applied); empty when the port never uses Cluster policy. */
  cluster: ProxyEndpoint[];
  /** For Local policy; empty when none is usable or the port never uses Local policy. */
  local: ProxyEndpoint[];
  /** The union: every endpoint this node may DNAT to. */
  reachable: ProxyEndpoint[];
  /** Whether the service has usable endpoints anywhere in the cluster. */
  hasAny: boolean;
}

/** kube-proxy's UsesClusterEndpoints: Cluster internal policy, or any external access (ETP Local
 * still short-circuits pod and node traffic to the cluster endpoints). */
export function usesClusterEndpoints(p: TrafficPolicies): boolean {
  return !p.internalLocal || p.externallyAccessible;
}

export function usesLocalEndpoints(p: TrafficPolicies): boolean {
  return p.internalLocal || (p.externalLocal && p.externallyAccessible);
}

type TopologyMode = '' | 'PreferSameNode' | 'PreferSameZone';

function topologyMode(endpoints: readonly ProxyEndpoint[], nodeName: string, zone: string | undefined): TopologyMode {
  let anyReady = false;
  let allNodeHints = true;
  let forNode = false;
  let allZoneHints = true;
  let forZone = false;
  for (const ep of endpoints) {
    if (!ep.ready) continue;
    anyReady = true;
    if (!ep.nodeHints?.length) allNodeHints = false;
    else if (ep.nodeHints.includes(nodeName)) forNode = true;
    if (!ep.zoneHints?.length) allZoneHints = false;
    else if (zone !== undefined && ep.zoneHints.includes(zone)) forZone = true;
  }
  if (!anyReady) return '';
  if (allNodeHints && forNode) return 'PreferSameNode';
  if (allZoneHints && forZone) return 'PreferSameZone';
  return '';
}

function availableForTopology(ep: ProxyEndpoint, mode: TopologyMode, nodeName: string, zone: string | undefined): boolean {
  if (mode === 'PreferSameNode') return !!ep.nodeHints?.includes(nodeName);
  if (mode === 'PreferSameZone') return zone !== undefined && !!ep.zoneHints?.includes(zone);
  return true;
}

export function categorizeEndpoints(endpoints: readonly ProxyEndpoint[], p: TrafficPolicies, nodeName: string, zone: string | undefined): Categorized {
  const out: Categorized = { cluster: [], local: [], reachable: [], hasAny: false };
  if (endpoints.length === 0) return out;
  let mode: TopologyMode = '';
  let servingTerminating = false;
  if (usesClusterEndpoints(p)) {
    mode = topologyMode(endpoints, nodeName, zone);
    out.cluster = endpoints.filter((ep) => ep.ready && availableForTopology(ep, mode, nodeName, zone));
    // No ready endpoint anywhere (topology was already given up when none was ready for it).
    if (out.cluster.length === 0) out.cluster = endpoints.filter((ep) => ep.serving && ep.terminating);
    if (out.cluster.length > 0) out.hasAny = true;
  }
  if (!usesLocalEndpoints(p)) {
    out.reachable = out.cluster;
    return out;
  }
  let localReady = false;
  let localServingTerminating = false;
  for (const ep of endpoints) {
    if (ep.ready) {
      out.hasAny = true;
      if (ep.local) localReady = true;
    } else if (ep.serving && ep.terminating) {
      out.hasAny = true;
      if (ep.local) localServingTerminating = true;
    }
  }
  if (localReady) out.local = endpoints.filter((ep) => ep.local && ep.ready);
  else if (localServingTerminating) {
    servingTerminating = true;
    out.local = endpoints.filter((ep) => ep.local && ep.serving && ep.terminating);
  }
  if (!usesClusterEndpoints(p)) {
    out.reachable = out.local;
    return out;
  }
  if (mode === '' && !servingTerminating) {
    out.reachable = out.cluster;
    return out;
  }
  const union = new Map<string, ProxyEndpoint>();
  for (const ep of [...out.cluster, ...out.local]) union.set(`${ep.ip} ${ep.port}`, ep);
  out.reachable = [...union.values()];
  return out;
}
