/** Cluster state from an API server: a list-then-watch loop per kind (Pods, Namespaces,
 * NetworkPolicies; Services, EndpointSlices, Nodes when asked) through @kubernetes/client-node.
 *
 * client-node's own ListWatch keeps every full object it has seen and gives up on the first
 * non-410 error, so the loop is ours: it lists page by page as raw JSON through the kubeconfig
 * (raw-list.ts: client-node's typed models cost a quarter of the CPU to the first commit), reads
 * watch streams the same way (raw-watch.ts: client-node's Watch costs a third of an event's
 * latency), and keeps only normalized objects (ClusterState). The initial state comes, as
 * client-go's reflector gets it, from a WatchList (a watch with sendInitialEvents: the current
 * objects as ADDED events up to a BOOKMARK annotated k8s.io/initial-events-end, then changes on
 * the same stream), which spares the server a LIST; when that fails (a server with the WatchList
 * gate off answers 422, an expired resume point 410) it is read by paged LIST instead. A watch
 * that ends is resumed from the last resourceVersion seen (bookmarks included); one that is
 * expired (410 Gone) is replaced by a new initial state that is diffed against the cache, so
 * enforcement never drops state and only real differences are delivered. Connection failures are
 * retried with backoff. */
import type { KubeConfig } from '@kubernetes/client-node';
import { findKubeconfig, loadChosenKubeconfig } from './kubeconfig-path';
import { createLogger } from '../log';
import { stamp } from '../observe/latency-trace';
import { clientNode } from './client-node';
import { sourceErrorFrom } from './errors';
import { lastChangeTime, objectId, type ObjectKind } from './normalize';
import { normalizers } from './normalizers';
import { rawLister, type ListPage, type OnItem } from './raw-list';
import { RawWatch } from './raw-watch';
import { ClusterState, OPTIONAL_KINDS, POLICY_KINDS, type ClusterSnapshot, type ClusterSource, type SourceHandlers } from './source';


/** A kubeconfig file, or as kubectl finds one when no path is given (kubeconfig-path.ts). */
export function loadKubeConfig(path?: string): KubeConfig {
  return loadChosenKubeconfig(new (clientNode().KubeConfig)(), findKubeconfig(path));
}

/** A program the kubeconfig makes client-node execute to get credentials: an `exec:` plugin, or
 * a legacy auth provider's `cmd-path`. */
export interface CredentialCommand {
  user: string;
  command: string;
  via: 'exec' | 'auth-provider cmd-path';
}

/** The programs the kubeconfig's current user makes client-node run. In-cluster config (the
 * pod's service account token) never has any. */
export function credentialCommands(kc: KubeConfig): CredentialCommand[] {
  const user = kc.getCurrentUser();
  if (!user) return [];
  const out: CredentialCommand[] = [];
  const exec = user.exec as { command?: unknown } | undefined;
  if (exec && typeof exec.command === 'string') out.push({ user: user.name, command: exec.command, via: 'exec' });
  const cmdPath = (user.authProvider as { config?: Record<string, unknown> } | undefined)?.config?.['cmd-path'];
  if (typeof cmdPath === 'string') out.push({ user: user.name, command: cmdPath, via: 'auth-provider cmd-path' });
  return out;
}

/** The warning for one credential command: client-node runs it with the agent's privileges. */
export function credentialCommandWarning(c: CredentialCommand): string {
  return `kubeconfig user "${c.user}" runs the credential program ${c.command} (${c.via}): @kubernetes/client-node executes it with this agent's privileges (CAP_NET_ADMIN; root in a container) whenever it needs a token; make sure only root can change it, or use a token or client certificate instead`;
}

export interface InformerSourceOptions extends SourceHandlers {
  kubeConfig: KubeConfig;
  /** Objects per LIST page (default 500, as client-go's reflector asks), so a re-list never
   * holds the whole cluster's raw objects. A page's items are parsed and normalized one at a time
   * as its bytes arrive (raw-list.ts), so its size sets neither the bytes nor the objects held. */
  pageSize?: number;
  /** Asked of the server per watch; it ends the watch after that long and we resume. */
  watchTimeoutSeconds?: number;
  /** Backoff between failed attempts, doubling from initialMs up to maxMs. */
  retry?: { initialMs: number; maxMs: number };
  /** The kinds watched (default POLICY_KINDS; add PROXY_KINDS for the service proxy). */
  kinds?: readonly ObjectKind[];
  /** Read the initial state with WatchList where the server offers it (default true). */
  watchList?: boolean;
  /** How often an optional kind the server does not serve is asked for again (default 30 s). */
  notServedRetryMs?: number;
}

