/** The agent's HTTP endpoints: /metrics, /healthz and /readyz, and /drops with --log-drops. The agent supplies callbacks, so
 * this module knows nothing about syncing; it only turns the agent's answers into status codes. */
import { createServer, IncomingMessage, Server, ServerResponse } from 'node:http';
import { isIP } from 'node:net';

/** A drop as /drops serves it, by the fields the server reads: the drop log (policy/droplog)
 * supplies them (TimedDrop), and this server imports no feature. */
export interface ServedDrop {
  time: number;
  drop: { pod: string; src: string; dst: string };
}

/** The recent drops and the ones to come (policy/droplog/drop-ring.ts's DropRing). */
export interface DropFeed {
  since(since: number): ServedDrop[];
  follow(f: (d: ServedDrop) => void): () => void;
}

/** Whether a drop concerns the pod `namespace/name`: the pod whose deny caught it, or either end. */
export function concernsPod(d: ServedDrop['drop'], pod: string): boolean {
  return d.pod === pod || d.src === pod || d.dst === pod;
}

export const DEFAULT_METRICS_ADDR = '127.0.0.1:9476';

export interface ListenAddress {
  host: string;
  port: number;
}

/** Parses `host:port`, `[v6]:port` (e.g. `[::1]:9476`). Port 0 asks the kernel for a free one. */
export function parseListenAddress(text: string, flag = '--metrics-addr'): ListenAddress {
  const bracketed = /^\[([^\]]+)\]:(\d+)$/.exec(text);
  const plain = /^([^:\[\]]+):(\d+)$/.exec(text);
  const m = bracketed ?? plain;
  if (!m) throw new Error(`${flag}: expected host:port or [ipv6]:port, got "${text}"`);
  const [, host, portText] = m;
  if (bracketed && isIP(host) !== 6) throw new Error(`${flag}: "${host}" in brackets is not an IPv6 address`);
  const port = Number(portText);
  if (!Number.isInteger(port) || port > 65535) throw new Error(`${flag}: port ${portText} is out of range 0-65535`);
  return { host, port };
}

/** `--metrics-addr` as kube-proxy reads `--metrics-bind-address`: `host:port`, `[v6]:port`,
 * `:port` (every address, host ''), or empty: no server (undefined). */
export function parseMetricsAddress(text: string, flag = '--metrics-addr'): ListenAddress | undefined {
  if (text.trim() === '') return undefined;
  const any = /^:(\d+)$/.exec(text);
  return any ? { ...parseListenAddress(`0.0.0.0:${any[1]}`, flag), host: '' } : parseListenAddress(text, flag);
}

/** Where a client on this host reaches a server listening on `a`: every address is reached on
 * loopback. `host:port`, `[v6]:port`. */
export function localClientAddress(a: ListenAddress): string {
  const host = a.host === '' || a.host === '0.0.0.0' ? '127.0.0.1' : a.host === '::' ? '::1' : a.host;
  return host.includes(':') ? `[${host}]:${a.port}` : `${host}:${a.port}`;
}

export interface HealthInputs {
  now: number;
  /** When the server started; before the first sync the age is measured from here. */
  startedAt: number;
  lastSuccessfulSync: number | undefined;
  resyncPeriodMs: number;
  /** A reason the agent is not alive (e.g. its event loop stopped), or undefined. */
  notAlive: string | undefined;
}

/** Alive and the last committed sync (or the start, before any) is at most 3 resync periods old. */
export function healthStatus(h: HealthInputs): { ok: boolean; reason: string } {
  if (h.notAlive) return { ok: false, reason: `not alive: ${h.notAlive}` };
  const limit = 3 * h.resyncPeriodMs;
  const since = h.lastSuccessfulSync ?? h.startedAt;
  const age = h.now - since;
  const what = h.lastSuccessfulSync === undefined ? 'no successful sync since start' : 'last successful sync';
  const ageText = `${(age / 1000).toFixed(1)}s ago`;
  if (age > limit) return { ok: false, reason: `${what} ${ageText}, limit ${(limit / 1000).toFixed(1)}s (3 resync periods)` };
  return { ok: true, reason: `ok: ${what} ${ageText}` };
}

