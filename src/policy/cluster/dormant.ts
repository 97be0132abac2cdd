/** What the ClusterNetworkPolicy engine reads of the cluster, kept as plain objects while no
 * ClusterNetworkPolicy exists: indexing every pod event (pod index, label sets, the recorder's
 * delta) for tiers that match nothing is work no event needs. The first policy builds the
 * engine from this snapshot in one load. */
import type { ClusterChange, ClusterSnapshot } from '../../k8s/source';
import type { NamespaceInfo, PodInfo } from '../../k8s/model';
import type { NodeInfo } from '../../k8s/service-model';

export class DormantObjects {
  private readonly pods: Map<string, Readonly<PodInfo>>;
  private readonly namespaces: Map<string, Readonly<NamespaceInfo>>;
  private readonly nodes: Map<string, Readonly<NodeInfo>>;

  constructor(snapshot: ClusterSnapshot) {
    this.pods = new Map(snapshot.pods);
    this.namespaces = new Map(snapshot.namespaces);
    this.nodes = new Map(snapshot.nodes ?? []);
  }

  /** Keeps a Pod, Namespace or Node change; other kinds are not the engine's. */
  record(c: ClusterChange): void {
    if (c.kind === 'Pod') keep(this.pods, c.key, c.type === 'upsert' ? c.object : undefined);
    else if (c.kind === 'Namespace') keep(this.namespaces, c.key, c.type === 'upsert' ? c.object : undefined);
    else if (c.kind === 'Node') keep(this.nodes, c.key, c.type === 'upsert' ? c.object : undefined);
  }

  /** The objects kept, as the snapshot the engine loads. */
  snapshot(): ClusterSnapshot {
    return { pods: this.pods, namespaces: this.namespaces, policies: new Map(), nodes: this.nodes };
  }
}

function keep<T>(map: Map<string, T>, key: string, object: T | undefined): void {
  if (object) map.set(key, object);
  else map.delete(key);
}
