/** The proxy's Prometheus metrics under kube-proxy's names with the `nfkube_proxy_` prefix,
 * registered into the agent's registry: sync durations, network programming latency (from the
 * EndpointSlices' last-change-trigger-time), last queued/synced timestamps, sync failures, and
 * the conntrack entries deleted, and the claims refused (claims.ts). */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { AgentObserver } from '../pipeline/table-sync';

export class ProxyMetrics {
  readonly syncDuration: Histogram;
  readonly programmingLatency: Histogram;
  readonly lastQueued: Gauge;
  readonly lastSynced: Gauge;
  readonly syncFailures: Counter;
  readonly conntrackDeleted: Counter;
  readonly refused: Counter<'kind'>;

  constructor(registry: Registry) {
    const registers = [registry];
    this.syncDuration = new Histogram({
      name: 'nfkube_proxy_sync_proxy_rules_duration_seconds',
      help: 'Time a commit of the proxy table took.',
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.programmingLatency = new Histogram({
      name: 'nfkube_proxy_network_programming_duration_seconds',
      help: "Time from an EndpointSlice's last-change-trigger-time to the commit that programmed it.",
      buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
      registers,
    });
    this.lastQueued = new Gauge({ name: 'nfkube_proxy_sync_proxy_rules_last_queued_timestamp_seconds', help: 'When the last change for the proxy was queued.', registers });
    this.lastSynced = new Gauge({ name: 'nfkube_proxy_sync_proxy_rules_last_timestamp_seconds', help: 'When the proxy table was last committed.', registers });
    this.syncFailures = new Counter({ name: 'nfkube_proxy_sync_proxy_rules_nftables_sync_failures_total', help: 'Proxy table commits that failed.', registers });
    this.conntrackDeleted = new Counter({ name: 'nfkube_proxy_conntrack_entries_deleted_total', help: 'Stale UDP conntrack entries deleted over ctnetlink.', registers });
    this.refused = new Counter({
      name: 'nfkube_proxy_refused_claims_total',
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
