/** An in-memory IpamApi with the API server's semantics that matter to IPAM (create -> 409
 * AlreadyExists, replace with a stale resourceVersion -> 409, delete with a uid precondition) and
 * seeded faults: a refusal before anything happens, or a write committed whose answer is lost.
 * For the allocator property test, where thousands of steps must run in seconds. */
import { randomUUID } from 'node:crypto';
import { ApiError, IpamApi, ApiNode, Plural, ApiPod } from '../../src/ipam/api';
import { KObject } from '../../src/ipam/objects';

export class MemoryApi implements IpamApi {
  private rv = 1;
  readonly objects: Record<Plural, Map<string, KObject>> = { ippools: new Map(), ipblocks: new Map(), ipaddressclaims: new Map() };
  pods: ApiPod[] = [];
  nodes: ApiNode[] = [];
  /** Probability that a request fails (half before committing, half after). */
  faultRate = 0;
  writes = 0;

  constructor(private readonly rand: () => number) {}

  private async fault<T>(commit: () => T): Promise<T> {
    await Promise.resolve();
    const r = this.rand();
    if (r < this.faultRate / 2) throw new ApiError('injected: connection reset before the request', undefined, true);
    const result = commit();
    if (r < this.faultRate) throw new ApiError('injected: committed, reply lost', undefined, true);
    return structuredClone(result);
  }

  async list(plural: Plural): Promise<KObject[]> {
    return this.fault(() => [...this.objects[plural].values()]);
  }

  async get(plural: Plural, name: string): Promise<KObject | undefined> {
    return this.fault(() => this.objects[plural].get(name));
  }

  async create(plural: Plural, obj: KObject): Promise<KObject> {
    return this.fault(() => {
      this.writes++;
      if (this.objects[plural].has(obj.metadata.name)) throw new ApiError(`${plural} "${obj.metadata.name}" already exists`, 409, false);
      const stored = structuredClone(obj);
      stored.metadata = { ...stored.metadata, uid: randomUUID(), resourceVersion: String(++this.rv), creationTimestamp: new Date().toISOString() };
      this.objects[plural].set(obj.metadata.name, stored);
      return stored;
    });
  }

  async replace(plural: Plural, obj: KObject): Promise<KObject> {
    return this.fault(() => {
      this.writes++;
      const cur = this.objects[plural].get(obj.metadata.name);
      if (!cur) throw new ApiError('not found', 404, false);
      if (obj.metadata.resourceVersion !== cur.metadata.resourceVersion) throw new ApiError('conflict', 409, false);
      const stored = structuredClone(obj);
      stored.metadata = { ...cur.metadata, resourceVersion: String(++this.rv) };
      this.objects[plural].set(obj.metadata.name, stored);
      return stored;
    });
  }

  async remove(plural: Plural, name: string, uid: string): Promise<void> {
    return this.fault(() => {
      this.writes++;
      const cur = this.objects[plural].get(name);
      if (!cur) return;
      if (cur.metadata.uid !== uid) throw new ApiError('precondition failed', 409, false);
      this.objects[plural].delete(name);
    });
  }

  async listPods(nodeName?: string): Promise<ApiPod[]> {
    return this.fault(() => this.pods.filter((p) => !nodeName || p.nodeName === nodeName));
  }

  async listNodes(): Promise<ApiNode[]> {
    return this.fault(() => this.nodes);
  }

  async getNode(name: string): Promise<ApiNode | undefined> {
    return this.fault(() => this.nodes.find((n) => n.name === name));
  }
}
