/** An in-process Kubernetes API server for tests, on 127.0.0.1 over plain http, that behaves as
 * kube-apiserver does for what nfkube uses: pods, namespaces, networking.k8s.io/v1
 * networkpolicies, services, discovery.k8s.io/v1 endpointslices and nodes; LIST with resourceVersion and limit/continue pages; WATCH as chunked JSON
 * lines from a resourceVersion, with bookmarks on request and timeoutSeconds, and WatchList
 * (sendInitialEvents: the current state, then a bookmark annotated initial-events-end); 410 Gone (an ERROR
 * event carrying a Status of code 410) for a resourceVersion older than the last compaction;
 * 409 Conflict for an update with a stale resourceVersion; no-op updates that bump nothing; PATCH
 * as a JSON merge patch.
 * Tests change objects through the same code the HTTP verbs use. More resources, such as custom
 * resources served from a CRD, are added with serveResource(); faults (delays, 500s, a write
 * committed but its reply lost) are injected with the `faults` hook. */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isDeepStrictEqual } from 'node:util';

export type Kind = 'Pod' | 'Namespace' | 'NetworkPolicy' | 'Service' | 'EndpointSlice' | 'Node';
export type Resource = 'pods' | 'namespaces' | 'networkpolicies' | 'services' | 'endpointslices' | 'nodes';
// Manifest-shaped objects: tests write them as plain JSON.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type KObject = Record<string, any>;

interface ResourceInfo {
  kind: Kind;
  listKind: string;
  apiVersion: string;
  prefix: string;
  namespaced: boolean;
}

const RESOURCES: Record<Resource, ResourceInfo> = {
  pods: { kind: 'Pod', listKind: 'PodList', apiVersion: 'v1', prefix: '/api/v1', namespaced: true },
  namespaces: { kind: 'Namespace', listKind: 'NamespaceList', apiVersion: 'v1', prefix: '/api/v1', namespaced: false },
  networkpolicies: {
    kind: 'NetworkPolicy',
    listKind: 'NetworkPolicyList',
    apiVersion: 'networking.k8s.io/v1',
    prefix: '/apis/networking.k8s.io/v1',
    namespaced: true,
  },
  services: { kind: 'Service', listKind: 'ServiceList', apiVersion: 'v1', prefix: '/api/v1', namespaced: true },
  endpointslices: {
    kind: 'EndpointSlice',
    listKind: 'EndpointSliceList',
    apiVersion: 'discovery.k8s.io/v1',
    prefix: '/apis/discovery.k8s.io/v1',
    namespaced: true,
  },
  nodes: { kind: 'Node', listKind: 'NodeList', apiVersion: 'v1', prefix: '/api/v1', namespaced: false },
};

const RESOURCE_OF_KIND: Record<Kind, Resource> = {
  Pod: 'pods',
  Namespace: 'namespaces',
  NetworkPolicy: 'networkpolicies',
  Service: 'services',
  EndpointSlice: 'endpointslices',
  Node: 'nodes',
};

/** A refusal the real server would give, as its Status object. */
export class ApiStatusError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }

  status(): KObject {
    return statusObject(this.code, this.reason, this.message);
  }
}

function statusObject(code: number, reason: string, message: string): KObject {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, code };
}

interface StoredEvent {
  rv: number;
  resource: Resource;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: KObject;
}

interface Watcher {
  resource: Resource;
  namespace?: string;
  bookmarks: boolean;
  res: ServerResponse;
  timer?: NodeJS.Timeout;
}

interface Route {
  resource: Resource;
  namespace?: string;
  name?: string;
}

export interface RequestCounts {
  list: Record<Resource, number>;
  watch: Record<Resource, number>;
}

/** A resource added with serveResource(): a CRD's group/version/kind, or a core kind. */
export interface ServedResource {
  plural: string;
  kind: string;
  /** "v1" or "group/version". */
  apiVersion: string;
  namespaced: boolean;
}

/** What a request to inject a fault into looks like to the `faults` hook. */
export interface FaultContext {
  method: string;
  resource: string;
  namespace?: string;
  name?: string;
  watch: boolean;
}

/** A fault: wait first, refuse with a status (nothing is done), reset the connection before doing
 * anything, or do the request (a write is committed) and then reset instead of replying. */
