/** The agent's Prometheus metrics, on a private registry so an embedding program's own
 * prom-client registry is never polluted. The agent reports through the record/set methods;
 * per-policy packet and byte counters are read from the kernel only when scraped. Every name is
 * listed in the README's "Metrics" section. */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { buildInfo } from '../build-info';

/** A full sync (start, table gone), an event's incremental one, or the periodic resync. */
export type SyncKind = 'full' | 'incremental' | 'resync';

/** One kernel counter attached to a policy's accept rule or to a pod's default deny. */
export interface PolicyCounterRow {
  /** `<namespace>/<name>` of the policy whose accept rules counted; absent for a default deny. */
  policy?: string;
  /** The namespace of the policy, or of the pod a default deny isolates. */
  namespace?: string;
  /** The pod a default deny isolates (its name); absent for a policy's accepts. */
  pod?: string;
  /** A ClusterNetworkPolicy rule (`ingress[2]`) of `policy` (`clusternetworkpolicy/NAME`), which
   * counts what its own action did: accept, drop or reject, or pass. */
  rule?: string;
  direction: 'ingress' | 'egress';
  verdict: 'accept' | 'drop' | 'reject' | 'pass';
  packets: number | bigint;
  bytes: number | bigint;
}

/** Reads the per-policy counters from the kernel; called once per scrape. */
export type PolicyCounterReader = () => Promise<PolicyCounterRow[]>;

export interface AgentMetricsOptions {
  /** Also export prom-client's process metrics (CPU, memory, event loop lag). Default true. */
  processMetrics?: boolean;
  /** Sync duration histogram buckets, in seconds. */
  syncBuckets?: number[];
  /** What nfkube_build_info reports; default: the running build. */
  build?: { version: string; revision: string };
}

const POLICY_LABELS = ['policy', 'direction', 'verdict', 'namespace', 'pod', 'rule'] as const;

export class AgentMetrics {
  readonly registry = new Registry();

  private readonly syncDuration: Histogram<'kind'>;
  private readonly kernelMessages: Counter<'kind'>;
  private readonly kernelBatches: Counter<'kind'>;
  private readonly transactionFailures: Counter<'errno'>;
  private readonly driftRepairs: Counter<'kind'>;
  private readonly objects: Record<'pods' | 'policies' | 'sets' | 'elements' | 'queueDepth' | 'failedClosed', Gauge>;
  private readonly lastSuccessfulSync: Gauge;
  private readonly policyCounterReadFailures: Counter;
  private readonly programmingDuration: Histogram<'kind'>;
  private readonly eventToCommit: Histogram<'kind'>;
  private policyCounterReader?: PolicyCounterReader;
  private onPolicyCounterError?: (err: unknown) => void;
  /** The kernel read shared by the packet and byte metrics of one scrape. */
  private pendingRead?: Promise<PolicyCounterRow[] | undefined>;
  private lastSyncSeconds?: number;

