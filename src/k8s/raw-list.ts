/** One page of a LIST as the server's own JSON, through the kubeconfig's server, TLS and auth
 * (client-node's KubeConfig.applyToHTTPSOptions, as raw-watch.ts does for watches).
 *
 * client-node's typed list calls turn every item into its generated model classes before we read
 * six fields of it: measured at 5k pods that deserialisation is a quarter of the agent's CPU to
 * its first commit, and its objects are garbage held until the page is normalized. Raw items are
 * what watch events already carry, and normalize.ts reads both forms. */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest, type RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import { jsonListItems, splitJsonList } from './json-list';

export interface ListPage {
  /** Parsed one at a time as they are read (json-list.ts), so a page's raw objects die young. */
  items?: Iterable<unknown>;
  metadata?: { resourceVersion?: string; _continue?: string };
}

export interface PageRequest {
  limit: number;
  _continue?: string;
}

/** An HTTP failure with the server's status code (410 Gone for an expired continue token). */
export class ListError extends Error {
  constructor(
    readonly statusCode: number,
    message: string,
  ) {
    super(message);
    this.name = 'ListError';
  }
}

const LIST_TIMEOUT_MS = 60_000;

/** A lister for one collection path, e.g. `/api/v1/pods`. */
export function rawLister(kc: KubeConfig, path: string): (page: PageRequest) => Promise<ListPage> {
  return async (page) => {
    const url = serverUrl(kc, path);
    if (!url) throw new Error('kubeconfig: no current cluster');
    url.searchParams.set('limit', String(page.limit));
    if (page._continue) url.searchParams.set('continue', page._continue);
    const opts = withPagingAgent(await getOptions(kc));
    const body = await get(url, opts);
    const split = splitJsonList(body, Number.POSITIVE_INFINITY);
    const list = (split?.envelope ?? JSON.parse(body.toString('utf8'))) as { items?: unknown[]; metadata?: { resourceVersion?: string; continue?: string } };
    const items = split ? jsonListItems(body, split.spans) : (list.items ?? []);
    return { items, metadata: { resourceVersion: list.metadata?.resourceVersion, _continue: list.metadata?.continue } };
  };
}

/** How long a LIST connection may stay idle between pages before it is closed. */
const PAGE_IDLE_MS = 5_000;

/** The kubeconfig hands every request a new Agent, so each page of a LIST would open its own
 * connection (and, over TLS, do a full handshake): at 5k pods and 100-item pages, 50 of them.
 * The pages of a LIST share keep-alive connections instead. The TLS material stays on each
 * request's options, and an Agent pools connections by it, so a rotated certificate gets a new
 * connection. A proxy agent (proxy-url) is kept as the kubeconfig made it. */
const pagingAgents = {
  http: new HttpAgent({ keepAlive: true, timeout: PAGE_IDLE_MS }),
  https: new HttpsAgent({ keepAlive: true, timeout: PAGE_IDLE_MS }),
};

function withPagingAgent(opts: RequestOptions): RequestOptions {
  const agent = opts.agent as object | undefined;
  if (agent?.constructor === HttpsAgent) return { ...opts, agent: pagingAgents.https };
  if (agent?.constructor === HttpAgent) return { ...opts, agent: pagingAgents.http };
  return opts;
}

/** A page's bytes: decoded item by item, never as one string (json-list.ts says why). */
async function get(url: URL, opts: RequestOptions): Promise<Buffer> {
  const { status, bytes } = await requestBytes(url, opts, LIST_TIMEOUT_MS, 'LIST');
  if (status === 200) return bytes;
  throw new ListError(status, `LIST ${url.pathname}: HTTP ${status}: ${statusMessage(bytes.toString('utf8'))}`);
}

/** One request (`body` sent as is), its status code and the answer's text; `what` names it in a
 * timeout's error. */
export async function requestText(url: URL, opts: RequestOptions, timeoutMs: number, what: string, body?: string): Promise<{ status: number; text: string }> {
  const { status, bytes } = await requestBytes(url, opts, timeoutMs, what, body);
  return { status, text: bytes.toString('utf8') };
}

/** requestText's answer as bytes. */
function requestBytes(url: URL, opts: RequestOptions, timeoutMs: number, what: string, body?: string): Promise<{ status: number; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, opts, (res: IncomingMessage) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes: Buffer.concat(chunks) }));
    });
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${what} ${url.pathname}: no answer in ${timeoutMs / 1000} s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** `path` on the kubeconfig's current server, or undefined when it names none. */
export function serverUrl(kc: KubeConfig, path: string): URL | undefined {
  const cluster = kc.getCurrentCluster();
  return cluster ? new URL(cluster.server.replace(/\/+$/, '') + path) : undefined;
}

/** A JSON GET's options with the kubeconfig's TLS and auth applied. */
export async function getOptions(kc: KubeConfig): Promise<RequestOptions> {
  const opts: RequestOptions = { method: 'GET', headers: { Accept: 'application/json' } };
  await kc.applyToHTTPSOptions(opts);
  return opts;
}

/** What a failed request's body says: a Status object's message, else the text's start. */
export function statusMessage(text: string): string {
  try {
    return (JSON.parse(text) as { message?: string } | null)?.message ?? text.slice(0, 500);
  } catch {
    // Not a Status object: the text itself says what went wrong.
  }
  return text.slice(0, 500);
}
