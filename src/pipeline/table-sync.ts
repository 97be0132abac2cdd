/** One component's table, kept equal to the component's desired model.
 *
 * - Nothing is written before the source's initial state is complete; then the previous run's
 *   table is read back and brought to the desired state in one transaction (never a moment with
 *   no rules or empty sets; nothing written when nothing changed), or created whole.
 * - Each change is applied to the component at once; an empty change costs nothing more. Changes
 *   that arrive while a commit is in flight are merged and committed together right after it: no
 *   fixed delay, no full recompute.
 * - A failed commit leaves the previous state in force (the kernel applies all or nothing); it is
 *   retried with backoff and, after repeated failures, replaced by a full reconcile.
 * - Chains a commit rewrote are read back and compared as soon as no change is pending (changes
 *   already arrived are committed first); a resync reads the whole table back and repairs any
 *   drift in one transaction, guarded by the generation it was read at. */
import type { Logger } from 'pino';
import { DecodeError, isGenerationMismatch, NetlinkError } from '../netlink/errors';
import { heldBy, markedTable, readOwnTable } from '../nft/ownership';
import type { TableStore } from '../nft/table-store';
import { CommitResult, Transaction } from '../nft/transaction';
import { ClusterChange } from '../k8s/source';
import { applyDiff, cloneModel, diffRulesets, diffTransaction, isEmptyDiff, RuleSetDiff } from '../ruleset/diff';
import { countElements, countRules, emptyModel, modelFromKernel, RulesetModel, sameRules, tableFlagsProblem } from '../ruleset/model';
import { Operation } from '../nft/types';
import { Component, SyncKind } from './component';
import type { Table } from '../nft/types';
import { discard, stamp } from '../observe/latency-trace';
import { BatchLimits, boundedBatches, DEFAULT_BATCH_LIMITS } from './batches';
import { plan } from './plan';
import { ChangeScope } from './scope';

export interface SyncReport {
  kind: SyncKind;
  /** The component whose table this sync wrote (absent when a report sums several tables). */
  component?: string;
  messages: number;
  byType: Map<string, number>;
  durationMs: number;
  /** Resyncs: the difference found, in formatDiff's notation ('' when none). */
  drift?: string;
  /** Resyncs: objects repaired, by kind (table, chain, set, element). */
  repaired?: Record<string, number>;
  /** Full syncs and resyncs: where the time went, in ms, in order (see SyncStages). */
  stages?: SyncStages;
  /** A sync committed in bounded batches (batches.ts): each batch's kernel time (send to final
   * ack), in ms, in commit order; absent for a sync of one transaction. */
  batchKernelMs?: number[];
}

/** A full sync's or resync's stages, in ms of wall time. The first full sync also carries the
 * component's load (`load`, or the parts the component names, e.g. `engine` and `render`). */
export interface SyncStages {
  [stage: string]: number;
  /** Reading the table back (absent: one dump of the tables). */
  read: number;
  /** Cloning the desired model, diffing, building the transaction. */
  plan: number;
  check: number;
  encode: number;
  kernel: number;
}

export interface SyncSizes {
  sets: number;
  elements: number;
  rules: number;
  /** And whatever the component's stats() adds (the policy component: pods, policies). */
  [stat: string]: number;
}

export interface AgentObserver {
  synced?(r: SyncReport): void;
  /** `component`: whose table's sync failed. */
  failed?(kind: SyncKind, err: unknown, component?: string): void;
  queueDepth?(n: number): void;
  sizes?(s: SyncSizes, component: string): void;
}

/** Totals, for tests and logs: kernel messages by kind since start. */
export interface SyncTotals {
  commits: number;
  messages: number;
  events: number;
  emptyEvents: number;
  byType: Map<string, number>;
}

/** Runs one piece of kernel work at a time for every table: a resync's read-back generation
 * must not be bumped by another table's commit in between. */
export class Lane {
  private last: Promise<void> = Promise.resolve();
  /** Pieces of work queued or running. */
  private queued = 0;

  get busy(): Promise<void> {
    return this.last;
  }

  /** Runs fn after the work queued before it. An idle lane starts it on the next tick: after
   * the code that asked (a source delivering every event of one read: they are committed
   * together), before Node's own stream bookkeeping for that read, which a promise hop waits
   * for (~80 µs an event, measured). */
  run<T>(fn: () => Promise<T>): Promise<T> {
    this.queued++;
    const run =
      this.queued === 1
        ? new Promise<T>((resolve, reject) =>
            process.nextTick(() => {
              try {
                resolve(fn());
              } catch (err) {
                reject(err);
              }
            }),
          )
        : this.last.then(fn);
    this.last = run.then(
      () => void this.queued--,
      () => void this.queued--,
    );
    return run;
  }
}

