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
import { JsonListStream } from './json-list-stream';

/** A page's own metadata; its items went to the lister's onItem as they arrived. */
export interface ListPage {
  metadata?: { resourceVersion?: string; _continue?: string };
}

/** Takes each item of a page as soon as its bytes are in (json-list-stream.ts), so neither the
 * page's bytes nor its raw objects outlive V8's young generation. When the page then fails (a
 * syntax error, a cut connection), the items it gave are the caller's to drop. */
export type OnItem = (item: unknown) => void;

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
export function rawLister(kc: KubeConfig, path: string): (page: PageRequest, onItem: OnItem) => Promise<ListPage> {
  return async (page, onItem) => {
    const url = serverUrl(kc, path);
    if (!url) throw new Error('kubeconfig: no current cluster');
    url.searchParams.set('limit', String(page.limit));
    if (page._continue) url.searchParams.set('continue', page._continue);
    const opts = withPagingAgent(await getOptions(kc));
    const list = (await streamList(url, opts, new JsonListStream(onItem))) as { metadata?: { resourceVersion?: string; continue?: string } };
    return { metadata: { resourceVersion: list.metadata?.resourceVersion, _continue: list.metadata?.continue } };
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

/** A page read into `list` chunk by chunk; its envelope. A failed request's body is read whole
 * for the server's message. */
function streamList(url: URL, opts: RequestOptions, list: JsonListStream): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, opts, (res: IncomingMessage) => {
      if (res.statusCode !== 200) {
        readBody(res).then(({ status, bytes }) => reject(new ListError(status, `LIST ${url.pathname}: HTTP ${status}: ${statusMessage(bytes.toString('utf8'))}`)), reject);
        return;
      }
      res.on('data', (c: Buffer) => {
        try {
          list.push(c);
        } catch (err) {
          req.destroy();
          reject(new Error(`LIST ${url.pathname}: ${(err as Error).message}`));
        }
      });
      res.on('error', reject);
      res.on('end', () => {
        try {
          resolve(list.end());
        } catch (err) {
          reject(new Error(`LIST ${url.pathname}: ${(err as Error).message}`));
        }
      });
    });
    req.setTimeout(LIST_TIMEOUT_MS, () => req.destroy(new Error(`LIST ${url.pathname}: no answer in ${LIST_TIMEOUT_MS / 1000} s`)));
    req.on('error', reject);
    req.end();
  });
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
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, opts, (res: IncomingMessage) => void readBody(res).then(resolve, reject));
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`${what} ${url.pathname}: no answer in ${timeoutMs / 1000} s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** An answer's status code and its whole body. */
function readBody(res: IncomingMessage): Promise<{ status: number; bytes: Buffer }> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    res.on('data', (c: Buffer) => chunks.push(c));
    res.on('error', reject);
    res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes: Buffer.concat(chunks) }));
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
