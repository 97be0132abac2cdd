/** IPAM's Prometheus metrics, on their own registry (served next to the policy agent's). Gauges of
 * blocks and addresses are read from IpamService's state when scraped. */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';

export interface IpamUsage {
  pool: string;
  family: string;
  blocks: number;
  inUse: number;
  free: number;
}

export class IpamMetrics {
  readonly registry = new Registry();
  readonly allocationDuration: Histogram<'result'>;
  readonly blockClaims: Counter<'result'>;
  readonly conflicts: Counter<'kind'>;
  readonly retries: Counter<'reason'>;
  readonly gcReleases: Counter<'reason'>;
  readonly apiRequests: Counter<'verb' | 'resource'>;
  private usage: () => IpamUsage[] = () => [];

  constructor() {
    const registers = [this.registry];
    this.allocationDuration = new Histogram({
      name: 'nfkube_ipam_allocation_duration_seconds',
      help: 'Time from an ADD reaching the agent to its answer (address recorded durably), by result.',
      labelNames: ['result'],
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    this.blockClaims = new Counter({ name: 'nfkube_ipam_block_claims_total', help: 'Block claims (create of an IPBlock), by result: won or lost.', labelNames: ['result'], registers });
    this.conflicts = new Counter({ name: 'nfkube_ipam_conflicts_total', help: 'Writes refused with 409, by kind (block, claim, update).', labelNames: ['kind'], registers });
    this.retries = new Counter({ name: 'nfkube_ipam_retries_total', help: 'API writes retried after an unknown outcome was read back, by reason.', labelNames: ['reason'], registers });
    this.gcReleases = new Counter({ name: 'nfkube_ipam_gc_releases_total', help: 'Addresses or blocks released by garbage collection, by reason (pod, cni-gc, node, orphan-claim).', labelNames: ['reason'], registers });
    this.apiRequests = new Counter({ name: 'nfkube_ipam_api_requests_total', help: 'Requests IPAM made to the API server, by verb and resource.', labelNames: ['verb', 'resource'], registers });
    const metrics = this;
    const gauge = (name: string, help: string, pick: (u: IpamUsage) => number) =>
      new Gauge({
        name,
        help,
        labelNames: ['pool', 'family'],
        registers,
        collect() {
          this.reset();
          for (const u of metrics.usage()) this.set({ pool: u.pool, family: u.family }, pick(u));
        },
      });
    gauge('nfkube_ipam_blocks_owned', 'Blocks this node holds, per pool and family.', (u) => u.blocks);
    gauge('nfkube_ipam_addresses_in_use', 'Addresses allocated on this node, per pool and family.', (u) => u.inUse);
    gauge('nfkube_ipam_addresses_free', 'Addresses still free in the blocks this node holds, per pool and family.', (u) => u.free);
  }

  setUsageReader(read: () => IpamUsage[]): void {
    this.usage = read;
  }

  async expose(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}
