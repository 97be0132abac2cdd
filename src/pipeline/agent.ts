/** The agent: hosts components (policy now, proxy next), each owning one table, and schedules
 * their syncs. Components only produce desired state; the agent, through one TableSync per
 * table, reads back, plans, commits, coalesces, retries, resyncs periodically and checks that
 * each table is still there.
 *
 * One change that touches two components is committed as one transaction per table. Kernel work
 * for all tables runs one piece at a time (a resync's read generation must not be bumped by
 * another table's commit in between). */
import type { Logger } from 'pino';
import { NetlinkSocket } from '../netlink/socket';
import { KernelTableStore } from '../nft/kernel-store';
import type { TableStore } from '../nft/table-store';
import { ClusterChange, ClusterSnapshot } from '../k8s/source';
import { RulesetModel } from '../ruleset/model';
import { BatchLimits } from './batches';
import { Component, tableText } from './component';
import { Lane } from './lane';
import type { AgentObserver, SyncReport, SyncTotals } from './sync-report';
import { TableSync } from './table-sync';
import { ChangeScope } from './scope';

export type { AgentObserver, SyncReport, SyncSizes, SyncTotals } from './sync-report';

/** How often `nfkube agent` checks that each table is still there and awake: a foreign `flush
 * ruleset` ends all enforcement at once, so waiting for the next full resync is too long. */
export const DEFAULT_TABLE_CHECK_MS = 10_000;

export interface AgentOptions {
  /** The kernel's tables, through this socket; or, with `store`, wherever that keeps them. */
  socket?: NetlinkSocket;
  /** Where the tables live when not the kernel behind `socket` (a FakeTableStore in tests). */
  store?: TableStore;
  logger: Logger;
  /** At least one; each owns a distinct table. */
  components: Component[];
  /** Optional observer of what the agent does (metrics). */
  observer?: AgentObserver;
  /** Every this often each table is read back whole and any drift repaired; none when absent. */
  resyncPeriodMs?: number;
  /** Every this often each table is checked (one small dump) to be present and awake, and
   * resynced at once when not; none when absent. */
  tableCheckMs?: number;
  /** By component name: the options that shape its table, recorded in it (TableSyncOptions). */
  recordedOptions?: Record<string, string>;
  /** Hold each table with NFT_TABLE_F_OWNER|PERSIST while running (src/nft/ownership.ts). */
  holdTable?: boolean;
  /** How much kernel work one transaction of a full sync or resync may hold (batches.ts). */
  batchLimits?: BatchLimits;
  /** Called after each batch of a bounded sync is committed: the crash test's hook. */
  afterBatch?(index: number, count: number): void;
  /** `agent --once`: syncs plan from the desired models without copying them (TableWriterOptions). */
  once?: boolean;
}

export class Agent {
  private readonly syncs: TableSync[];
  private readonly lane = new Lane();
  private readonly timers: NodeJS.Timeout[] = [];
  private loaded = false;
  private stopped = false;
  /** Totals, for tests and logs: kernel messages by kind since start. */
  readonly totals: SyncTotals = { commits: 0, messages: 0, events: 0, emptyEvents: 0, byType: new Map() };

  constructor(private readonly opts: AgentOptions) {
    if (opts.components.length === 0) throw new Error('agent: no components');
    const seen = new Set<string>();
    for (const c of opts.components) {
      const t = tableText(c.table);
      if (seen.has(t)) throw new Error(`agent: two components own table ${t}`);
      seen.add(t);
    }
    const store = opts.store ?? (opts.socket && new KernelTableStore(opts.socket));
    if (!store) throw new Error('agent: neither a socket nor a table store');
    this.syncs = opts.components.map(
      (component) =>
        new TableSync({
          store,
          logger: opts.components.length > 1 ? opts.logger.child({ owner: component.name }) : opts.logger,
          component,
          lane: this.lane,
          holdTable: opts.holdTable,
          batchLimits: opts.batchLimits,
          afterBatch: opts.afterBatch,
          shareDesired: opts.once,
          totals: this.totals,
          observer: opts.observer,
          onQueue: () => opts.observer?.queueDepth?.(this.queueDepth()),
          recordedOptions: opts.recordedOptions?.[component.name],
        }),
    );
  }

  /** Loads the source's initial state into every component and brings each table to it in one
   * transaction: the previous run's table is read back and only what differs is written. Then
   * the periodic resync and table check start. */
  async start(snapshot: ClusterSnapshot): Promise<SyncReport> {
    for (const s of this.syncs) s.load(snapshot);
    this.loaded = true;
    const reports: SyncReport[] = [];
    for (const s of this.syncs) reports.push(await s.start());
    if (!this.stopped) this.schedule();
    return combine(reports);
  }