export interface Fault {
  delayMs?: number;
  status?: number;
  resetBefore?: boolean;
  dropReply?: boolean;
}

/** RFC 7386 JSON merge patch (application/merge-patch+json): objects merge, null deletes, the
 * rest replaces. */
function mergePatch(target: KObject, patch: KObject): KObject {
  const out: KObject = { ...target };
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (typeof v === 'object' && !Array.isArray(v) && typeof out[k] === 'object' && out[k] !== null && !Array.isArray(out[k])) out[k] = mergePatch(out[k], v);
    else out[k] = v;
  }
  return out;
}

/** The annotation of the BOOKMARK that ends a WatchList's initial events. */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

export class TestApiServer {
  /** Called for every authorised request; a returned Fault is applied to it. */
  faults?: (ctx: FaultContext) => Fault | undefined;
  /** Write requests received ("POST ipblocks", "PUT ipblocks", ...), faulted or not. */
  readonly writes = new Map<string, number>();
  /** The etcd-like revision: every change to any object takes the next one. */
  private revision = 100;
  /** Watches from a resourceVersion below this are too old (410 Gone). */
  private compactedRevision = 0;
  private readonly store: Record<Resource, Map<string, KObject>> = {
    pods: new Map(),
    namespaces: new Map(),
    networkpolicies: new Map(),
    services: new Map(),
    endpointslices: new Map(),
    nodes: new Map(),
  };
  private events: StoredEvent[] = [];
  private readonly watchers = new Set<Watcher>();
  /** When the last watch event was handed to a socket (process.hrtime.bigint()): benches time a
   * watcher from there, apart from this server's own work before it. */
  lastSentAt?: bigint;
  private readonly sockets = new Set<Socket>();
  /** Consistent snapshots behind continue tokens of paged lists. */
  private readonly pages = new Map<string, { rv: number; items: KObject[] }>();
  private server?: Server;
  readonly counts: RequestCounts = {
    list: { pods: 0, namespaces: 0, networkpolicies: 0, services: 0, endpointslices: 0, nodes: 0 },
    watch: { pods: 0, namespaces: 0, networkpolicies: 0, services: 0, endpointslices: 0, nodes: 0 },
  };
  /** The `limit` of each LIST received (0 without one), in order. */
  readonly listLimits: number[] = [];
  readonly token = 'nfkube-test-token';
  port = 0;
  /** How a WATCH with sendInitialEvents is met: served (a WatchList, as 1.32+ servers do),
   * refused (422, as a server with the WatchList gate off), or ignored (as servers before 1.27). */
  watchList: 'served' | 'refused' | 'ignored' = 'served';

