/** The API calls IPAM makes, behind one small interface, and its implementation over
 * @kubernetes/client-node (CustomObjectsApi for the ipam.nfkube.io objects, CoreV1 for pods and
 * nodes). Every failure is classified: a definite refusal (409, 404, 422...) or an UNKNOWN outcome
 * (timeout, reset connection, 5xx), which callers resolve by reading back: a write that was not
 * answered may have been committed. */
import type { KubeConfig } from '@kubernetes/client-node';
import { findKubeconfig, loadChosenKubeconfig } from '../k8s/kubeconfig-path';
import { GROUP, KObject, PLURALS, VERSION } from './objects';

export type Plural = (typeof PLURALS)[keyof typeof PLURALS];

export class ApiError extends Error {
  constructor(
    message: string,
    /** HTTP status when the server answered; undefined when it did not. */
    readonly code: number | undefined,
    /** True when the request may or may not have taken effect. */
    readonly unknownOutcome: boolean,
  ) {
    super(message);
  }
}

export const isConflict = (err: unknown): boolean => err instanceof ApiError && err.code === 409;
export const isNotFound = (err: unknown): boolean => err instanceof ApiError && err.code === 404;
export const isUnknown = (err: unknown): boolean => !(err instanceof ApiError) || err.unknownOutcome;

/** A node as IPAM reads it from the API (k8s/service-model.ts's NodeInfo is the proxy's). */
export interface ApiNode {
  name: string;
  labels: Record<string, string>;
}

/** A pod as IPAM reads it from the API (k8s/model.ts's PodInfo is the policy's). */
export interface ApiPod {
  namespace: string;
  name: string;
  uid: string;
  nodeName?: string;
  /** status.podIPs (absent for host-network pods, whose address is the node's). */
  ips?: string[];
}

export interface IpamApi {
  list(plural: Plural): Promise<KObject[]>;
  get(plural: Plural, name: string): Promise<KObject | undefined>;
  create(plural: Plural, obj: KObject): Promise<KObject>;
  /** Replaces an object; its metadata.resourceVersion must be current (else 409). */
  replace(plural: Plural, obj: KObject): Promise<KObject>;
  /** Deletes only the object with this uid (else 409); a missing object is not an error. */
  remove(plural: Plural, name: string, uid: string): Promise<void>;
  /** Pods, all or those bound to one node, from a fresh (quorum) list. */
  listPods(nodeName?: string): Promise<ApiPod[]>;
  listNodes(): Promise<ApiNode[]>;
  getNode(name: string): Promise<ApiNode | undefined>;
}

/** client-node takes seconds to load: loaded once, on first use. */
let clientNodeModule: typeof import('@kubernetes/client-node') | undefined;
export function clientNode(): typeof import('@kubernetes/client-node') {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  clientNodeModule ??= require('@kubernetes/client-node') as typeof import('@kubernetes/client-node');
  return clientNodeModule;
}

export function loadKubeConfig(path?: string): KubeConfig {
  return loadChosenKubeconfig(new (clientNode().KubeConfig)(), findKubeconfig(path));
}

function classify(err: unknown, what: string): ApiError {
  if (err instanceof ApiError) return err;
  const e = err as { code?: unknown; body?: unknown; message?: string };
  if (typeof e?.code === 'number' && e.code >= 100 && e.code < 600) {
    let message = `HTTP ${e.code}`;
    try {
      const body = typeof e.body === 'string' ? JSON.parse(e.body) : e.body;
      if (body && typeof (body as KObject).message === 'string') message = (body as KObject).message;
    } catch {
      // the body is not a Status; keep the code
    }
    // A 5xx (or 429) may come after the write reached storage (an etcd timeout): unknown.
    return new ApiError(`${what}: ${message}`, e.code, e.code >= 500 || e.code === 429);
  }
  return new ApiError(`${what}: ${e?.message ?? String(err)}`, undefined, true);
}

/** Runs one request with a deadline; past it the outcome is unknown (the request may still land). */
async function call<T>(what: string, timeoutMs: number, fn: () => Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new ApiError(`${what}: no answer within ${timeoutMs} ms`, undefined, true)), timeoutMs);
  });
  try {
    return await Promise.race([fn(), deadline]);
  } catch (err) {
    throw classify(err, what);
  } finally {
    clearTimeout(timer);
  }
}

export interface ClientNodeApiOptions {
  kubeConfig: KubeConfig;
  /** Per-request deadline (default 10 s). */
  timeoutMs?: number;
  /** Counts every request by verb and resource (for metrics and benchmarks). */
  onRequest?: (verb: string, resource: string) => void;
}

