/** Makes the apiserver hold a given set of Namespaces, Pods, Services and NetworkPolicies, as
 * their owners would write them: objects by server-side apply, a pod's status through the status
 * subresource as kubelet writes it (phase, podIPs, the Ready condition), objects of an earlier
 * set that are not wanted any more deleted, and a pod whose immutable fields change (node,
 * container ports) deleted and created again. */
import { ApiError, objectPath, waitFor, type KObject, type KubeApi } from './api';

const SYSTEM_NAMESPACES = new Set(['default', 'kube-system', 'kube-public', 'kube-node-lease']);

function key(o: KObject): string {
  return `${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`;
}

/** The status kubelet writes for a pod of the given manifest status. */
export function kubeletStatus(status: KObject | undefined, ready = true): KObject {
  const phase = status?.phase ?? 'Running';
  const running = phase === 'Running';
  return {
    ...status,
    phase,
    conditions: [
      { type: 'PodScheduled', status: 'True' },
      { type: 'Initialized', status: 'True' },
      { type: 'ContainersReady', status: running && ready ? 'True' : 'False' },
      { type: 'Ready', status: running && ready ? 'True' : 'False' },
    ],
  };
}

/** Applies a Namespace and waits for its default ServiceAccount, which the ServiceAccount
 * admission plugin requires of every pod created in it. */
export async function applyNamespace(api: KubeApi, o: KObject): Promise<void> {
  await api.apply(o);
  const name = o.metadata.name as string;
  await waitFor(`the default ServiceAccount of namespace ${name}`, async () => (await api.raw('GET', `/api/v1/namespaces/${name}/serviceaccounts/default`)).status === 200 || undefined);
}

export class DesiredObjects {
  private applied = new Map<string, KObject>();

  constructor(private readonly api: KubeApi) {}

  /** Writes `objects` and removes what an earlier call wrote that is not among them. */
  async set(objects: KObject[]): Promise<void> {
    const next = new Map(objects.map((o) => [key(o), o]));
    const order = (o: KObject): number => (o.kind === 'Namespace' ? 0 : o.kind === 'Pod' ? 2 : 1);
    for (const o of [...next.values()].sort((a, b) => order(a) - order(b))) {
      if (o.kind === 'Pod') await this.putPod(o);
      else if (o.kind === 'Namespace') await applyNamespace(this.api, o);
      else await this.api.apply(o);
    }
    const gone = [...this.applied.values()].filter((o) => !next.has(key(o)));
    for (const o of gone.filter((g) => g.kind !== 'Namespace')) await this.api.delete(o, o.kind === 'Pod' ? '?gracePeriodSeconds=0' : '');
    for (const o of gone.filter((g) => g.kind === 'Namespace' && !SYSTEM_NAMESPACES.has(g.metadata.name))) {
      await this.api.delete(o);
      await waitFor(`namespace ${o.metadata.name} to be finalized`, async () => (await this.api.raw('GET', objectPath(o))).status === 404 || undefined);
    }
    this.applied = next;
  }

  private async putPod(o: KObject): Promise<void> {
    const { status, ...spec } = o;
    const before = this.applied.get(key(o));
    const specChanged = before && JSON.stringify(before.spec) !== JSON.stringify(o.spec);
    if (specChanged) await this.recreate(spec);
    else {
      try {
        await this.api.apply(spec);
      } catch (err) {
        if (!(err instanceof ApiError && err.status === 422)) throw err;
        await this.recreate(spec);
      }
    }
    await this.api.patchStatus(o, kubeletStatus(status));
  }

  private async recreate(spec: KObject): Promise<void> {
    await this.api.delete(spec, '?gracePeriodSeconds=0');
    await waitFor(`pod ${spec.metadata.namespace}/${spec.metadata.name} to be gone`, async () => (await this.api.raw('GET', objectPath(spec))).status === 404 || undefined);
    await this.api.apply(spec);
  }
}
