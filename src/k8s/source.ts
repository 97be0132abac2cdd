/** The contract every source of cluster state keeps (API server informers, a manifests
 * directory), and the normalized cache that turns raw changes into meaningful ones. */
import { isDeepStrictEqual } from 'node:util';
import type { SourceError } from './errors';
import type { NamespaceInfo, NetworkPolicyInfo, PodInfo } from './model';
import type { ObjectKind } from './normalize';
import type { EndpointSliceInfo, NodeInfo, ServiceInfo } from './service-model';
import type { ClusterNetworkPolicyInfo } from './cluster-policy-model';

export type { ObjectKind } from './normalize';
export type { SourceError } from './errors';

interface ObjectOfKind {
  Pod: PodInfo;
  Namespace: NamespaceInfo;
  NetworkPolicy: NetworkPolicyInfo;
  Service: ServiceInfo;
  EndpointSlice: EndpointSliceInfo;
  Node: NodeInfo;
  ClusterNetworkPolicy: ClusterNetworkPolicyInfo;
}

export type ChangeOf<K extends ObjectKind> = {
  kind: K;
  /** `upsert` carries the new object; `delete` the last one delivered. */
  type: 'upsert' | 'delete';
  /** `namespace/name`, or `name` for Namespaces. */
  key: string;
  object: Readonly<ObjectOfKind[K]>;
  /** Milliseconds since the epoch of the object's last change as the API server recorded it
   * (the latest metadata.managedFields time), when the source knows it; deletes carry none (the
   * API records no time for them). */
  changedAt?: number;
};

export type ClusterChange =
  | ChangeOf<'Pod'>
  | ChangeOf<'Namespace'>
  | ChangeOf<'NetworkPolicy'>
  | ChangeOf<'Service'>
  | ChangeOf<'EndpointSlice'>
  | ChangeOf<'Node'>
  | ChangeOf<'ClusterNetworkPolicy'>;

/** The kinds NetworkPolicy enforcement reads: what a source watches unless asked for more.
 * ClusterNetworkPolicy is optional (a cluster may not serve its CRD; see OPTIONAL_KINDS), and
 * Nodes are read for its `nodes` peers. */
export const POLICY_KINDS: readonly ObjectKind[] = ['Namespace', 'Pod', 'NetworkPolicy', 'Node', 'ClusterNetworkPolicy'];
/** Kinds served by a CRD that may be missing: their absence is said once and enforcement goes on
 * without them, until they appear. */
export const OPTIONAL_KINDS: ReadonlySet<ObjectKind> = new Set(['ClusterNetworkPolicy']);
/** A change of a kind NetworkPolicy enforcement reads. */
export type PolicyChange = ChangeOf<'Pod'> | ChangeOf<'Namespace'> | ChangeOf<'NetworkPolicy'>;

export function isPolicyChange(c: ClusterChange): c is PolicyChange {
  return c.kind === 'Pod' || c.kind === 'Namespace' || c.kind === 'NetworkPolicy';
}

/** The kinds the service proxy reads. */
export const PROXY_KINDS: readonly ObjectKind[] = ['Service', 'EndpointSlice', 'Node'];

/** Normalized objects by key. Treat them as immutable: sources share them with every consumer. */
export interface ClusterSnapshot {
  pods: ReadonlyMap<string, Readonly<PodInfo>>;
  namespaces: ReadonlyMap<string, Readonly<NamespaceInfo>>;
  policies: ReadonlyMap<string, Readonly<NetworkPolicyInfo>>;
  /** Present when the source watches the proxy's kinds (PROXY_KINDS). */
  services?: ReadonlyMap<string, Readonly<ServiceInfo>>;
  endpointSlices?: ReadonlyMap<string, Readonly<EndpointSliceInfo>>;
  nodes?: ReadonlyMap<string, Readonly<NodeInfo>>;
  /** Present when the source watches ClusterNetworkPolicies. */
  clusterPolicies?: ReadonlyMap<string, Readonly<ClusterNetworkPolicyInfo>>;
}