export interface TableSyncOptions {
  /** Hold the table with NFT_TABLE_F_OWNER|PERSIST while running (src/nft/ownership.ts). */
  holdTable?: boolean;
  /** Where the table lives: the kernel (KernelTableStore), or a FakeTableStore in tests. */
  store: TableStore;
  logger: Logger;
  component: Component;
  lane: Lane;
  totals: SyncTotals;
  observer?: AgentObserver;
  /** Told whenever the number of events waiting for this table changes. */
  onQueue?(): void;
  /** The options that shape the table, recorded in its user data (Table.options). A table that
   * records others was made by an agent started differently: it is replaced whole, since the
   * kernel sets a table's user data only when it is created. */
  recordedOptions?: string;
  /** How much kernel work one transaction of a full sync or resync may hold (batches.ts). */
  batchLimits?: BatchLimits;
  /** Called after each batch of a sync in bounded batches is committed (`index` from 1), before
   * the next is sent: the crash test's hook. */
  afterBatch?(index: number, count: number): void;
}

/** Why the table read back must be replaced for its recorded options; undefined when they match. */
export function recordProblem(t: Table, recorded: string | undefined): string | undefined {
  if ((t.options ?? '') === (recorded ?? '')) return undefined;
  return `table ${t.family} ${t.name} records the options ${JSON.stringify(t.options ?? '')}, this agent runs with ${JSON.stringify(recorded ?? '')}`;
}

const MAX_BACKOFF_MS = 30_000;

/** A bounded first sync's first batch creates the table, which the kernel refuses when it exists. */
const tableCreatedMeanwhile = (err: unknown): boolean => err instanceof NetlinkError && err.code === 'EEXIST' && err.op === 'NFT_MSG_NEWTABLE';
/** How many changed objects an info line names; a debug line names them all. */
const OBJECTS_AT_INFO = 5;

/** Which objects an incremental sync committed, for its log line: the count (`events`), and the
 * first few by name (`objects`, `Kind namespace/name`), or all of them at debug level. */
function changedObjects(objects: string[] | undefined, logger: Logger): { events?: number; objects?: string[] } {
  if (!objects) return {};
  const unique = [...new Set(objects)];
  return { events: objects.length, objects: logger.isLevelEnabled('debug') ? unique : unique.slice(0, OBJECTS_AT_INFO) };
}

export class TableSync {
  readonly component: Component;
  private readonly logger: Logger;
  private committed: RulesetModel;
  private pending = new ChangeScope();
  /** The objects whose events are merged into `pending` (`Kind namespace/name`), in order. */
  private pendingObjects: string[] = [];
  /** Chains incremental commits wrote that are not read back yet (flush reads them once no
   * change is pending). */
  private readonly unverified = new Set<string>();
  private flushing = false;
  private failures = 0;
  private retryTimer?: NodeJS.Timeout;
  private started = false;
  private stopped = false;
  /** Batches of bounded syncs committed since start: a reconcile interrupted after some made
   * progress (commitPlanned). */
  private batchesCommitted = 0;
  private lastSizes?: SyncSizes;
  private sizesAt = 0;
  /** The component's load at start, in ms by stage, for the first full sync's report. */
  private loadStages?: Record<string, number>;
  /** Set by the first failed sync after a success (or the start), cleared by the next success. */
  failing?: { since: number; error: unknown };

  constructor(private readonly opts: TableSyncOptions) {
    this.component = opts.component;
    this.logger = opts.logger;
    this.committed = emptyModel(opts.component.table);
  }

  /** Events merged into the pending change. */
  get pendingEvents(): number {
    return this.pendingObjects.length;
  }

  private get table() {
    return this.component.table;
  }

  /** Builds the component's desired model from the snapshot; changes are accepted from now on. */
  load(snapshot: Parameters<Component['start']>[0]): void {
    const t0 = performance.now();
    this.component.start(snapshot);
    this.loadStages = this.component.loadStages ?? { load: performance.now() - t0 };
    this.started = true;
  }

  /** Brings the table to the desired state at start (see reconcile). */
  start(): Promise<SyncReport> {
    return this.opts.lane.run(() => this.reconcile('full'));
  }

