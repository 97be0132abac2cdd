/** Applying one component's desired model to its table: the start-up and resync reconcile (read
 * back, plan, commit in one transaction or in bounded batches), incremental commits of what
 * changed, the read-back of chains a commit wrote, and the reports of each. When to do which,
 * and what happens after a failure, is TableSync's. */
import type { Logger } from 'pino';
import { DecodeError, isGenerationMismatch, NetlinkError } from '../netlink/errors';
import { heldBy, markedTable, readOwnTable } from '../nft/ownership';
import type { TableStore } from '../nft/table-store';
import { CommitResult, Transaction } from '../nft/transaction';
import type { Operation, Table } from '../nft/types';
import { discard, stamp } from '../observe/latency-trace';
import { applyDiff, cloneModel, diffRulesets, diffTransaction, isEmptyDiff, RuleSetDiff, withKernelHandles } from '../ruleset/diff';
import { withHandle } from '../nft/canonical';
import { countElements, countRules, emptyModel, modelFromKernel, RulesetModel, sameRules, tableFlagsProblem } from '../ruleset/model';
import { BatchLimits, boundedBatches, DEFAULT_BATCH_LIMITS } from './batches';
import { Component, SyncKind } from './component';
import { plan } from './plan';
import { ChangeScope } from './scope';
import type { AgentObserver, SyncReport, SyncSizes, SyncStages, SyncTotals } from './sync-report';

export interface TableWriterOptions {
  /** Hold the table with NFT_TABLE_F_OWNER|PERSIST while running (src/nft/ownership.ts). */
  holdTable?: boolean;
  /** Where the table lives: the kernel (KernelTableStore), or a FakeTableStore in tests. */
  store: TableStore;
  logger: Logger;
  component: Component;
  totals: SyncTotals;
  observer?: AgentObserver;
  /** The options that shape the table, recorded in its user data (Table.options). A table that
   * records others was made by an agent started differently: it is replaced whole, since the
   * kernel sets a table's user data only when it is created. */
  recordedOptions?: string;
  /** How much kernel work one transaction of a full sync or resync may hold (batches.ts). */
  batchLimits?: BatchLimits;
  /** Called after each batch of a sync in bounded batches is committed (`index` from 1), before
   * the next is sent: the crash test's hook. */
  afterBatch?(index: number, count: number): void;
  /** `agent --once`: a sync plans from the component's desired model itself rather than a copy
   * (at 250k endpoints the copy's element maps are ~22 MB), copied only when a change is about to
   * be applied to it (beforeChange). */
  shareDesired?: boolean;
}

/** What the writer asks of the scheduling around it (TableSync). */
export interface WriteSchedule {
  /** Runs `work` with every pending change taken for it; they are pending again if it throws. */
  handOff<T>(work: (scope: ChangeScope, objects: string[]) => Promise<T>): Promise<T>;
  /** A sync succeeded: the failures in a row are over. */
  succeeded(): void;
  /** A sync failed: it is logged and retried with backoff. */
  failed(kind: SyncKind, err: unknown): void;
  /** A chain read back differs from what was committed: a full resync is due. */
  resyncSoon(): void;
}

/** Why the table read back must be replaced for its recorded options; undefined when they match. */
export function recordProblem(t: Table, recorded: string | undefined): string | undefined {
  if ((t.options ?? '') === (recorded ?? '')) return undefined;
  return `table ${t.family} ${t.name} records the options ${JSON.stringify(t.options ?? '')}, this agent runs with ${JSON.stringify(recorded ?? '')}`;
}

/** A bounded first sync's first batch creates the table, which the kernel refuses when it exists. */
const tableCreatedMeanwhile = (err: unknown): boolean => err instanceof NetlinkError && err.code === 'EEXIST' && err.op === 'NFT_MSG_NEWTABLE';
/** Chains shorter than this are rewritten when their handles are unknown rather than read back
 * first: a rewrite of a few rules costs about what the read-back would. */
const LEARN_HANDLES_MIN_RULES = 32;
/** Whether a diff places or deletes any rule by position. */
const hasRuleEdits = (d: RuleSetDiff): boolean => (d.ruleEdits?.size ?? 0) > 0;
/** How many changed objects an info line names; a debug line names them all. */
const OBJECTS_AT_INFO = 5;

/** Which objects an incremental sync committed, for its log line: the count (`events`), and the
 * first few by name (`objects`, `Kind namespace/name`), or all of them at debug level. */
