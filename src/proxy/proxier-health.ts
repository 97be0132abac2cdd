/** kube-proxy's own health server (pkg/proxy/healthcheck/proxy_health.go) on
 * --healthz-bind-address: cloud load balancers probe `/healthz` on every node for ETP Local
 * Services, and kubelet's liveness probe `/livez`. The proxy is healthy unless a queued change has
 * waited longer than the timeout without a commit (and while it starts up); `/healthz` is also
 * 503 when the Node is being deleted or tainted ToBeDeletedByClusterAutoscaler, so load balancers
 * drain it first, while `/livez` ignores the Node. Bodies are kube-proxy's JSON, its times in Go's
 * time.Time text. */
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { Counter } from 'prom-client';
import type { NodeInfo } from '../k8s/service-model';

export const DEFAULT_HEALTHZ_BIND_ADDRESS = '0.0.0.0:10256';
/** kube-proxy's: twice its default --iptables-sync-period of 30 s. */
export const DEFAULT_HEALTH_TIMEOUT_MS = 60_000;

export interface ProxierHealthAnswer {
  status: 200 | 503;
  body: string;
}

/** Go's time.Time.String() of a UTC instant: `2006-01-02 15:04:05.999999999 +0000 UTC`, the
 * fraction without trailing zeros; the zero time for undefined. */
export function goTimeText(ms: number | undefined): string {
  if (ms === undefined) return '0001-01-01 00:00:00 +0000 UTC';
  const iso = new Date(ms).toISOString();
  const fraction = iso.slice(20, 23).replace(/0+$/, '');
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)}${fraction ? `.${fraction}` : ''} +0000 UTC`;
}

export class ProxierHealth {
  private lastUpdated: number | undefined;
  private oldestQueued: number | undefined;
  private nodeEligible = true;
  private server: Server | undefined;

  constructor(
    private readonly opts: { timeoutMs?: number; now?: () => number; counters?: { healthz: Counter<'code'>; livez: Counter<'code'> } } = {},
  ) {}

  private now(): number {
    return (this.opts.now ?? Date.now)();
  }

  /** A change the proxy must commit has arrived. */
  queued(): void {
    this.oldestQueued ??= this.now();
  }

  /** The proxy table is committed: everything queued so far is programmed. */
  updated(): void {
    this.oldestQueued = undefined;
    this.lastUpdated = this.now();
  }

  /** This node's Node object (undefined: deleted). */
  syncNode(node: NodeInfo | undefined): void {
    this.nodeEligible = node !== undefined && !node.toBeDeleted;
  }

  private healthy(now: number): boolean {
    // Starting up (never updated), or nothing queued, or queued but not late yet.
    return this.lastUpdated === undefined || this.oldestQueued === undefined || now - this.oldestQueued < (this.opts.timeoutMs ?? DEFAULT_HEALTH_TIMEOUT_MS);
  }

  /** The answer to a path, or undefined for one kube-proxy does not serve. */
  answer(path: string): ProxierHealthAnswer | undefined {
    const now = this.now();
    const healthy = this.healthy(now);
    const times = (ok: boolean) => `"lastUpdated": "${goTimeText(ok ? now : this.lastUpdated)}","currentTime": "${goTimeText(now)}"`;
    if (path === '/healthz') {
      const ok = healthy && this.nodeEligible;
      this.opts.counters?.healthz.inc({ code: ok ? '200' : '503' });
      return { status: ok ? 200 : 503, body: `{${times(ok)}, "nodeEligible": ${this.nodeEligible}}` };
    }
    if (path === '/livez') {
      this.opts.counters?.livez.inc({ code: healthy ? '200' : '503' });
      return { status: healthy ? 200 : 503, body: `{${times(healthy)}}` };
    }
    return undefined;
  }

  listen(host: string, port: number): Promise<void> {
    const server = createServer((req, res) => this.serve(req, res));
    this.server = server;
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
  }

  private serve(req: IncomingMessage, res: ServerResponse): void {
    const a = this.answer(new URL(req.url ?? '/', 'http://x').pathname);
    if (!a) {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('404 page not found\n');
      return;
    }
    res.writeHead(a.status, { 'Content-Type': 'application/json', 'X-Content-Type-Options': 'nosniff' });
    res.end(a.body);
  }

  close(): Promise<void> {
    const server = this.server;
    this.server = undefined;
    return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
  }
}