  /** Offers one change to the component; true when it changed the desired model. */
  offer(change: ClusterChange): boolean {
    if (!this.started || this.stopped) return false;
    stamp('offered');
    if (!this.component.apply(change, this.pending)) return false;
    stamp('applied');
    this.pendingObjects.push(`${change.kind} ${change.key}`);
    this.opts.onQueue?.();
    this.kick();
    return true;
  }

  /** Offers a change that is not a cluster object's (the node's own state, e.g. a neighbour
   * entry): `edit` changes the component's desired model, recording in the scope what it touched,
   * and returns whether it did. `what` names it in logs. */
  offerEdit(what: string, edit: (scope: ChangeScope) => boolean): boolean {
    if (!this.started || this.stopped) return false;
    if (!edit(this.pending)) return false;
    this.pendingObjects.push(what);
    this.opts.onQueue?.();
    this.kick();
    return true;
  }

  /** Starts committing pending changes unless a commit is already running. */
  private kick(): void {
    if (this.flushing || this.retryTimer || this.stopped) return;
    this.flushing = true;
    void this.opts.lane.run(() => this.flush()).finally(() => {
      this.flushing = false;
    });
  }

  /** Resolves once everything pending at call time is committed (or has failed). */
  async idle(): Promise<void> {
    while (this.flushing || !this.pending.empty) {
      if (!this.flushing && this.retryTimer) return;
      if (!this.flushing) this.kick();
      await this.opts.lane.busy;
    }
  }

  /** Takes every pending change for one commit; when the commit fails they are pending again,
   * to be committed with whatever arrives meanwhile. */
  private async handOff<T>(work: (scope: ChangeScope, objects: string[]) => Promise<T>): Promise<T> {
    const scope = this.pending;
    const objects = this.pendingObjects;
    this.pending = new ChangeScope();
    this.pendingObjects = [];
    this.opts.onQueue?.();
    try {
      return await work(scope, objects);
    } catch (err) {
      this.pending.merge(scope);
      this.pendingObjects = [...objects, ...this.pendingObjects];
      this.opts.onQueue?.();
      throw err;
    }
  }

  /** Commits pending changes until none are left, then reads back the chains those commits
   * wrote. Events already read from the source are committed before the read-back (one turn of
   * the event loop): verifying one commit never delays the next. */
  private async flush(): Promise<void> {
    stamp('lane');
    while (!this.stopped) {
      if (this.pending.empty) {
        if (this.unverified.size === 0) return;
        await new Promise<void>((resolve) => setImmediate(resolve));
        if (!this.pending.empty) continue;
        const names = [...this.unverified];
        this.unverified.clear();
        try {
          await this.verifyChains(names);
        } catch (err) {
          for (const name of names) this.unverified.add(name);
          this.syncFailed('incremental', err);
          return;
        }
        continue;
      }
      try {
        await this.handOff(async (scope, objects) => {
          const t0 = performance.now();
          stamp('flush');
          const desired = this.component.desired;
          const d = diffRulesets(this.committed, desired, scope);
          if (isEmptyDiff(d)) return discard();
          const tx = diffTransaction(this.committed, desired, d);
          stamp('diffed');
          const res = await this.opts.store.commit(tx, { echo: false });
          applyDiff(this.committed, desired, d);
          this.succeeded();
          for (const name of d.addChains) this.unverified.add(name);
          for (const name of d.rewriteChains) this.unverified.add(name);
          this.recordCommit('incremental', res, t0, d, { objects });
          stamp('committed');
        });
      } catch (err) {
        this.syncFailed('incremental', err);
        return;
      }
    }
  }

  private succeeded(): void {
    this.failures = 0;
    this.failing = undefined;
  }

