/** Kubernetes Events (core v1) about the objects nfkube reads, as client-go's recorder writes
 * them: the first occurrence of an object, reason and message is created, a repeat within
 * SERIES_MS patches its count and lastTimestamp. A token bucket (BURST, one more every REFILL_MS,
 * as client-go's spam filter) bounds what a flood of conflicting objects can send; what it drops
 * is counted. Writes are queued and sent one at a time; a failure is logged, never thrown: an
 * Event is a report, not state. */
import { randomBytes } from 'node:crypto';
import type { RequestOptions } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { requestText, serverUrl, statusMessage } from './raw-list';

export interface EventObject {
  kind: string;
  namespace: string;
  name: string;
}

/** One request to the API server: a JSON body, the status code and text of the answer. */
export type EventTransport = (method: 'POST' | 'PATCH', path: string, body: unknown) => Promise<{ status: number; text: string }>;

export const BURST = 25;
export const REFILL_MS = 5 * 60_000;
/** Repeats within this window count on one Event. */
export const SERIES_MS = 10 * 60_000;
const REQUEST_TIMEOUT_MS = 10_000;

export class EventWriter {
  /** Events not sent because the bucket was empty. */
  dropped = 0;
  private tokens = BURST;
  private refilledAt: number;
  private readonly series = new Map<string, { name: string; count: number; at: number }>();
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly transport: EventTransport,
    private readonly source: { component: string; host: string },
    private readonly logger?: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.refilledAt = now();
  }

  warning(object: EventObject, reason: string, message: string): void {
    if (!this.take()) {
      this.dropped++;
      return;
    }
    this.queue = this.queue.then(() => this.send(object, reason, message)).catch((err: unknown) => this.logger?.warn({ err, object, reason }, 'event not recorded'));
  }

  /** Resolves once every Event queued so far was sent (or failed). */
  idle(): Promise<void> {
    return this.queue;
  }

  private take(): boolean {
    const t = this.now();
    const refills = Math.floor((t - this.refilledAt) / REFILL_MS);
    if (refills > 0) {
      this.tokens = Math.min(BURST, this.tokens + refills);
      this.refilledAt += refills * REFILL_MS;
    }
    if (this.tokens === 0) return false;
    this.tokens--;
    return true;
  }

  private async send(object: EventObject, reason: string, message: string): Promise<void> {
    const t = this.now();
    const stamp = new Date(t).toISOString().replace(/\.\d+Z$/, 'Z');
    const key = JSON.stringify([object.kind, object.namespace, object.name, reason, message]);
    for (const [k, s] of this.series) if (t - s.at > SERIES_MS) this.series.delete(k);
    const path = `/api/v1/namespaces/${encodeURIComponent(object.namespace)}/events`;
    const known = this.series.get(key);
    if (known) {
      known.count++;
      known.at = t;
      const r = await this.transport('PATCH', `${path}/${encodeURIComponent(known.name)}`, { count: known.count, lastTimestamp: stamp });
      if (r.status === 200) return;
      // Gone (expired by the server's TTL): start a new one.
      this.series.delete(key);
      if (r.status !== 404) throw new Error(`PATCH event: HTTP ${r.status}: ${statusMessage(r.text)}`);
    }
    const name = `${object.name}.${t.toString(16)}${randomBytes(2).toString('hex')}`;
    const event = {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: object.namespace },
      involvedObject: { apiVersion: 'v1', kind: object.kind, namespace: object.namespace, name: object.name },
      reason,
      message,
      type: 'Warning',
      source: this.source,
      reportingComponent: this.source.component,
      reportingInstance: this.source.host,
      firstTimestamp: stamp,
      lastTimestamp: stamp,
      count: 1,
    };
    const r = await this.transport('POST', path, event);
    if (r.status !== 201 && r.status !== 200) throw new Error(`POST event: HTTP ${r.status}: ${statusMessage(r.text)}`);
    this.series.set(key, { name, count: 1, at: t });
  }
}

/** The transport through a kubeconfig's server, TLS and auth. */
export function kubeConfigTransport(kc: KubeConfig): EventTransport {
  return async (method, path, body) => {
    const url = serverUrl(kc, path);
    if (!url) throw new Error('kubeconfig: no current cluster');
    const opts: RequestOptions = {
      method,
      headers: { Accept: 'application/json', 'Content-Type': method === 'PATCH' ? 'application/merge-patch+json' : 'application/json' },
    };
    await kc.applyToHTTPSOptions(opts);
    return requestText(url, opts, REQUEST_TIMEOUT_MS, method, JSON.stringify(body));
  };
}