function changedObjects(objects: string[] | undefined, logger: Logger): { events?: number; objects?: string[] } {
  if (!objects) return {};
  const unique = [...new Set(objects)];
  return { events: objects.length, objects: logger.isLevelEnabled('debug') ? unique : unique.slice(0, OBJECTS_AT_INFO) };
}

export class TableWriter {
  readonly component: Component;
  private readonly logger: Logger;
  private committed: RulesetModel;
  /** What the sync in flight plans from and, once committed, what the kernel holds. */
  private planned?: RulesetModel;
  /** Batches of bounded syncs committed since start: a reconcile interrupted after some made
   * progress (commitPlanned). */
  private batchesCommitted = 0;
  private lastSizes?: SyncSizes;
  private sizesAt = 0;
  /** The component's load at start, in ms by stage, for the first full sync's report. */
  private loadStages?: Record<string, number>;

  constructor(
    private readonly opts: TableWriterOptions,
    private readonly schedule: WriteSchedule,
  ) {
    this.component = opts.component;
    this.logger = opts.logger;
    this.committed = emptyModel(opts.component.table);
  }

  private get table() {
    return this.component.table;
  }

  /** Builds the component's desired model from the snapshot, timing it for the first report. */
  load(snapshot: Parameters<Component['start']>[0]): void {
    const t0 = performance.now();
    this.component.start(snapshot);
    this.loadStages = this.component.loadStages ?? { load: performance.now() - t0 };
  }

  /** The desired model as a sync plans from it: a copy, or the model itself with shareDesired. */
  private plannedModel(): RulesetModel {
    const desired = this.component.desired;
    this.planned = this.opts.shareDesired ? desired : cloneModel(desired);
    return this.planned;
  }

  /** The sync in flight is committed: the kernel holds what it planned from (`withHandles` gives
   * its rules the handles the kernel assigned). */
  private plannedCommitted(withHandles?: (planned: RulesetModel) => RulesetModel): void {
    this.committed = withHandles ? withHandles(this.planned!) : this.planned!;
    this.planned = undefined;
  }

  /** Called before a change is applied to the desired model: a planned or committed model that is
   * the desired model itself (shareDesired) becomes a copy of it first, so that it keeps what the
   * kernel holds or is about to. */
  beforeChange(): void {
    const desired = this.component.desired;
    if (this.planned !== desired && this.committed !== desired) return;
    const copy = cloneModel(desired);
    if (this.planned === desired) this.planned = copy;
    if (this.committed === desired) this.committed = copy;
  }

  /** Commits what changed within `scope` (the events of `objects`) in one transaction, adding the
   * chains it wrote to `unverified`; nothing is sent when nothing changed. */
  async commitChanges(scope: ChangeScope, objects: string[], unverified: Set<string>): Promise<void> {
    const t0 = performance.now();
    stamp('flush');
    const desired = this.component.desired;
    let d = diffRulesets(this.committed, desired, scope);
    if (isEmptyDiff(d)) return discard();
    if (await this.learnHandles(d)) d = diffRulesets(this.committed, desired, scope);
    const tx = diffTransaction(this.committed, desired, d);
    stamp('diffed');
    // Rules placed by position are echoed so the next edit of their chain can place by them too.
    const res = await this.opts.store.commit(tx, { echo: hasRuleEdits(d) }).catch((err: unknown) => {
      // A handle may be stale (another writer rewrote the chain): the retry learns them again.
      for (const name of d.ruleEdits?.keys() ?? []) this.forgetHandles(name);
      throw err;
    });
    applyDiff(this.committed, desired, d, res.ruleHandles);
    this.schedule.succeeded();
    for (const name of d.addChains) unverified.add(name);
    for (const name of d.rewriteChains) unverified.add(name);
    this.recordCommit('incremental', res, t0, d, { objects });
    stamp('committed');
  }