const DEFAULT_PAGE_SIZE = 500;
/** How often an optional kind that is not served is asked for again. */
const NOT_SERVED_RETRY_MS = 30_000;

interface KindAccess {
  kind: ObjectKind;
  watchPath: string;
  list(page: { limit: number; _continue?: string }, onItem: OnItem): Promise<ListPage>;
}

export class InformerSource implements ClusterSource {
  private readonly state: ClusterState;
  private readonly reflectors: Reflector[];

  constructor(opts: InformerSourceOptions) {
    this.state = new ClusterState(opts);
    // nfkube itself never executes a program; a kubeconfig can make its client library do so.
    const warn = (message: string, fields: { user: string; command: string; via: string }) =>
      opts.onWarning ? opts.onWarning({ message, object: `kubeconfig user ${fields.user}`, severity: 'warning' }) : createLogger('warn').warn(fields, message);
    for (const c of credentialCommands(opts.kubeConfig)) warn(credentialCommandWarning(c), { user: c.user, command: c.command, via: c.via });
    const kc = opts.kubeConfig;
    const watch = new RawWatch(kc);
    const wanted = new Set(opts.kinds ?? POLICY_KINDS);
    const all: KindAccess[] = [
      { kind: 'Namespace', watchPath: '/api/v1/namespaces', list: rawLister(kc, '/api/v1/namespaces') },
      { kind: 'Pod', watchPath: '/api/v1/pods', list: rawLister(kc, '/api/v1/pods') },
      {
        kind: 'NetworkPolicy',
        watchPath: '/apis/networking.k8s.io/v1/networkpolicies',
        list: rawLister(kc, '/apis/networking.k8s.io/v1/networkpolicies'),
      },
      { kind: 'Service', watchPath: '/api/v1/services', list: rawLister(kc, '/api/v1/services') },
      {
        kind: 'EndpointSlice',
        watchPath: '/apis/discovery.k8s.io/v1/endpointslices',
        list: rawLister(kc, '/apis/discovery.k8s.io/v1/endpointslices'),
      },
      { kind: 'Node', watchPath: '/api/v1/nodes', list: rawLister(kc, '/api/v1/nodes') },
      {
        kind: 'ClusterNetworkPolicy',
        watchPath: '/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies',
        list: rawLister(kc, '/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies'),
      },
    ];
    this.reflectors = all.filter((k) => wanted.has(k.kind)).map((k) => new Reflector(k, watch, this.state, opts));
  }

  async start(): Promise<ClusterSnapshot> {
    for (const r of this.reflectors) r.run();
    await Promise.all(this.reflectors.map((r) => r.synced));
    return this.state.goLive();
  }

  snapshot(): ClusterSnapshot {
    return this.state.snapshot();
  }

  async stop(): Promise<void> {
    await Promise.all(this.reflectors.map((r) => r.stop()));
  }
}

interface WatchEnd {
  expired: boolean;
  error?: unknown;
  events: number;
}

/** The bookmark that ends a WatchList's initial events. */
const INITIAL_EVENTS_END = 'k8s.io/initial-events-end';

/** A WatchList's objects until its initial-events-end bookmark; `unsupported` when the server
 * showed it ignores sendInitialEvents (a bookmark without the annotation came first). */
interface InitialEvents {
  objects: Map<string, never>;
  complete: boolean;
  unsupported: boolean;
}

class SourceStopped extends Error {
  constructor() {
    super('source stopped before its initial state was complete');
  }
}

/** Keeps one kind of ClusterState equal to the server's. */
class Reflector {
  /** Resumption point; empty means a new initial state is needed. */
  private resourceVersion = '';
  /** False once the server refused WatchList for good (400/422, or ignored it). */
  private watchList: boolean;
  private stopped = false;
  /** An optional kind found not served (notServed). */
  private absent = false;
  private controller?: AbortController;
  private wakeUp?: () => void;
  private running?: Promise<void>;
  private resolveSynced!: () => void;
  private rejectSynced!: (err: Error) => void;
  readonly synced: Promise<void>;

