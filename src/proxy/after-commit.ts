/** What follows each committed transaction of the proxy table: the programming-latency metric of
 * the EndpointSlice changes it carried, kube-proxy's /healthz, the health-check node ports, and
 * the conntrack cleanup of UDP flows the change left stale. Invariants: cleanups run one at a
 * time in commit order, and none deletes a flow before the commit that made it stale is in. */
import type { SyncKind } from '../pipeline/component';
import type { Refusal } from './claims';
import { cleanStaleFlows, reconcileConntrack, StaleFlows, UdpServicePort } from './conntrack-cleanup';
import type { Logger } from 'pino';
import type { ConntrackClient } from '../conntrack/client';
import type { HealthCheckServer } from './health';
import type { ProxyMetrics } from './metrics';
import type { ProxierHealth } from './proxier-health';

export interface AftercareSource {
  /** The health checks the committed services need (ProxyComponent.healthChecks). */
  healthChecks(): { service: string; port: number; localEndpoints: number }[];
  /** Every UDP service port rendered now, for a whole-table conntrack reconcile. */
  udpPorts(): UdpServicePort[];
  /** Says which refusals are new and which are over. */
  reportRefusals(old: Refusal[], now: Refusal[]): void;
}

export class ProxyAftercare {
  /** Trigger times (ms) of EndpointSlice changes applied since the last commit. */
  readonly pendingTriggerTimes: number[] = [];
  /** Conntrack entries to delete once the change that made them stale is committed. */
  readonly pendingStaleFlows: StaleFlows[] = [];
  /** Conntrack entries deleted so far. */
  conntrackDeleted = 0;
  private cleaning: Promise<void> = Promise.resolve();
  /** Health-check node ports that could not be served at the last sync. */
  private healthFailures: Refusal[] = [];
  /** A conntrack reconcile ran since the component (re)started. */
  private reconciled = false;

  constructor(
    private readonly opts: { metrics?: ProxyMetrics; proxierHealth?: ProxierHealth; health?: HealthCheckServer; conntrack?: ConntrackClient; logger?: Logger },
    private readonly source: AftercareSource,
  ) {}

  /** The component loaded a new snapshot: the next settle() reconciles unless a sync does. */
  restart(): void {
    this.reconciled = false;
  }

  committed(kind: SyncKind): Promise<void> {
    this.opts.metrics?.programmed(this.pendingTriggerTimes);
    this.opts.proxierHealth?.updated();
    const health = this.syncHealth();
    this.pendingTriggerTimes.length = 0;
    const flows = this.pendingStaleFlows.splice(0);
    // A full sync (start, periodic resync) reconciles the whole conntrack table, which also finds
    // what changed while no process watched; an incremental one cleans what its change left.
    const conntrack = this.opts.conntrack;
    let cleanup = Promise.resolve();
    if (kind !== 'incremental') cleanup = this.reconcileConntrack();
    else if (conntrack && flows.length > 0) cleanup = this.queueCleanup(() => cleanStaleFlows(conntrack, flows, this.opts.logger));
    return Promise.all([health, cleanup]).then(() => undefined);
  }

  /** Health answers follow what is committed, not what is only desired. A health-check node port
   * that cannot be served (in use) is reported as a refusal, once while it lasts. */
  private async syncHealth(): Promise<void> {
    if (!this.opts.health) return;
    try {
      const failed = await this.opts.health.sync(this.source.healthChecks());
      const now: Refusal[] = failed.map(({ check, error }) => ({
        kind: 'health-check-node-port',
        service: check.service,
        value: `TCP/${check.port}`,
        message: `Service ${check.service}: health-check node port TCP/${check.port} cannot be served: ${error}`,
      }));
      this.source.reportRefusals(this.healthFailures, now);
      this.healthFailures = now;
    } catch (err) {
      this.opts.logger?.error({ err }, 'health-check node ports');
    }
  }

  /** Deletes every UDP conntrack entry the current services leave stale (conntrack-cleanup.ts
   * reconcileStale), queued after the cleanups before it. */
  reconcileConntrack(): Promise<void> {
    const conntrack = this.opts.conntrack;
    if (!conntrack) return Promise.resolve();
    this.reconciled = true;
    const ports = this.source.udpPorts();
    return this.queueCleanup(() => reconcileConntrack(conntrack, ports, this.opts.logger));
  }

  /** For a run that ends after its first sync (`agent --once`): waits for the cleanups, and
   * reconciles conntrack if no sync did (a table that already matched commits nothing). */
  async settle(): Promise<void> {
    if (!this.reconciled) await this.reconcileConntrack();
    await this.cleaning;
  }

  /** One cleanup at a time, in commit order. */
  private queueCleanup(work: () => Promise<number>): Promise<void> {
    const run = this.cleaning.then(async () => {
      const n = await work();
      this.conntrackDeleted += n;
      this.opts.metrics?.conntrackDeleted.inc(n);
    });
    this.cleaning = run.catch(() => undefined);
    return run;
  }

  /** Resolves once the conntrack cleanups of every commit so far are done. */
  idle(): Promise<void> {
    return this.cleaning;
  }
}
