/** The normalizer of each kind the sources read, in one table: the workload kinds (normalize.ts)
 * and the service kinds (normalize-service.ts), which builds on normalize.ts. */
import { FailClosedError } from './errors';
import type { NamespaceInfo, NetworkPolicyInfo, PodInfo } from './model';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod, type NormalizeOptions, type ObjectKind } from './normalize';
import { normalizeEndpointSlice, normalizeNode, normalizeService } from './normalize-service';
import type { EndpointSliceInfo, NodeInfo, ServiceInfo } from './service-model';
import type { ClusterNetworkPolicyInfo } from './cluster-policy-model';
import { normalizeClusterNetworkPolicy } from './normalize-cluster-policy';

/** With a problem sink, an object that must fail closed is reported there and its replacement
 * returned: what sources deliver (API and manifests alike). */
function orReplacement<T>(normalize: (raw: unknown, opts?: NormalizeOptions) => T): (raw: unknown, opts?: NormalizeOptions) => T {
  return (raw, opts = {}) => {
    try {
      return normalize(raw, opts);
    } catch (err) {
      if (!(err instanceof FailClosedError) || !opts.onProblem) throw err;
      opts.onProblem(err);
      return err.replacement as T;
    }
  };
}

export const normalizers: Record<
  ObjectKind,
  (raw: unknown, opts?: NormalizeOptions) => PodInfo | NamespaceInfo | NetworkPolicyInfo | ServiceInfo | EndpointSliceInfo | NodeInfo | ClusterNetworkPolicyInfo
> = {
  Pod: normalizePod,
  Namespace: normalizeNamespace,
  NetworkPolicy: orReplacement(normalizeNetworkPolicy),
  Service: normalizeService,
  EndpointSlice: normalizeEndpointSlice,
  Node: normalizeNode,
  ClusterNetworkPolicy: normalizeClusterNetworkPolicy,
};