  constructor(
    private readonly access: KindAccess,
    private readonly watcher: RawWatch,
    private readonly state: ClusterState,
    private readonly opts: InformerSourceOptions,
  ) {
    this.watchList = opts.watchList ?? true;
    this.synced = new Promise((resolve, reject) => {
      this.resolveSynced = resolve;
      this.rejectSynced = reject;
    });
    // stop() before sync rejects start(); nobody else waits on it.
    this.synced.catch(() => undefined);
  }

  run(): void {
    this.running ??= this.loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.rejectSynced(new SourceStopped());
    this.controller?.abort();
    this.wakeUp?.();
    await this.running;
  }

  private async loop(): Promise<void> {
    let failures = 0;
    while (!this.stopped) {
      try {
        let initial: InitialEvents | undefined;
        if (!this.resourceVersion) {
          if (this.watchList) initial = { objects: new Map<string, never>(), complete: false, unsupported: false };
          else {
            await this.relist();
            this.resolveSynced();
          }
        }
        const started = Date.now();
        const end = await this.watchOnce(initial);
        if (this.stopped) break;
        if (initial && !initial.complete) {
          await this.fallBackToList(end, initial);
          continue;
        }
        if (end.expired) {
          this.resourceVersion = '';
          this.notice(`${this.access.kind} watch expired (410 Gone): reading the state again`);
        }
        if (end.error !== undefined) throw end.error;
        // A watch that ends at once without news counts as a failure, so we never spin.
        failures = end.events > 0 || Date.now() - started >= 1000 ? 0 : failures + 1;
      } catch (err) {
        if (this.stopped) break;
        if (this.notServed(err)) {
          await this.sleep(this.opts.notServedRetryMs ?? NOT_SERVED_RETRY_MS);
          continue;
        }
        failures += 1;
        const e = sourceErrorFrom(err);
        this.opts.onError({ ...e, message: `${this.access.kind} list/watch failed (attempt ${failures}): ${e.message}` });
      }
      if (failures > 0) await this.sleep(this.backoff(failures));
    }
  }

  /** An optional kind the server does not serve (404: its CRD is not installed): its state is
   * empty, said once, and asked for again now and then, so it is picked up once installed. */
  private notServed(err: unknown): boolean {
    if (!OPTIONAL_KINDS.has(this.access.kind) || (err as { statusCode?: number } | null)?.statusCode !== 404) return false;
    if (!this.absent) {
      this.absent = true;
      this.notice(`${this.access.kind} is not served by the API server (its CRD is not installed): enforcing without it; it is read as soon as it is served`);
      this.state.replaceKind(this.access.kind, new Map());
      this.resolveSynced();
    }
    this.resourceVersion = '';
    return true;
  }

  /** A WatchList that ended before its initial state: as client-go does, a paged LIST instead,
   * this time; for good when the server refused the parameters or ignored them. */
  private async fallBackToList(end: WatchEnd, initial: InitialEvents): Promise<void> {
    const status = (end.error as { statusCode?: number } | undefined)?.statusCode;
    if (status === 404 && OPTIONAL_KINDS.has(this.access.kind)) throw end.error;
    const refused = status === 400 || status === 422;
    if (refused || initial.unsupported) this.watchList = false;
    const why = initial.unsupported ? 'the server ignored sendInitialEvents'
      : end.expired ? '410 Gone' : end.error !== undefined ? sourceErrorFrom(end.error).message : 'the watch ended first';
    this.notice(`${this.access.kind} WatchList gave no initial state (${why}): reading it by LIST${this.watchList ? '' : ' from now on'}`);
    await this.relist();
    this.resolveSynced();
  }

  private notice(message: string): void {
    this.opts.onNotice?.(message);
  }

