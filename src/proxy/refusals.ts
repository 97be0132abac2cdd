/** Claims the proxy refuses (claims.ts) and health-check ports it cannot serve, told once while
 * they last: a warning, a metric and a Warning Event on the Service when one starts; an info
 * line when it is over. */
import type { Logger } from 'pino';
import type { Refusal } from './claims';
import type { ProxyMetrics } from './metrics';

/** The reason of the Events recorded for a refused claim. */
export const REFUSAL_REASON = 'ServiceClaimRefused';

/** Where the proxy records Warning Events on Services (k8s/event-writer.ts over the API). */
export interface ServiceEventSink {
  warning(object: { kind: 'Service'; namespace: string; name: string }, reason: string, message: string): void;
}

/** Reports the refusals in `now` that are not in `old`, and those of `old` that are over. */
export function reportRefusals(to: { logger?: Logger; metrics?: ProxyMetrics; events?: ServiceEventSink }, old: Refusal[], now: Refusal[]): void {
  if (old.length === 0 && now.length === 0) return;
  const before = new Set(old.map((r) => r.message));
  const after = new Set(now.map((r) => r.message));
  for (const r of now) {
    if (before.has(r.message)) continue;
    to.logger?.warn({ service: r.service, kind: r.kind, value: r.value, holder: r.holder }, r.message);
    to.metrics?.refused.inc({ kind: r.kind });
    const [namespace, name] = r.service.split('/');
    to.events?.warning({ kind: 'Service', namespace, name }, REFUSAL_REASON, r.message);
  }
  for (const r of old) if (!after.has(r.message)) to.logger?.info({ service: r.service, kind: r.kind, value: r.value }, `${r.message}: no longer`);
}