  private schedule(): void {
    const { resyncPeriodMs, tableCheckMs, logger } = this.opts;
    if (resyncPeriodMs) this.timers.push(setInterval(() => void this.resync().catch((err) => logger.error({ err }, 'resync failed')), resyncPeriodMs));
    if (tableCheckMs) this.timers.push(setInterval(() => void this.checkTable().catch((err) => logger.error({ err }, 'table check failed')), tableCheckMs));
  }

  /** Feed one change from the source; every component is offered it. */
  onChange(change: ClusterChange): void {
    if (!this.loaded || this.stopped) return;
    this.totals.events++;
    let used = false;
    for (const s of this.syncs) if (s.offer(change)) used = true;
    if (!used) this.totals.emptyEvents++;
  }

  /** Feed one change of the node's own state to the component named `component` (see
   * TableSync.offerEdit); returns whether it changed that component's desired model. */
  onNodeChange(component: string, what: string, edit: (scope: ChangeScope) => boolean): boolean {
    if (!this.loaded || this.stopped) return false;
    const sync = this.syncs.find((s) => s.component.name === component);
    return sync?.offerEdit(what, edit) ?? false;
  }

  private queueDepth(): number {
    let n = 0;
    for (const s of this.syncs) n += s.pendingEvents;
    return n;
  }

  /** Resolves once everything pending at call time is committed (or has failed). */
  async idle(): Promise<void> {
    await Promise.all(this.syncs.map((s) => s.idle()));
  }

  /** Reads every table back and repairs any difference from the desired state atomically.
   * The report's drift is the difference found ('' when none). */
  async resync(): Promise<SyncReport> {
    const reports: SyncReport[] = [];
    for (const s of this.syncs) reports.push(await s.resync());
    return combine(reports);
  }

  /** A cheap look at every table alone: present and not dormant; a table that is not is resynced
   * now. Returns undefined when every table is healthy, else what was repaired. */
  async checkTable(): Promise<SyncReport | undefined> {
    const reports: SyncReport[] = [];
    for (const s of this.syncs) {
      const r = await s.checkTable();
      if (r) reports.push(r);
    }
    return reports.length ? combine(reports) : undefined;
  }

  /** The table whose syncs have been failing the longest without a success in between, since
   * when, and the last error; undefined while every table's last sync succeeded. */
  failing(): { table: string; since: number; error: unknown } | undefined {
    let worst: ReturnType<Agent['failing']>;
    this.syncs.forEach((s, i) => {
      if (s.failing && (!worst || s.failing.since < worst.since)) worst = { table: tableText(this.opts.components[i].table), ...s.failing };
    });
    return worst;
  }

  /** Why the agent is not healthy: a table whose syncs have failed for `limitMs` or longer
   * without a success in between; undefined otherwise. */
  unhealthy(limitMs: number, now = Date.now()): string | undefined {
    const f = this.failing();
    const forMs = f ? now - f.since : 0;
    if (!f || forMs < limitMs) return undefined;
    return `syncs of table ${f.table} failing for ${(forMs / 1000).toFixed(1)}s (limit ${(limitMs / 1000).toFixed(1)}s): ${f.error instanceof Error ? f.error.message : String(f.error)}`;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    this.timers.length = 0;
    for (const s of this.syncs) s.stop();
    await this.lane.busy;
  }

  /** The first component's desired table (for render, verify and tests); undefined before start. */
  get desiredModel(): RulesetModel | undefined {
    return this.loaded ? this.opts.components[0].desired : undefined;
  }
}

/** One report for several tables' syncs of the same kind; a single report unchanged. */
function combine(reports: SyncReport[]): SyncReport {
  if (reports.length === 1) return reports[0];
  const out: SyncReport = { kind: reports[0].kind, messages: 0, byType: new Map(), durationMs: 0 };
  const drift: string[] = [];
  for (const r of reports) {
    out.messages += r.messages;
    out.durationMs += r.durationMs;
    for (const [k, v] of r.byType) out.byType.set(k, (out.byType.get(k) ?? 0) + v);
    if (r.drift !== undefined) {
      out.drift ??= '';
      if (r.drift) drift.push(r.drift);
    }
    for (const [k, v] of Object.entries(r.repaired ?? {})) (out.repaired ??= {})[k] = (out.repaired[k] ?? 0) + v;
  }
  if (out.drift !== undefined) out.drift = drift.join('\n');
  return out;
}