export interface ObserveServerOptions {
  address: ListenAddress;
  /** The exposition body and content type for /metrics. */
  metrics: () => Promise<{ contentType: string; body: string }>;
  /** Milliseconds since the epoch of the last sync the kernel committed. */
  lastSuccessfulSync: () => number | undefined;
  resyncPeriodMs: number;
  /** True once the first full sync committed. */
  ready: () => boolean;
  /** Returns why the agent is not alive, or undefined when it is. */
  notAlive?: () => string | undefined;
  /** Clock, milliseconds since the epoch. */
  now?: () => number;
  /** The recent drop records (--log-drops), served on /drops to loopback clients only. */
  drops?: DropFeed;
}

export interface ObserveServer {
  /** The bound address (the real port when 0 was asked for). */
  address: ListenAddress;
  close(): Promise<void>;
}

function reply(res: ServerResponse, status: number, body: string, contentType = 'text/plain; charset=utf-8'): void {
  res.writeHead(status, { 'content-type': contentType, 'cache-control': 'no-store' });
  res.end(body.endsWith('\n') ? body : `${body}\n`);
}

/** A client on this host: /drops names pods and addresses, so only local users read it. */
function isLoopback(address: string | undefined): boolean {
  return address !== undefined && (/^(::ffff:)?127\./.test(address) || address === '::1');
}

/** /drops?since=MS&pod=NS/NAME&follow=1: the recent drops as JSON lines ({time, drop}), oldest
 * first; with follow, then each new one as it is logged, until the client goes. */
function serveDrops(req: IncomingMessage, res: ServerResponse, ring: DropFeed | undefined): void {
  if (!isLoopback(req.socket.remoteAddress)) return reply(res, 403, 'forbidden: /drops answers loopback clients only');
  if (!ring) return reply(res, 404, 'not found: the agent does not log drops (start it with --log-drops)');
  const query = new URL(req.url ?? '/', 'http://x').searchParams;
  const since = Number(query.get('since') ?? 0);
  if (!Number.isFinite(since)) return reply(res, 400, `since: "${query.get('since')}" is not milliseconds since the epoch`);
  const pod = query.get('pod') ?? undefined;
  const wanted = (d: ServedDrop) => pod === undefined || concernsPod(d.drop, pod);
  const line = (d: ServedDrop) => `${JSON.stringify(d)}\n`;
  res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
  const recent = ring.since(since).filter(wanted).map(line).join('');
  if (query.get('follow') !== '1') return void res.end(recent);
  res.write(recent);
  const stop = ring.follow((d) => wanted(d) && res.write(line(d)));
  res.on('close', stop);
}

export async function startObserveServer(options: ObserveServerOptions): Promise<ObserveServer> {
  const now = options.now ?? Date.now;
  const startedAt = now();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method !== 'GET' && req.method !== 'HEAD') return reply(res, 405, 'method not allowed');
    switch (path) {
      case '/metrics': {
        const { contentType, body } = await options.metrics();
        return reply(res, 200, body, contentType);
      }
      case '/healthz': {
        const h = healthStatus({
          now: now(),
          startedAt,
          lastSuccessfulSync: options.lastSuccessfulSync(),
          resyncPeriodMs: options.resyncPeriodMs,
          notAlive: options.notAlive?.(),
        });
        return reply(res, h.ok ? 200 : 503, h.reason);
      }
      case '/drops':
        return serveDrops(req, res, options.drops);
      case '/readyz':
        return options.ready() ? reply(res, 200, 'ok: first full sync committed') : reply(res, 503, 'not ready: first full sync not committed yet');
      default:
        return reply(res, 404, 'not found: try /metrics, /healthz, /readyz or /drops');
    }
  }

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) reply(res, 500, `error: ${err instanceof Error ? err.message : String(err)}`);
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    // host '' listens on every address, IPv6 and IPv4 where the node has both.
    server.listen(options.address.port, options.address.host || undefined, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address();
  const port = typeof bound === 'object' && bound ? bound.port : options.address.port;
  return {
    address: { host: options.address.host, port },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        server.closeAllConnections();
      }),
  };
}