export interface SourceHandlers {
  /** Called once per meaningful change, after start() has resolved; never for the initial state. */
  onChange(change: ClusterChange): void;
  /** Bad objects, bad files, lost connections. The source keeps running. */
  onError(err: SourceError): void;
  /** What does not affect enforcement but may be a mistake (a kind nfkube does not read). */
  onWarning?(warning: SourceError): void;
  /** What the source did that an operator may want to know: a re-read after 410 Gone, a
   * fallback from WatchList to LIST. */
  onNotice?(message: string): void;
}

export interface ClusterSource {
  /** Resolves with the complete initial state once every kind has been read; nothing should be
   * enforced before. Changes are delivered from then on, relative to this snapshot. */
  start(): Promise<ClusterSnapshot>;
  /** The current normalized state. */
  snapshot(): ClusterSnapshot;
  stop(): Promise<void>;
}

/** The normalized cache a source keeps: it drops changes that change nothing enforcement reads
 * (status heartbeats, annotations, resourceVersion bumps) and delivers the rest, once live. */
export class ClusterState {
  private readonly maps: { [K in ObjectKind]: Map<string, ObjectOfKind[K]> } = {
    Pod: new Map(),
    Namespace: new Map(),
    NetworkPolicy: new Map(),
    Service: new Map(),
    EndpointSlice: new Map(),
    Node: new Map(),
    ClusterNetworkPolicy: new Map(),
  };
  /** Before the initial state is complete changes are only cached. */
  private live = false;

  constructor(private readonly handlers: SourceHandlers) {}

  goLive(): ClusterSnapshot {
    this.live = true;
    return this.snapshot();
  }

  snapshot(): ClusterSnapshot {
    return {
      pods: new Map(this.maps.Pod),
      namespaces: new Map(this.maps.Namespace),
      policies: new Map(this.maps.NetworkPolicy),
      services: new Map(this.maps.Service),
      endpointSlices: new Map(this.maps.EndpointSlice),
      nodes: new Map(this.maps.Node),
      clusterPolicies: new Map(this.maps.ClusterNetworkPolicy),
    };
  }

  get<K extends ObjectKind>(kind: K, key: string): ObjectOfKind[K] | undefined {
    return this.maps[kind].get(key);
  }

  keys(kind: ObjectKind): IterableIterator<string> {
    return this.maps[kind].keys();
  }

  upsert<K extends ObjectKind>(kind: K, key: string, object: ObjectOfKind[K], changedAt?: number): void {
    const map = this.maps[kind];
    const old = map.get(key);
    if (old !== undefined && isDeepStrictEqual(old, object)) return;
    map.set(key, object);
    this.emit({ kind, type: 'upsert', key, object, ...(changedAt === undefined ? {} : { changedAt }) } as ClusterChange);
  }

  delete(kind: ObjectKind, key: string): void {
    const map = this.maps[kind];
    const old = map.get(key);
    if (old === undefined) return;
    map.delete(key);
    this.emit({ kind, type: 'delete', key, object: old } as ClusterChange);
  }

  /** Makes one kind equal to `next` (a complete re-list), delivering only the differences. */
  replaceKind<K extends ObjectKind>(kind: K, next: Map<string, ObjectOfKind[K]>): void {
    for (const key of [...this.maps[kind].keys()]) if (!next.has(key)) this.delete(kind, key);
    for (const [key, object] of next) this.upsert(kind, key, object);
  }

  private emit(change: ClusterChange): void {
    if (!this.live) return;
    try {
      this.handlers.onChange(change);
    } catch (err) {
      this.handlers.onError({
        message: `change handler failed on ${change.kind} ${change.key}: ${err instanceof Error ? err.message : String(err)}`,
        object: `${change.kind} ${change.key}`,
        cause: err,
      });
    }
  }
}
