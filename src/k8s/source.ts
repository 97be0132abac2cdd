/** The contract every source of cluster state keeps (API server informers, a manifests
 * directory), and the normalized cache that turns raw changes into meaningful ones. */
import { isDeepStrictEqual } from 'node:util';
import type { SourceError } from './errors';
import type { NamespaceInfo, NetworkPolicyInfo, PodInfo } from './model';
import type { ObjectKind } from './normalize';

export type { ObjectKind } from './normalize';
export type { SourceError } from './errors';

interface ObjectOfKind {
  Pod: PodInfo;
  Namespace: NamespaceInfo;
  NetworkPolicy: NetworkPolicyInfo;
}

type ChangeOf<K extends ObjectKind> = {
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

export type ClusterChange = ChangeOf<'Pod'> | ChangeOf<'Namespace'> | ChangeOf<'NetworkPolicy'>;

/** Normalized objects by key. Treat them as immutable: sources share them with every consumer. */
export interface ClusterSnapshot {
  pods: ReadonlyMap<string, Readonly<PodInfo>>;
  namespaces: ReadonlyMap<string, Readonly<NamespaceInfo>>;
  policies: ReadonlyMap<string, Readonly<NetworkPolicyInfo>>;
}

export interface SourceHandlers {
  /** Called once per meaningful change, after start() has resolved; never for the initial state. */
  onChange(change: ClusterChange): void;
  /** Bad objects, bad files, lost connections. The source keeps running. */
  onError(err: SourceError): void;
  /** What does not affect enforcement but may be a mistake (a kind nfkube does not read). */
  onWarning?(warning: SourceError): void;
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