export class ClientNodeApi implements IpamApi {
  private readonly custom: import('@kubernetes/client-node').CustomObjectsApi;
  private readonly core: import('@kubernetes/client-node').CoreV1Api;
  private readonly timeoutMs: number;
  private readonly onRequest: (verb: string, resource: string) => void;

  constructor(opts: ClientNodeApiOptions) {
    const { CustomObjectsApi, CoreV1Api } = clientNode();
    this.custom = opts.kubeConfig.makeApiClient(CustomObjectsApi);
    this.core = opts.kubeConfig.makeApiClient(CoreV1Api);
    this.timeoutMs = opts.timeoutMs ?? 10_000;
    this.onRequest = opts.onRequest ?? (() => {});
  }

  private run<T>(verb: string, resource: string, what: string, fn: () => Promise<T>): Promise<T> {
    this.onRequest(verb, resource);
    return call(what, this.timeoutMs, fn);
  }

  async list(plural: Plural): Promise<KObject[]> {
    const items: KObject[] = [];
    let cont: string | undefined;
    do {
      const page = (await this.run('list', plural, `list ${plural}`, () =>
        this.custom.listClusterCustomObject({ group: GROUP, version: VERSION, plural, limit: 500, _continue: cont }),
      )) as KObject;
      items.push(...(page.items ?? []));
      cont = page.metadata?.continue || undefined;
    } while (cont);
    return items;
  }

  async get(plural: Plural, name: string): Promise<KObject | undefined> {
    try {
      return (await this.run('get', plural, `get ${plural}/${name}`, () => this.custom.getClusterCustomObject({ group: GROUP, version: VERSION, plural, name }))) as KObject;
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }

  async create(plural: Plural, obj: KObject): Promise<KObject> {
    return (await this.run('create', plural, `create ${plural}/${obj.metadata?.name}`, () =>
      this.custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural, body: obj }),
    )) as KObject;
  }

  async replace(plural: Plural, obj: KObject): Promise<KObject> {
    const name = obj.metadata.name as string;
    return (await this.run('update', plural, `update ${plural}/${name}`, () =>
      this.custom.replaceClusterCustomObject({ group: GROUP, version: VERSION, plural, name, body: obj }),
    )) as KObject;
  }

  async remove(plural: Plural, name: string, uid: string): Promise<void> {
    try {
      await this.run('delete', plural, `delete ${plural}/${name}`, () =>
        this.custom.deleteClusterCustomObject({ group: GROUP, version: VERSION, plural, name, body: { preconditions: { uid } } }),
      );
    } catch (err) {
      if (isNotFound(err)) return;
      throw err;
    }
  }

  async listPods(nodeName?: string): Promise<ApiPod[]> {
    const out: ApiPod[] = [];
    let cont: string | undefined;
    const fieldSelector = nodeName ? `spec.nodeName=${nodeName}` : undefined;
    do {
      const page = await this.run('list', 'pods', 'list pods', () => this.core.listPodForAllNamespaces({ fieldSelector, limit: 500, _continue: cont }));
      for (const p of page.items ?? []) {
        const ips = p.spec?.hostNetwork ? [] : (p.status?.podIPs ?? []).map((x) => x.ip).filter((ip): ip is string => typeof ip === 'string');
        const pod = { namespace: p.metadata?.namespace ?? '', name: p.metadata?.name ?? '', uid: p.metadata?.uid ?? '', nodeName: p.spec?.nodeName, ips };
        // The field selector is applied again here: a server that ignores it must not widen the set.
        if (!nodeName || pod.nodeName === nodeName) out.push(pod);
      }
      cont = page.metadata?._continue || undefined;
    } while (cont);
    return out;
  }

  async listNodes(): Promise<ApiNode[]> {
    const out: ApiNode[] = [];
    let cont: string | undefined;
    do {
      const page = await this.run('list', 'nodes', 'list nodes', () => this.core.listNode({ limit: 500, _continue: cont }));
      for (const n of page.items ?? []) out.push({ name: n.metadata?.name ?? '', labels: { ...(n.metadata?.labels ?? {}) } });
      cont = page.metadata?._continue || undefined;
    } while (cont);
    return out;
  }

  async getNode(name: string): Promise<ApiNode | undefined> {
    try {
      const n = await this.run('get', 'nodes', `get nodes/${name}`, () => this.core.readNode({ name }));
      return { name, labels: { ...(n.metadata?.labels ?? {}) } };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw err;
    }
  }
}