  /** Why the table cannot enforce as it is (missing, dormant), from one small dump of the
   * tables; undefined when it can. */
  async tableProblem(): Promise<string | undefined> {
    const tables = await this.opts.store.listTables(this.table.family);
    const own = tables.find((t) => t.name === this.table.name);
    return own ? tableFlagsProblem(own) : 'missing';
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
   * (another writer, or a kernel that stored something else) triggers a full resync. A chain
   * read back as meant is kept with the kernel's handles, for positional edits. */
  async verifyChains(names: string[]): Promise<void> {
    const differ = await this.adoptKernelRules(names);
    if (differ === undefined) return;
    this.logger.warn({ chain: differ }, 'a chain read back differs from what was committed; scheduling a full resync');
    this.opts.observer?.failed?.('incremental', new Error(`chain ${differ} read back differs`), this.component.name);
    this.schedule.resyncSoon();
  }

  /** Reads back the committed chains among `names`; each equal to what was committed is kept with
   * the rules read (their handles known). Returns the first chain that differs, if any. */
  private async adoptKernelRules(names: string[]): Promise<string | undefined> {
    const meant = names.filter((name) => this.committed.chains.has(name));
    if (meant.length === 0) return undefined;
    stamp('readback');
    const back = await this.opts.store.listChainRules(this.table.family, this.table.name, meant);
    stamp('verified');
    let differ: string | undefined;
    for (const name of meant) {
      const c = this.committed.chains.get(name)!;
      const rules = back.get(name) ?? [];
      // The committed rules (keyed already) take the kernel's handles.
      if (sameRules(rules, c.rules)) this.committed.chains.set(name, { chain: c.chain, rules: c.rules.map((r, i) => withHandle(r, rules[i].handle)) });
      else differ ??= name;
    }
    return differ;
  }

  private forgetHandles(name: string): void {
    const c = this.committed.chains.get(name);
    if (c) this.committed.chains.set(name, { chain: c.chain, rules: c.rules.map((r) => withHandle(r, undefined)) });
  }

  /** A long chain about to be rewritten because its committed rules' handles are unknown (it was
   * written whole by a full sync and not read back since) is read back first, so the diff can
   * edit it in place: one dump of the chain costs less than writing every rule again. True when
   * any handles were learned. */
  private async learnHandles(d: RuleSetDiff): Promise<boolean> {
    const unknown = d.rewriteChains.filter((name) => {
      if (d.ruleEdits?.has(name)) return false;
      const rules = this.committed.chains.get(name)?.rules;
      return !!rules && rules.length >= LEARN_HANDLES_MIN_RULES && rules.some((r) => r.handle === undefined);
    });
    if (unknown.length === 0) return false;
    await this.adoptKernelRules(unknown);
    return unknown.some((name) => this.committed.chains.get(name)!.rules.every((r) => r.handle !== undefined));
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
  private replaceTable(kind: SyncKind, genId?: number, target = this.plannedModel(), fromEmpty?: RuleSetDiff, before = { t0: performance.now(), read: 0, plan: 0 }): Promise<SyncReport> {
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
    return this.schedule.handOff(async () => {
      const { res, batchKernelMs } = await this.commitPlanned(tx, batches, batches ? undefined : genId);
      this.plannedCommitted();
      this.schedule.succeeded();
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
  private async commitPlanned(tx: Transaction | undefined, batches: Transaction[] | undefined, genId: number | undefined, echo = false): Promise<{ res: CommitResult; batchKernelMs?: number[] }> {
    if (!batches) return { res: await this.opts.store.commit(tx!, { echo, genId }) };
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

  /** Reads the table back, plans, and commits the plan in one transaction guarded by the
   * generation it was read at. At start a restart over an unchanged cluster writes nothing and
   * keeps the rules' handles and counters; a table that is missing, unreadable or refuses the
   * difference is replaced whole. */
  async reconcile(kind: 'full' | 'resync'): Promise<SyncReport> {
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
          if (!atStart) this.schedule.failed(kind, err);
          throw err;
        }
        // Bytes nfkube cannot even parse in its own table: replace all of it.
        this.logger.warn({ err }, 'own table unreadable; replacing it');
        return this.replaceTable(kind);
      }
      try {
        // Pending changes are part of the desired model now; they are committed by this sync.
        const target = this.plannedModel();
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
          return await this.schedule.handOff(async () => {
            this.plannedCommitted((m) => withKernelHandles(m, kernel!, p.diff, false));
            this.schedule.succeeded();
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
        return await this.schedule.handOff(async () => {
          // A table this socket holds cannot change under the plan: bounded batches then need no
          // generation guard, which any commit on the node trips while a large plan is made.
          const { res, batchKernelMs } = await this.commitPlanned(tx, batches, batches && held ? undefined : genId, !batches && hasRuleEdits(p.diff));
          // Bounded batches rewrite edited chains whole (batches.ts): their handles are new.
          this.plannedCommitted((m) => withKernelHandles(m, kernel!, p.diff, !batches, res.ruleHandles));
          this.schedule.succeeded();
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
        if (!atStart) this.schedule.failed(kind, err);
        throw err;
      }
    }
  }
}