  static async start(port = 0): Promise<TestApiServer> {
    const s = new TestApiServer();
    await s.listen(port);
    return s;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  get resourceVersion(): string {
    return String(this.revision);
  }

  /** (Re)starts serving, on the previous port by default; the stored objects and history stay,
   * as they do in etcd across an apiserver restart. */
  async listen(port = this.port): Promise<void> {
    const server = createServer((req, res) => this.handle(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    this.server = server;
    const addr = server.address();
    if (addr && typeof addr === 'object') this.port = addr.port;
  }

  /** Stops serving and cuts every connection (a crash, as far as clients can tell). */
  async close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    for (const w of this.watchers) clearTimeout(w.timer);
    this.watchers.clear();
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Writes a kubeconfig for this server (http needs insecure-skip-tls-verify for client-node). */
  writeKubeconfig(path = join(mkdtempSync(join(tmpdir(), 'nfkube-kubeconfig-')), 'config')): string {
    writeFileSync(
      path,
      [
        'apiVersion: v1',
        'kind: Config',
        'clusters:',
        '- name: test',
        '  cluster:',
        `    server: ${this.url}`,
        '    insecure-skip-tls-verify: true',
        'users:',
        '- name: test',
        '  user:',
        `    token: ${this.token}`,
        'contexts:',
        '- name: test',
        '  context:',
        '    cluster: test',
        '    user: test',
        'current-context: test',
        '',
      ].join('\n'),
    );
    return path;
  }

  // ---- test helpers: the same operations the HTTP verbs perform ----

  create(obj: KObject): KObject {
    const { resource, key, namespace } = this.identify(obj);
    const map = this.store[resource];
    if (map.has(key)) throw new ApiStatusError(409, 'AlreadyExists', `${resource} "${obj.metadata.name}" already exists`);
    const stored = structuredClone(obj);
    const info = RESOURCES[resource];
    stored.kind = info.kind;
    stored.apiVersion = info.apiVersion;
    stored.metadata = {
      ...stored.metadata,
      ...(namespace !== undefined ? { namespace } : {}),
      uid: randomUUID(),
      creationTimestamp: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
    };
    if (resource === 'namespaces') {
      // The API server labels every namespace with its own name.
      stored.metadata.labels = { ...stored.metadata.labels, 'kubernetes.io/metadata.name': stored.metadata.name };
      stored.status = { phase: 'Active', ...stored.status };
    }
    return this.commit(resource, key, 'ADDED', stored);
  }

  /** Replaces an object. A resourceVersion in obj must be the current one (else 409 Conflict);
   * without one the update is unconditional. An update that changes nothing is a no-op. */
  update(obj: KObject): KObject {
    const { resource, key } = this.identify(obj);
    const current = this.store[resource].get(key);
    if (!current) throw new ApiStatusError(404, 'NotFound', `${resource} "${obj.metadata.name}" not found`);
    const wanted = obj.metadata.resourceVersion;
    if (wanted !== undefined && wanted !== current.metadata.resourceVersion) {
      throw new ApiStatusError(
        409,
        'Conflict',
        `Operation cannot be fulfilled on ${resource} "${obj.metadata.name}": the object has been modified; please apply your changes to the latest version and try again`,
      );
    }
    const next = structuredClone(obj);
    next.kind = current.kind;
    next.apiVersion = current.apiVersion;
    next.metadata = {
      ...next.metadata,
      namespace: current.metadata.namespace,
      uid: current.metadata.uid,
      creationTimestamp: current.metadata.creationTimestamp,
      resourceVersion: current.metadata.resourceVersion,
    };
    if (current.metadata.namespace === undefined) delete next.metadata.namespace;
    if (resource === 'namespaces') {
      next.metadata.labels = { ...next.metadata.labels, 'kubernetes.io/metadata.name': next.metadata.name };
    }
    if (isDeepStrictEqual(next, current)) return current;
    return this.commit(resource, key, 'MODIFIED', next);
  }

  /** Reads the current object, lets `change` edit a copy, and updates it. */
  modify(kind: Kind, namespace: string | undefined, name: string, change: (obj: KObject) => void): KObject {
    const current = this.get(kind, namespace, name);
    if (!current) throw new ApiStatusError(404, 'NotFound', `${kind} ${name} not found`);
    const copy = structuredClone(current);
    change(copy);
    return this.update(copy);
  }

  apply(obj: KObject): KObject {
    const { resource, key } = this.identify(obj);
    return this.store[resource].has(key) ? this.update({ ...obj, metadata: { ...obj.metadata, resourceVersion: undefined } }) : this.create(obj);
  }

  delete(kind: Kind, namespace: string | undefined, name: string): KObject {
    const resource = RESOURCE_OF_KIND[kind];
    const key = RESOURCES[resource].namespaced ? `${namespace}/${name}` : name;
    const current = this.store[resource].get(key);
    if (!current) throw new ApiStatusError(404, 'NotFound', `${resource} "${name}" not found`);
    return this.commit(resource, key, 'DELETED', structuredClone(current));
  }

  get(kind: Kind, namespace: string | undefined, name: string): KObject | undefined {
    const resource = RESOURCE_OF_KIND[kind];
    const key = RESOURCES[resource].namespaced ? `${namespace}/${name}` : name;
    const obj = this.store[resource].get(key);
    return obj && structuredClone(obj);
  }

  /** Forgets history up to now: a LIST continue token or a WATCH from an older resourceVersion
   * gets 410 Gone. Open watches are not affected. */
  compact(): void {
    this.compactedRevision = this.revision;
    this.events = [];
  }

  /** Compacts and expires every open watch the way a real server does to a watcher that fell
   * behind: an ERROR event with a 410 Status, then the end of the stream. */
  expireWatches(): void {
    this.compact();
    for (const w of [...this.watchers]) {
      this.send(w, {
        type: 'ERROR',
        object: statusObject(410, 'Expired', `too old resource version: watch expired (compacted at ${this.revision})`),
      });
      this.endWatch(w);
    }
  }

  /** Ends every open watch cleanly (as a server-side timeout does); clients re-watch from their
   * last resourceVersion. */
  dropWatches(): void {
    for (const w of [...this.watchers]) this.endWatch(w);
  }

  /** Sends a BOOKMARK at the current resourceVersion to every watch that asked for them. */
  sendBookmarks(): void {
    for (const w of this.watchers) if (w.bookmarks) this.sendBookmark(w);
  }

  get openWatches(): number {
    return this.watchers.size;
  }

  /** Serves one more resource (a custom resource defined by a CRD, or a core kind this server
   * does not have yet): LIST, WATCH, GET, POST (409 AlreadyExists), PUT (409 on a stale
   * resourceVersion) and DELETE (409 on a failed uid precondition), like every other resource. */
  serveResource(r: ServedResource): void {
    const resources = RESOURCES as Record<string, ResourceInfo>;
    if (!resources[r.plural]) {
      const prefix = r.apiVersion.includes('/') ? `/apis/${r.apiVersion}` : `/api/${r.apiVersion}`;
      resources[r.plural] = { kind: r.kind as Kind, listKind: `${r.kind}List`, apiVersion: r.apiVersion, prefix, namespaced: r.namespaced };
      (RESOURCE_OF_KIND as Record<string, Resource>)[r.kind] = r.plural as Resource;
    }
    const store = this.store as Record<string, Map<string, KObject>>;
    store[r.plural] ??= new Map();
    const counts = this.counts as { list: Record<string, number>; watch: Record<string, number> };
    counts.list[r.plural] ??= 0;
    counts.watch[r.plural] ??= 0;
  }

  /** Objects of a served resource (by plural), for checkers. */
  objects(plural: string): KObject[] {
    return [...((this.store as Record<string, Map<string, KObject>>)[plural]?.values() ?? [])].map((o) => structuredClone(o));
  }

  // ---- internals ----

  private identify(obj: KObject): { resource: Resource; key: string; namespace?: string } {
    const resource = RESOURCE_OF_KIND[obj.kind as Kind];
    if (!resource) throw new ApiStatusError(400, 'BadRequest', `kind ${obj.kind} is not served`);
    const name = obj.metadata?.name;
    if (typeof name !== 'string' || !name) throw new ApiStatusError(422, 'Invalid', 'metadata.name: Required value');
    if (!RESOURCES[resource].namespaced) return { resource, key: name };
    const namespace = obj.metadata.namespace ?? 'default';
    return { resource, key: `${namespace}/${name}`, namespace };
  }

  private commit(resource: Resource, key: string, type: StoredEvent['type'], obj: KObject): KObject {
    this.revision += 1;
    obj.metadata.resourceVersion = String(this.revision);
    if (type === 'DELETED') this.store[resource].delete(key);
    else this.store[resource].set(key, obj);
    const event: StoredEvent = { rv: this.revision, resource, type, object: obj };
    this.events.push(event);
    for (const w of this.watchers) if (this.matches(w, event)) this.send(w, { type, object: obj });
    return structuredClone(obj);
  }

  private matches(w: Watcher, e: StoredEvent): boolean {
    return w.resource === e.resource && (w.namespace === undefined || e.object.metadata.namespace === w.namespace);
  }

  private send(w: Watcher, event: KObject): void {
    w.res.write(JSON.stringify(event) + '\n');
    this.lastSentAt = process.hrtime.bigint();
  }

  private sendBookmark(w: Watcher, annotations?: Record<string, string>): void {
    const info = RESOURCES[w.resource];
    this.send(w, {
      type: 'BOOKMARK',
      object: { kind: info.kind, apiVersion: info.apiVersion, metadata: { resourceVersion: String(this.revision), ...(annotations ? { annotations } : {}) } },
    });
  }

  private endWatch(w: Watcher): void {
    clearTimeout(w.timer);
    this.watchers.delete(w);
    w.res.end();
  }

  private route(path: string): Route | undefined {
    for (const [resource, info] of Object.entries(RESOURCES) as [Resource, ResourceInfo][]) {
      if (!path.startsWith(info.prefix + '/')) continue;
      const segs = path.slice(info.prefix.length + 1).split('/').map(decodeURIComponent);
      if (segs.length === 1 && segs[0] === resource) return { resource };
      if (!info.namespaced && segs.length === 2 && segs[0] === resource) return { resource, name: segs[1] };
      if (info.namespaced && segs[0] === 'namespaces' && segs[2] === resource && segs.length <= 4) {
        return { resource, namespace: segs[1], name: segs[3] };
      }
    }
    return undefined;
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const reply = (code: number, body: KObject) => {
      res.writeHead(code, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (req.headers.authorization !== `Bearer ${this.token}`) {
      reply(401, statusObject(401, 'Unauthorized', 'Unauthorized'));
      return;
    }
    const route = this.route(url.pathname);
    if (!route) {
      reply(404, statusObject(404, 'NotFound', 'the server could not find the requested resource'));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const method = req.method ?? 'GET';
      if (method !== 'GET') this.writes.set(`${method} ${route.resource}`, (this.writes.get(`${method} ${route.resource}`) ?? 0) + 1);
      const watch = url.searchParams.get('watch') === 'true' || url.searchParams.get('watch') === '1';
      const fault = this.faults?.({ method, resource: route.resource, namespace: route.namespace, name: route.name, watch });
      const answer = fault?.dropReply ? () => void req.socket.destroy() : reply;
      const go = () => {
        if (fault?.status) return reply(fault.status, statusObject(fault.status, 'InternalError', 'injected fault'));
        if (fault?.resetBefore) return void req.socket.destroy();
        try {
          const body = chunks.length ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as KObject) : undefined;
          this.serve(method, route, url.searchParams, body, res, answer);
        } catch (err) {
          if (err instanceof ApiStatusError) answer(err.code, err.status());
          else answer(500, statusObject(500, 'InternalError', String(err)));
        }
      };
      if (fault?.delayMs) setTimeout(go, fault.delayMs);
      else go();
    });
  }

  private serve(
    method: string,
    route: Route,
    query: URLSearchParams,
    body: KObject | undefined,
    res: ServerResponse,
    reply: (code: number, body: KObject) => void,
  ): void {
    const info = RESOURCES[route.resource];
    const withPathNamespace = (obj: KObject | undefined): KObject => {
      if (!obj) throw new ApiStatusError(400, 'BadRequest', 'request body required');
      const out = { ...obj, kind: info.kind, metadata: { ...obj.metadata } };
      if (info.namespaced && route.namespace) out.metadata.namespace = route.namespace;
      if (route.name && out.metadata.name !== route.name) {
        throw new ApiStatusError(400, 'BadRequest', 'the name of the object does not match the name on the URL');
      }
      return out;
    };
    if (route.name === undefined) {
      if (method === 'GET') {
        const watch = query.get('watch');
        if (watch === 'true' || watch === '1') this.watch(route, query, res);
        else reply(200, this.list(route, query));
        return;
      }
      if (method === 'POST') {
        reply(201, this.create(withPathNamespace(body)));
        return;
      }
    } else {
      if (method === 'GET') {
        const obj = this.get(info.kind, route.namespace, route.name);
        if (!obj) throw new ApiStatusError(404, 'NotFound', `${route.resource} "${route.name}" not found`);
        reply(200, obj);
        return;
      }
      if (method === 'PUT') {
        reply(200, this.update(withPathNamespace(body)));
        return;
      }
      if (method === 'PATCH') {
        if (!body) throw new ApiStatusError(400, 'BadRequest', 'request body required');
        const current = this.get(info.kind, route.namespace, route.name);
        if (!current) throw new ApiStatusError(404, 'NotFound', `${route.resource} "${route.name}" not found`);
        reply(200, this.update(mergePatch(current, body)));
        return;
      }
      if (method === 'DELETE') {
        const uid = body?.preconditions?.uid;
        const current = this.get(info.kind, route.namespace, route.name);
        if (uid && current && current.metadata.uid !== uid) {
          throw new ApiStatusError(409, 'Conflict', `Precondition failed: UID in precondition: ${uid}, UID in object meta: ${current.metadata.uid}`);
        }
        reply(200, this.delete(info.kind, route.namespace, route.name));
        return;
      }
    }
    reply(405, statusObject(405, 'MethodNotAllowed', `${method} is not supported here`));
  }

  /** Current objects of a route in key order, as etcd returns them. */
  private selected(route: Route): KObject[] {
    return [...this.store[route.resource].entries()]
      .filter(([, o]) => route.namespace === undefined || o.metadata.namespace === route.namespace)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([, o]) => o);
  }

  private list(route: Route, query: URLSearchParams): KObject {
    this.counts.list[route.resource] += 1;
    const info = RESOURCES[route.resource];
    const limit = Number(query.get('limit') ?? 0);
    this.listLimits.push(limit);
    const token = query.get('continue');
    // Stored objects are never mutated (every change stores a new one), so a snapshot is an
    // array of references.
    let snapshot: { id: string; rv: number; items: KObject[] };
    let offset = 0;
    if (token) {
      const decoded = JSON.parse(Buffer.from(token, 'base64').toString('utf8')) as { id: string; offset: number };
      const page = this.pages.get(decoded.id);
      if (!page || page.rv < this.compactedRevision) {
        throw new ApiStatusError(410, 'Expired', 'The provided continue parameter is too old to display a consistent list result.');
      }
      snapshot = { id: decoded.id, ...page };
      offset = decoded.offset;
    } else {
      snapshot = { id: randomUUID(), rv: this.revision, items: this.selected(route) };
    }
    const metadata: KObject = { resourceVersion: String(snapshot.rv) };
    let pageItems = snapshot.items.slice(offset);
    if (limit > 0 && pageItems.length > limit) {
      pageItems = pageItems.slice(0, limit);
      this.pages.set(snapshot.id, { rv: snapshot.rv, items: snapshot.items });
      metadata.continue = Buffer.from(JSON.stringify({ id: snapshot.id, offset: offset + limit })).toString('base64');
      metadata.remainingItemCount = snapshot.items.length - offset - limit;
    } else {
      this.pages.delete(snapshot.id);
    }
    // Like the real server, list items carry neither kind nor apiVersion.
    const bare = pageItems.map(({ kind: _k, apiVersion: _a, ...rest }) => rest);
    return { kind: info.listKind, apiVersion: info.apiVersion, metadata, items: bare };
  }

  private watch(route: Route, query: URLSearchParams, res: ServerResponse): void {
    const watchList = query.get('sendInitialEvents') === 'true' && this.watchList !== 'ignored';
    if (watchList) {
      if (this.watchList === 'refused') {
        throw new ApiStatusError(422, 'Invalid', 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled');
      }
      if (query.get('resourceVersionMatch') !== 'NotOlderThan' || query.get('allowWatchBookmarks') !== 'true') {
        throw new ApiStatusError(422, 'Invalid', 'ListOptions.meta.k8s.io "" is invalid: sendInitialEvents requires resourceVersionMatch=NotOlderThan and allowWatchBookmarks=true');
      }
    }
    this.counts.watch[route.resource] += 1;
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.flushHeaders();
    const w: Watcher = {
      resource: route.resource,
      namespace: route.namespace,
      bookmarks: query.get('allowWatchBookmarks') === 'true',
      res,
    };
    const from = query.get('resourceVersion') ?? '';
    if (watchList) {
      // The current state is not older than any resourceVersion asked for, then its end.
      for (const obj of this.selected(route)) this.send(w, { type: 'ADDED', object: obj });
      this.sendBookmark(w, { [INITIAL_EVENTS_END]: 'true' });
    } else if (from === '' || from === '0') {
      // No starting point: the current state as ADDED events, then changes.
      for (const obj of this.selected(route)) this.send(w, { type: 'ADDED', object: obj });
    } else {
      const rv = Number(from);
      if (!Number.isInteger(rv) || rv < this.compactedRevision) {
        this.send(w, {
          type: 'ERROR',
          object: statusObject(410, 'Expired', `too old resource version: ${from} (${this.compactedRevision})`),
        });
        res.end();
        return;
      }
      for (const e of this.events) if (e.rv > rv && this.matches(w, e)) this.send(w, { type: e.type, object: e.object });
    }
    this.watchers.add(w);
    res.on('close', () => {
      clearTimeout(w.timer);
      this.watchers.delete(w);
    });
    const timeout = Number(query.get('timeoutSeconds') ?? 0);
    if (timeout > 0) {
      w.timer = setTimeout(() => {
        if (w.bookmarks) this.sendBookmark(w);
        this.endWatch(w);
      }, timeout * 1000);
    }
  }
}
