/** The proxy's Prometheus metrics under kube-proxy's names with the `nfkube_proxy_` prefix (or
 * kube-proxy's own `kubeproxy_`),
 * registered into the agent's registry: sync durations, network programming latency (from the
 * EndpointSlices' last-change-trigger-time), last queued/synced timestamps, sync failures, and
 * the conntrack entries deleted, the claims refused (claims.ts), and the answers of kube-proxy's
 * /healthz and /livez (proxier-health.ts). */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AgentObserver } from '../pipeline/sync-report';

export type MetricPrefix = 'nfkube_proxy_' | 'kubeproxy_';
export const DEFAULT_PREFIX: MetricPrefix = 'nfkube_proxy_';

export class ProxyMetrics {
  readonly syncDuration: Histogram;
  readonly programmingLatency: Histogram;
  readonly lastQueued: Gauge;
  readonly lastSynced: Gauge;
  readonly syncFailures: Counter;
  readonly conntrackDeleted: Counter;
  readonly refused: Counter<'kind'>;

  readonly healthz: Counter<'code'>;
  readonly livez: Counter<'code'>;

  /** `prefix`: `nfkube_proxy_`, or `kubeproxy_` for kube-proxy's own names (its dashboards and
   * alerts). */
  constructor(registry: Registry, prefix: MetricPrefix = DEFAULT_PREFIX) {
    const registers = [registry];
    this.syncDuration = new Histogram({
      name: `${prefix}sync_proxy_rules_duration_seconds`,
      help: 'Time a commit of the proxy table took.',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.programmingLatency = new Histogram({
      name: `${prefix}network_programming_duration_seconds`,
      help: "Time from an EndpointSlice's last-change-trigger-time to the commit that programmed it.",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.lastQueued = new Gauge({ name: `${prefix}sync_proxy_rules_last_queued_timestamp_seconds`, help: 'When the last change for the proxy was queued.', registers });
    this.lastSynced = new Gauge({ name: `${prefix}sync_proxy_rules_last_timestamp_seconds`, help: 'When the proxy table was last committed.', registers });
    this.syncFailures = new Counter({ name: `${prefix}sync_proxy_rules_nftables_sync_failures_total`, help: 'Proxy table commits that failed.', registers });
    this.conntrackDeleted = new Counter({ name: `${prefix}conntrack_entries_deleted_total`, help: 'Stale UDP conntrack entries deleted over ctnetlink.', registers });
    this.healthz = new Counter({ name: `${prefix}proxy_healthz_total`, help: 'Answers of /healthz on --healthz-bind-address, by code.', labelNames: ['code'], registers });
    this.livez = new Counter({ name: `${prefix}proxy_livez_total`, help: 'Answers of /livez on --healthz-bind-address, by code.', labelNames: ['code'], registers });
    this.refused = new Counter({
      name: `${prefix}refused_claims_total`,
      help: "Addresses, ports and endpoints a Service was refused: another Service's cluster IP, an earlier claim, an external IP not allowed, a loopback endpoint.",
      labelNames: ['kind'],
      registers,
    });
  }

  /** A commit of the proxy table took this long. */
  synced(durationMs: number, now = Date.now()): void {
    this.syncDuration.observe(durationMs / 1000);
    this.lastSynced.set(now / 1000);
  }

  /** The EndpointSlice changes with these trigger times are now in the kernel. */
  programmed(triggerTimesMs: readonly number[], now = Date.now()): void {
    for (const t of triggerTimesMs) if (t <= now) this.programmingLatency.observe((now - t) / 1000);
  }

  queued(now = Date.now()): void {
    this.lastQueued.set(now / 1000);
  }
}

/** The agent's observer, also feeding the proxy's sync metrics from the proxy table's syncs. */
export function withProxyMetrics(observer: AgentObserver, metrics: ProxyMetrics): AgentObserver {
  return {
    ...observer,
    synced: (r) => {
      observer.synced?.(r);
      if (r.component === 'proxy') metrics.synced(r.durationMs);
    },
    failed: (kind, err, component) => {
      observer.failed?.(kind, err, component);
      if (component === 'proxy') metrics.syncFailures.inc();
    },
  };
}