  private backoff(failures: number): number {
    const { initialMs, maxMs } = this.opts.retry ?? { initialMs: 250, maxMs: 15_000 };
    return Math.min(maxMs, initialMs * 2 ** Math.min(failures - 1, 16));
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      this.wakeUp = () => {
        clearTimeout(timer);
        resolve();
      };
    });
  }

  /** Reads every object page by page, normalizing as it goes, then delivers the differences. */
  private async relist(): Promise<void> {
    const { kind } = this.access;
    const next = new Map<string, never>();
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      const page = await this.access.list({ limit: this.opts.pageSize ?? DEFAULT_PAGE_SIZE, _continue: cont }, (item) => {
        const normalized = this.normalize(item);
        if (normalized) next.set(normalized.key, normalized.object as never);
      });
      cont = page.metadata?._continue || undefined;
      resourceVersion = page.metadata?.resourceVersion ?? '';
    } while (cont && !this.stopped);
    if (this.stopped) return;
    this.state.replaceKind(kind, next);
    this.resourceVersion = resourceVersion;
  }

  /** A malformed object is reported and its last good version (if any) kept. */
  private normalize(raw: unknown): { key: string; object: unknown } | undefined {
    const { kind } = this.access;
    const report = (err: unknown) => this.opts.onError(sourceErrorFrom(err));
    let key: string | undefined;
    try {
      key = objectId(kind, raw).key;
      return { key, object: normalizers[kind](raw, { onProblem: report }) };
    } catch (err) {
      report(err);
      const kept = key === undefined ? undefined : this.state.get(kind, key);
      return kept && key ? { key, object: kept } : undefined;
    }
  }

  /** One watch; with `initial`, a WatchList whose initial events build the kind's state. */
  private watchOnce(initial?: InitialEvents): Promise<WatchEnd> {
    return new Promise((resolve) => {
      let expired = false;
      let failure: unknown;
      let events = 0;
      let ended = false;
      const done = (err: unknown) => {
        if (ended) return;
        ended = true;
        this.controller = undefined;
        const gone = (err as { statusCode?: number } | null)?.statusCode === 410;
        resolve({ expired: expired || gone, error: gone ? undefined : (err ?? failure), events });
      };
      const onEvent = (type: string, obj: unknown) => {
        events += 1;
        if (type === 'ERROR') {
          const status = obj as { code?: number; message?: string } | undefined;
          if (status?.code === 410) expired = true;
          else failure = new Error(`watch error: ${status?.message ?? JSON.stringify(obj)}`);
          return;
        }
        if (initial && !initial.complete) this.onInitialEvent(initial, type, obj);
        else this.onWatchEvent(type, obj);
        if (initial?.unsupported) this.controller?.abort();
      };
      const timeoutSeconds = this.opts.watchTimeoutSeconds ?? Math.floor(300 + Math.random() * 300);
      const query = initial
        ? { sendInitialEvents: true, resourceVersionMatch: 'NotOlderThan', resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds }
        : { resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds };
      this.watcher.watch(this.access.watchPath, query, onEvent, done).then(
        (controller) => {
          if (ended) return;
          if (this.stopped || initial?.unsupported) controller.abort();
          else this.controller = controller;
        },
        (err) => done(err),
      );
    });
  }

  /** An event of a WatchList's initial phase: collected until the initial-events-end bookmark,
   * which makes the kind equal to what was collected. */
  private onInitialEvent(initial: InitialEvents, type: string, raw: unknown): void {
    if (type === 'BOOKMARK') {
      const metadata = (raw as { metadata?: { resourceVersion?: unknown; annotations?: Record<string, unknown> } } | null)?.metadata;
      if (metadata?.annotations?.[INITIAL_EVENTS_END] !== 'true' || typeof metadata.resourceVersion !== 'string' || !metadata.resourceVersion) {
        initial.unsupported = true;
        return;
      }
      initial.complete = true;
      this.state.replaceKind(this.access.kind, initial.objects);
      this.resourceVersion = metadata.resourceVersion;
      this.resolveSynced();
    } else if (type === 'ADDED' || type === 'MODIFIED') {
      const normalized = this.normalize(raw);
      if (normalized) initial.objects.set(normalized.key, normalized.object as never);
    } else if (type === 'DELETED') {
      try {
        initial.objects.delete(objectId(this.access.kind, raw).key);
      } catch (err) {
        this.opts.onError(sourceErrorFrom(err));
      }
    }
  }

  private onWatchEvent(type: string, raw: unknown): void {
    const { kind } = this.access;
    const rv = (raw as { metadata?: { resourceVersion?: unknown } } | null)?.metadata?.resourceVersion;
    if (typeof rv === 'string' && rv) this.resourceVersion = rv;
    if (type === 'ADDED' || type === 'MODIFIED') {
      const normalized = this.normalize(raw);
      stamp('normalized');
      if (normalized) this.state.upsert(kind, normalized.key, normalized.object as never, lastChangeTime(raw));
    } else if (type === 'DELETED') {
      try {
        this.state.delete(kind, objectId(kind, raw).key);
      } catch (err) {
        this.opts.onError(sourceErrorFrom(err));
      }
    }
  }
}