  /** Logs a failed sync and schedules its retry with backoff. */
  private syncFailed(kind: SyncKind, err: unknown): void {
    this.failures++;
    this.opts.observer?.failed?.(kind, err, this.component.name);
    this.failing = { since: this.failing?.since ?? Date.now(), error: err };
    const backoff = Math.min(MAX_BACKOFF_MS, 100 * 2 ** Math.min(this.failures - 1, 10));
    const fields = err instanceof NetlinkError ? { code: err.code, op: err.op, object: err.object, extAck: err.extAck } : {};
    this.logger.error({ err, ...fields, retryInMs: backoff }, `${kind} sync failed; the previous state stays in force`);
    if (this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      // Repeated failures mean the committed model may be wrong: rebuild from the kernel.
      if (this.failures >= 3) void this.resync().catch(() => undefined);
      else this.kick();
    }, backoff);
    this.retryTimer.unref();
  }

  private recordCommit(kind: SyncKind, res: CommitResult, t0: number, d: RuleSetDiff, extra: { objects?: string[]; drift?: string; repaired?: Record<string, number>; stages?: Omit<SyncStages, 'check' | 'encode' | 'kernel'>; batchKernelMs?: number[] } = {}): SyncReport {
    const totals = this.opts.totals;
    totals.commits++;
    totals.messages += res.messages;
    for (const [k, v] of res.byType) totals.byType.set(k, (totals.byType.get(k) ?? 0) + v);
    const report: SyncReport = { kind, component: this.component.name, messages: res.messages, byType: res.byType, durationMs: performance.now() - t0, drift: extra.drift, repaired: extra.repaired };
    if (extra.stages) report.stages = this.stages(extra.stages, res);
    if (extra.batchKernelMs) report.batchKernelMs = extra.batchKernelMs;
    this.opts.observer?.synced?.(report);
    this.opts.observer?.sizes?.(this.sizes(kind), this.component.name);
    const stages = report.stages && Object.fromEntries(Object.entries(report.stages).map(([k, v]) => [k, Math.round(v * 100) / 100]));
    const batches = extra.batchKernelMs && { batches: extra.batchKernelMs.length, slowestBatchMs: Math.round(Math.max(...extra.batchKernelMs) * 100) / 100 };
    this.logger.info({ kind, ...changedObjects(extra.objects, this.logger), messages: res.messages, bytes: res.bytes, durationMs: Math.round(report.durationMs * 100) / 100, stages, ...batches, ...this.lastSizes }, 'sync committed');
    this.afterCommit(d, kind);
    return report;
  }

  /** A reconcile's stages: the component's load first (the first full sync only), then the
   * reconcile's own, then the commit's. */
  private stages(own: Omit<SyncStages, 'check' | 'encode' | 'kernel'>, res: CommitResult | undefined): SyncStages {
    const load = this.loadStages;
    this.loadStages = undefined;
    return { ...load, ...own, check: res?.timings.checkMs ?? 0, encode: res?.timings.encodeMs ?? 0, kernel: res?.timings.kernelMs ?? 0 } as SyncStages;
  }

  private afterCommit(d: RuleSetDiff, kind: SyncKind): void {
    if (!this.component.afterCommit) return;
    this.component.afterCommit(d, kind).catch((err: unknown) => this.logger.error({ err }, `${this.component.name}: after-commit work failed`));
  }

  /** Reads back the chains a commit wrote and compares them with what was meant; a difference
   * (another writer, or a kernel that stored something else) triggers a full resync. */
  private async verifyChains(names: string[]): Promise<void> {
    const meant = names.filter((name) => this.committed.chains.has(name));
    if (meant.length === 0) return;
    stamp('readback');
    const back = await this.opts.store.listChainRules(this.table.family, this.table.name, meant);
    stamp('verified');
    for (const name of meant) {
      if (sameRules(back.get(name) ?? [], this.committed.chains.get(name)!.rules)) continue;
      this.logger.warn({ chain: name }, 'a chain read back differs from what was committed; scheduling a full resync');
      this.opts.observer?.failed?.('incremental', new Error(`chain ${name} read back differs`), this.component.name);
      setImmediate(() => void this.resync().catch(() => undefined));
      return;
    }
  }

  /** Object counts for logs and gauges. Counting walks the whole model, so incremental syncs
   * recount at most once a second: their cost must follow the change, not the cluster. */
  private sizes(kind: SyncKind): SyncSizes {
    const now = Date.now();
    if (!this.lastSizes || kind !== 'incremental' || now - this.sizesAt >= 1000) {
      const m = this.component.desired;
      this.lastSizes = { ...this.component.stats?.(), sets: m.sets.size, elements: countElements(m), rules: countRules(m) };
      this.sizesAt = now;
    }
    return this.lastSizes;
  }

  /** Replaces the whole table in one transaction: add, delete, add again, then every object.
   * The add before the delete makes the delete valid whether or not the table existed.
   * `fromEmpty`, when given, is the diff from an empty table to `target`; `before`, the reconcile's
   * stages so far. */
  private replaceTable(kind: SyncKind, genId?: number, target = cloneModel(this.component.desired), fromEmpty?: RuleSetDiff, before = { t0: performance.now(), read: 0, plan: 0 }): Promise<SyncReport> {
    const t0 = performance.now();
    // Changes arriving while the commit is in flight stay pending against this exact state.
    const table = { ...markedTable(target.table, this.opts.holdTable), ...(this.opts.recordedOptions ? { options: this.opts.recordedOptions } : {}) };
    const empty = emptyModel(target.table);
    const d = fromEmpty ?? diffRulesets(empty, target);
    // A table read back missing is built in bounded batches, the first creating it (refused when
    // it exists: someone made it since the read, which is then read again; no generation guard,
    // which any commit on the node would trip while the sync is planned). One that exists
    // (unreadable, dormant, or refusing an update) is replaced in one transaction: its rules stay
    // in force until the new ones are.
    const batches = fromEmpty && genId !== undefined ? this.bounded(empty, target, d, [{ kind: 'table', verb: 'create', table }]) : undefined;
    const tx = batches ? undefined : diffTransaction(empty, target, d, new Transaction().addTable(table).deleteTable(table).addTable(table));
    const stages = { read: before.read, plan: before.plan + performance.now() - t0 };
    return this.handOff(async () => {
      const { res, batchKernelMs } = await this.commitPlanned(tx, batches, batches ? undefined : genId);
      this.committed = target;
      this.succeeded();
      return this.recordCommit(kind, res, before.t0, d, { stages, batchKernelMs });
    });
  }

  /** The diff as bounded batches when it needs more than one; undefined for one transaction
   * (diffTransaction's, as ever). */
  private bounded(from: RulesetModel, to: RulesetModel, d: RuleSetDiff, prefix?: Operation[]): Transaction[] | undefined {
    const batches = boundedBatches(from, to, d, this.opts.batchLimits ?? DEFAULT_BATCH_LIMITS, prefix);
    return batches && batches.length > 1 ? batches : undefined;
  }

  /** Commits one transaction, or bounded batches in order. Only the first is guarded by `genId`,
   * the read's: the generation counts every table's commits, so a guard on the later ones would
   * refuse them whenever any other writer on the node committed in between (a container runtime,
   * kubelet), while what they were planned from is the read and the batches before them. A batch
   * the kernel refuses ends the sync, and the next reconcile reads back and plans again from what
   * is committed. */
  private async commitPlanned(tx: Transaction | undefined, batches: Transaction[] | undefined, genId: number | undefined): Promise<{ res: CommitResult; batchKernelMs?: number[] }> {
    if (!batches) return { res: await this.opts.store.commit(tx!, { echo: false, genId }) };
    const batchKernelMs: number[] = [];
    const total: CommitResult = { messages: 0, bytes: 0, ruleHandles: new Map(), byType: new Map(), timings: { checkMs: 0, encodeMs: 0, kernelMs: 0 } };
    for (let i = 0; i < batches.length; i++) {
      const res = await this.opts.store.commit(batches[i], { echo: false, genId: i === 0 ? genId : undefined });
      this.batchesCommitted++;
      batchKernelMs.push(res.timings.kernelMs);
      total.messages += res.messages;
      total.bytes += res.bytes;
      for (const [k, v] of res.byType) total.byType.set(k, (total.byType.get(k) ?? 0) + v);
      total.timings.checkMs += res.timings.checkMs;
      total.timings.encodeMs += res.timings.encodeMs;
      total.timings.kernelMs += res.timings.kernelMs;
      this.opts.afterBatch?.(i + 1, batches.length);
    }
    return { res: total, batchKernelMs };
  }

  /** A cheap look at the table alone: present and not dormant. A foreign `flush ruleset` (an
   * nftables.service restart, say) or `delete table` ends all enforcement at once, so the agent
   * checks often rather than wait for the next full resync; when the table is gone or switched
   * off, this runs that resync now and returns its report. */
  async checkTable(): Promise<SyncReport | undefined> {
    if (!this.started || this.stopped) return undefined;
    const tables = await this.opts.store.listTables(this.table.family);
    const own = tables.find((t) => t.name === this.table.name);
    const problem = own ? tableFlagsProblem(own) : 'missing';
    if (!problem) return undefined;
    this.logger.warn({ table: this.table.name, problem }, 'own table missing or switched off; resyncing now');
    return this.resync();
  }

  /** Reads the table back and repairs any difference from the desired state atomically. */
  resync(): Promise<SyncReport> {
    // A timer's resync queued before stop() may reach the lane after it: it writes nothing then.
    return this.opts.lane.run(async () => (this.stopped ? { kind: 'resync', messages: 0, byType: new Map(), durationMs: 0 } : this.reconcile('resync')));
  }

  /** Reads the table back, plans, and commits the plan in one transaction guarded by the
   * generation it was read at. At start a restart over an unchanged cluster writes nothing and
   * keeps the rules' handles and counters; a table that is missing, unreadable or refuses the
   * difference is replaced whole. */
  private async reconcile(kind: 'full' | 'resync'): Promise<SyncReport> {
    const atStart = kind === 'full';
    for (let attempt = 0; ; attempt++) {
      const t0 = performance.now();
      const batchesBefore = this.batchesCommitted;
      let kernel: RulesetModel | undefined;
      let genId: number;
      let flags: string | undefined;
      let held = false;
      let readMs: number;
      try {
        const read = await readOwnTable(this.opts.store, this.table.family, this.table.name, this.opts.holdTable);
        genId = read.genId;
        kernel = read.value ? modelFromKernel(read.value) : undefined;
        flags = read.value ? (tableFlagsProblem(read.value.table) ?? recordProblem(read.value.table, this.opts.recordedOptions)) : undefined;
        held = !!read.value && heldBy(read.value.table, this.opts.store);
        readMs = performance.now() - t0;
      } catch (err) {
        if (!(err instanceof DecodeError)) {
          if (!atStart) this.syncFailed(kind, err);
          throw err;
        }
        // Bytes nfkube cannot even parse in its own table: replace all of it.
        this.logger.warn({ err }, 'own table unreadable; replacing it');
        return this.replaceTable(kind);
      }
      try {
        // Pending changes are part of the desired model now; they are committed by this sync.
        const target = cloneModel(this.component.desired);
        const p = plan(kernel, flags, target, atStart);
        const planMs = performance.now() - t0 - readMs;
        if (p.action === 'replace') {
          if (p.problem) this.logger.warn({ table: this.table.name, drift: p.problem }, 'own table missing, switched off or made with other options; replacing it');
          const r = await this.replaceTable(kind, genId, target, kernel ? undefined : p.diff, { t0, read: readMs, plan: planMs });
          if (p.drift !== undefined) {
            r.drift = p.drift;
            r.repaired = p.repaired;
          }
          return r;
        }
        if (p.action === 'noop') {
          return await this.handOff(async () => {
            this.committed = target;
            this.succeeded();
            const report: SyncReport = { kind, component: this.component.name, messages: 0, byType: new Map(), durationMs: performance.now() - t0 };
            report.stages = this.stages({ read: readMs, plan: planMs }, undefined);
            if (p.drift !== undefined) report.drift = p.drift;
            this.opts.observer?.synced?.(report);
            this.opts.observer?.sizes?.(this.sizes(kind), this.component.name);
            this.logger.info({ kind, messages: 0, ...this.lastSizes }, atStart ? "the previous run's table already matches: nothing written" : 'no drift');
            return report;
          });
        }
        if (atStart) this.logger.info({ changes: p.changes }, "updating the previous run's table");
        else this.logger.warn({ drift: p.drift }, 'kernel state differs from the desired state; repairing');
        const batches = this.bounded(kernel!, target, p.diff);
        const tx = batches ? undefined : diffTransaction(kernel!, target, p.diff);
        const stages = { read: readMs, plan: performance.now() - t0 - readMs };
        return await this.handOff(async () => {
          // A table this socket holds cannot change under the plan: bounded batches then need no
          // generation guard, which any commit on the node trips while a large plan is made.
          const { res, batchKernelMs } = await this.commitPlanned(tx, batches, batches && held ? undefined : genId);
          this.committed = target;
          this.succeeded();
          return this.recordCommit(kind, res, t0, p.diff, { drift: p.drift, repaired: p.repaired, stages, batchKernelMs });
        });
      } catch (err) {
        // Someone committed meanwhile: read again. Batches committed before that count as
        // progress, not as an attempt: the next plan starts from them.
        if (this.batchesCommitted > batchesBefore) attempt = 0;
        if ((isGenerationMismatch(err) || tableCreatedMeanwhile(err)) && attempt < 5) continue;
        if (atStart && err instanceof NetlinkError) {
          // The previous run's objects cannot be brought over (a definition the kernel will not
          // change in place): start from a clean replacement instead.
          this.logger.warn({ err }, "the previous run's table could not be updated in place; replacing it");
          return this.replaceTable(kind);
        }
        if (!atStart) this.syncFailed(kind, err);
        throw err;
      }
    }
  }

  /** Stops retries and scheduled work; what is running finishes. */
  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }
}