  constructor(options: AgentMetricsOptions = {}) {
    const registers = [this.registry];
    this.syncDuration = new Histogram({
      name: 'nfkube_sync_duration_seconds',
      help: 'Time from starting a sync to the kernel committing it, by kind (full, incremental, resync).',
      labelNames: ['kind'],
      buckets: options.syncBuckets ?? [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    this.kernelMessages = new Counter({
      name: 'nfkube_kernel_messages_total',
      help: 'Netlink messages sent to the kernel, by message kind (e.g. NFT_MSG_NEWSETELEM).',
      labelNames: ['kind'],
      registers,
    });
    this.kernelBatches = new Counter({
      name: 'nfkube_kernel_batches_total',
      help: 'Netlink batches (one sendmsg each) sent to the kernel, by subsystem (nftables, ipset).',
      labelNames: ['kind'],
      registers,
    });
    this.transactionFailures = new Counter({
      name: 'nfkube_transaction_failures_total',
      help: 'Kernel transactions refused, by errno name (e.g. EEXIST, ERESTART).',
      labelNames: ['errno'],
      registers,
    });
    this.driftRepairs = new Counter({
      name: 'nfkube_drift_repairs_total',
      help: 'Kernel objects found different from the intended state and repaired, by object kind.',
      labelNames: ['kind'],
      registers,
    });
    const gauge = (name: string, help: string) => new Gauge({ name, help, registers });
    this.objects = {
      pods: gauge('nfkube_pods', 'Pods on this node that the agent enforces policy for.'),
      policies: gauge('nfkube_policies', 'NetworkPolicies known to the agent.'),
      sets: gauge('nfkube_sets', 'nftables sets in the agent\'s table.'),
      elements: gauge('nfkube_set_elements', 'Elements across all sets in the agent\'s table.'),
      queueDepth: gauge('nfkube_event_queue_depth', 'Kubernetes events waiting to be applied.'),
      failedClosed: gauge('nfkube_objects_failed_closed', 'Objects enforced failing closed because they cannot be read or rendered: each isolates what it could select and allows nothing where it is broken.'),
    };
    this.lastSuccessfulSync = gauge(
      'nfkube_last_successful_sync_timestamp_seconds',
      'Unix time of the last sync the kernel committed.',
    );
    const metrics = this;
    this.policyCounterReadFailures = new Counter({
      name: 'nfkube_policy_counter_read_failures_total',
      help: 'Scrapes where reading the per-policy counters from the kernel failed.',
      registers,
      async collect() {
        await metrics.readPolicyCounters(); // so this scrape's failure is already counted
      },
    });
    new Counter({
      name: 'nfkube_policy_packets_total',
      help: 'Packets counted by the kernel on each policy\'s accept rules, each pod\'s default deny and each ClusterNetworkPolicy rule.',
      labelNames: POLICY_LABELS,
      registers,
      async collect() {
        await metrics.fillPolicyCounter(this, 'packets');
      },
    });
    new Counter({
      name: 'nfkube_policy_bytes_total',
      help: 'Bytes counted by the kernel on each policy\'s accept rules, each pod\'s default deny and each ClusterNetworkPolicy rule.',
      labelNames: POLICY_LABELS,
      registers,
      async collect() {
        await metrics.fillPolicyCounter(this, 'bytes');
      },
    });
    const build = options.build ?? buildInfo();
    new Gauge({
      name: 'nfkube_build_info',
      help: 'Always 1; the labels say which nfkube build runs, from which commit, on which Node.js.',
      labelNames: ['version', 'revision', 'node_version'],
      registers,
    }).set({ version: build.version, revision: build.revision, node_version: process.version }, 1);
    this.programmingDuration = new Histogram({
      name: 'nfkube_network_programming_duration_seconds',
      help: "Time from an object's last change, as the API server recorded it (metadata.managedFields), to the kernel committing the rules it implies, by object kind.",
      labelNames: ['kind'],
      // The API records times to the second: finer buckets would only measure clock rounding.
      buckets: [0.25, 0.5, 1, 2, 3, 4, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180, 300],
      registers,
    });
    this.eventToCommit = new Histogram({
      name: 'nfkube_event_to_commit_duration_seconds',
      help: 'Time from a change event reaching the agent to the kernel committing it, by object kind.',
      labelNames: ['kind'],
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    });
    // Standard names (process_*, nodejs_*) so stock dashboards work unchanged.
    if (options.processMetrics ?? true) collectDefaultMetrics({ register: this.registry });
  }

  observeSync(kind: SyncKind, seconds: number): void {
    this.syncDuration.observe({ kind }, seconds);
  }

  /** One batch sent as one sendmsg: counts the batch and each message in it by name. */
  recordBatch(kind: string, messageKinds: Iterable<string>): void {
    this.kernelBatches.inc({ kind });
    const counts = new Map<string, number>();
    for (const m of messageKinds) counts.set(m, (counts.get(m) ?? 0) + 1);
    for (const [m, n] of counts) this.kernelMessages.inc({ kind: m }, n);
  }

  /** One change committed to the kernel: seconds since its last change in the API (when known)
   * and since its event arrived. */
  observeProgramming(kind: string, sinceChange: number | undefined, sinceArrival: number): void {
    if (sinceChange !== undefined) this.programmingDuration.observe({ kind }, Math.max(0, sinceChange));
    this.eventToCommit.observe({ kind }, sinceArrival);
  }

  recordTransactionFailure(errno: string): void {
    this.transactionFailures.inc({ errno });
  }

  recordDriftRepairs(kind: string, count = 1): void {
    this.driftRepairs.inc({ kind }, count);
  }

  setObjectCounts(counts: Partial<Record<'pods' | 'policies' | 'sets' | 'elements' | 'failedClosed', number>>): void {
    for (const [key, value] of Object.entries(counts) as [keyof typeof counts, number | undefined][]) {
      if (value !== undefined) this.objects[key].set(value);
    }
  }

  setEventQueueDepth(depth: number): void {
    this.objects.queueDepth.set(depth);
  }

  /** Marks a committed sync; `at` is a Date or milliseconds since the epoch (default now). */
  recordSuccessfulSync(at: Date | number = Date.now()): void {
    const ms = typeof at === 'number' ? at : at.getTime();
    this.lastSyncSeconds = ms / 1000;
    this.lastSuccessfulSync.set(this.lastSyncSeconds);
  }

  /** Milliseconds since the epoch of the last committed sync, if any (for /healthz). */
  lastSuccessfulSyncMs(): number | undefined {
    return this.lastSyncSeconds === undefined ? undefined : this.lastSyncSeconds * 1000;
  }

  /** Installs the kernel read used at scrape time; without one the policy counters are empty.
   * A failed read leaves them empty for that scrape, counts a failure and calls `onError`. */
  setPolicyCounterReader(reader: PolicyCounterReader | undefined, onError?: (err: unknown) => void): void {
    this.policyCounterReader = reader;
    this.onPolicyCounterError = onError;
  }

  /** The exposition text and its content type, as served on /metrics. */
  async expose(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private async fillPolicyCounter(counter: Counter<(typeof POLICY_LABELS)[number]>, field: 'packets' | 'bytes'): Promise<void> {
    counter.reset(); // rules of deleted policies must disappear, not linger at their last value
    const rows = await this.readPolicyCounters();
    for (const row of rows ?? []) {
      // A label a row does not have is left out (the same as empty to Prometheus).
      const labels = Object.fromEntries(POLICY_LABELS.map((l) => [l, row[l]]).filter(([, v]) => v));
      counter.inc(labels, Number(row[field]));
    }
  }

  private readPolicyCounters(): Promise<PolicyCounterRow[] | undefined> {
    const reader = this.policyCounterReader;
    if (!reader) return Promise.resolve(undefined);
    // Both counters collect concurrently within one scrape; they share one kernel read.
    this.pendingRead ??= Promise.resolve()
      .then(reader)
      .catch((err: unknown) => {
        this.policyCounterReadFailures.inc();
        this.onPolicyCounterError?.(err);
        return undefined;
      })
      .finally(() => {
        this.pendingRead = undefined;
      });
    return this.pendingRead;
  }
}
