/** The sync loop: cluster changes -> policy engine -> desired table -> minimal atomic transaction.
 *
 * - Nothing is written before the source's initial state is complete; then the previous run's
 *   table is read back and brought to the desired state in one transaction (never a moment with
 *   no rules or empty sets; nothing written when nothing changed), or created whole.
 * - Each change is applied to the engine at once; an empty delta costs nothing more. Changes that
 *   arrive while a commit is in flight are merged and committed together right after it: no
 *   fixed delay, no full recompute.
 * - A failed commit leaves the previous state in force (the kernel applies all or nothing); it is
 *   retried with backoff and, after repeated failures, replaced by a full reconcile.
 * - Chains a commit rewrote are read back at once and compared; every resync period the whole
 *   table is read back and any drift repaired in one transaction, guarded by the generation it
 *   was read at. */
import type { Logger } from 'pino';
import { DecodeError, isGenerationMismatch, NetlinkError } from '../netlink/errors';
import { NetlinkSocket } from '../netlink/socket';
import { listChainRules, listTables, readTable } from '../nft/readback';
import { commit, CommitResult, Transaction } from '../nft/transaction';
import { ClusterChange, ClusterSnapshot, isPolicyChange, PolicyChange } from '../k8s/source';
import { PolicyEngine } from '../policy/engine';
import { isEmptyDelta, PolicyDelta, PolicyError } from '../policy/ir';
import { applyDiff, cloneModel, diffRulesets, diffTransaction, formatDiff, isEmptyDiff, RuleSetDiff } from '../ruleset/diff';
import { countElements, countRules, emptyModel, modelFromKernel, RulesetModel, sameRules, tableFlagsProblem } from '../ruleset/model';
import { ChangeScope, DesiredTable } from './desired';
import { Renderer } from './render';

export interface AgentOptions {
  socket: NetlinkSocket;
  nodeName: string;
  table: string;
  denyAction: 'drop' | 'reject';
  logger: Logger;
  /** Optional observer of what the agent does (metrics). */
  observer?: AgentObserver;
}

export interface SyncReport {
  kind: 'full' | 'incremental' | 'resync';
  messages: number;
  byType: Map<string, number>;
  durationMs: number;
  /** Resyncs: the difference found, in formatDiff's notation ('' when none). */
  drift?: string;
  /** Resyncs: objects repaired, by kind (table, chain, set, element). */
  repaired?: Record<string, number>;
}

export interface AgentObserver {
  synced?(r: SyncReport): void;
  failed?(kind: SyncReport['kind'], err: unknown): void;
  queueDepth?(n: number): void;
  sizes?(s: { pods: number; policies: number; sets: number; elements: number; rules: number }): void;
}

const MAX_BACKOFF_MS = 30_000;

export class Agent {
  private engine: PolicyEngine;
  private readonly renderer: Renderer;
  private desired?: DesiredTable;
  private committed: RulesetModel;
  private pending = new ChangeScope();
  private pendingEvents = 0;
  private busy: Promise<void> = Promise.resolve();
  private flushing = false;
  private failures = 0;
  private retryTimer?: NodeJS.Timeout;
  private stopped = false;
  private readonly reportedErrors = new Set<string>();
  private lastSizes?: { pods: number; policies: number; sets: number; elements: number; rules: number };
  private sizesAt = 0;
  /** Totals, for tests and logs: kernel messages by kind since start. */
  readonly totals = { commits: 0, messages: 0, events: 0, emptyEvents: 0, byType: new Map<string, number>() };

  constructor(private readonly opts: AgentOptions) {
    this.engine = new PolicyEngine(opts.nodeName);
    this.renderer = new Renderer({ table: opts.table, denyAction: opts.denyAction });
    this.committed = emptyModel({ family: 'inet', name: opts.table });
  }

  /** Loads the source's initial state and brings the table to it in one transaction: the
   * previous run's table is read back and only what differs is written. */
  async start(snapshot: ClusterSnapshot): Promise<SyncReport> {
    this.engine.batch(() => {
      for (const ns of snapshot.namespaces.values()) this.engine.upsertNamespace(ns);
      for (const pod of snapshot.pods.values()) this.engine.upsertPod(pod);
      for (const np of snapshot.policies.values()) this.engine.upsertPolicy(np);
    });
    const ir = this.engine.state();
    this.desired = new DesiredTable(this.renderer, ir);
    this.reportPolicyErrors([...ir.policies.values()].flatMap((p) => p.errors));
    return this.exclusive(() => this.reconcile('full'));
  }

  /** Feed one change from the source. */
  onChange(change: ClusterChange): void {
    if (!this.desired || this.stopped || !isPolicyChange(change)) return;
    this.totals.events++;
    let delta: PolicyDelta;
    try {
      delta = this.applyToEngine(change);
    } catch (err) {
      this.opts.logger.error({ err, object: `${change.kind} ${change.key}` }, 'policy engine rejected a change');
      return;
    }
    if (isEmptyDelta(delta)) {
      this.totals.emptyEvents++;
      return;
    }
    this.reportPolicyErrors(delta.policies.upsert.flatMap((p) => p.errors));
    this.desired.apply(delta, this.pending);
    this.pendingEvents++;
    this.opts.observer?.queueDepth?.(this.pendingEvents);
    this.kick();
  }

  private applyToEngine(c: PolicyChange): PolicyDelta {
    switch (c.kind) {
      case 'Pod':
        return c.type === 'upsert' ? this.engine.upsertPod(c.object) : this.engine.deletePod(c.object);
      case 'Namespace':
        return c.type === 'upsert' ? this.engine.upsertNamespace(c.object) : this.engine.deleteNamespace(c.object);
      case 'NetworkPolicy':
        return c.type === 'upsert' ? this.engine.upsertPolicy(c.object) : this.engine.deletePolicy(c.object);
    }
  }

  private reportPolicyErrors(errors: PolicyError[]): void {
    for (const e of errors) {
      const key = `${e.policy} ${e.field} ${e.message}`;
      if (this.reportedErrors.has(key)) continue;
      this.reportedErrors.add(key);
      this.opts.logger.error({ object: `NetworkPolicy ${e.policy}`, field: e.field }, `${e.message}: this rule entry allows nothing; the policy still isolates its pods`);
    }
  }

  /** Starts committing pending changes unless a commit is already running. */
  private kick(): void {
    if (this.flushing || this.retryTimer || this.stopped) return;
    this.flushing = true;
    void this.exclusive(() => this.flush()).finally(() => {
      this.flushing = false;
    });
  }

  /** Resolves once everything pending at call time is committed (or has failed). */
  async idle(): Promise<void> {
    while (this.flushing || !this.pending.empty) {
      if (!this.flushing && this.retryTimer) return;
      if (!this.flushing) this.kick();
      await this.busy;
    }
  }

  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.busy.then(fn);
    this.busy = run.then(
      () => undefined,
      () => undefined,
    );
    return run;
  }

  private async flush(): Promise<void> {
    while (!this.pending.empty && !this.stopped) {
      const scope = this.pending;
      const events = this.pendingEvents;
      this.pending = new ChangeScope();
      this.pendingEvents = 0;
      this.opts.observer?.queueDepth?.(0);
      const t0 = performance.now();
      const d = diffRulesets(this.committed, this.desired!.model, scope);
      if (isEmptyDiff(d)) continue;
      try {
        const res = await commit(this.opts.socket, diffTransaction(this.committed, this.desired!.model, d), { echo: false });
        applyDiff(this.committed, this.desired!.model, d);
        this.failures = 0;
        this.recordCommit('incremental', res, t0, { events });
        await this.verifyChains([...d.addChains, ...d.rewriteChains]);
      } catch (err) {
        this.pending.merge(scope);
        this.pendingEvents += events;
        this.commitFailed('incremental', err);
        return;
      }
    }
  }

  private commitFailed(kind: SyncReport['kind'], err: unknown): void {
    this.failures++;
    this.opts.observer?.failed?.(kind, err);
    const backoff = Math.min(MAX_BACKOFF_MS, 100 * 2 ** Math.min(this.failures - 1, 10));
    const fields = err instanceof NetlinkError ? { code: err.code, op: err.op, object: err.object, extAck: err.extAck } : {};
    this.opts.logger.error({ err, ...fields, retryInMs: backoff }, `${kind} sync failed; the previous state stays in force`);
    if (this.stopped) return;
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      // Repeated failures mean the committed model may be wrong: rebuild from the kernel.
      if (this.failures >= 3) void this.resync().catch(() => undefined);
      else this.kick();
    }, backoff);
    this.retryTimer.unref();
  }

  private recordCommit(kind: SyncReport['kind'], res: CommitResult, t0: number, extra: { events?: number; drift?: string; repaired?: Record<string, number> } = {}): SyncReport {
    this.totals.commits++;
    this.totals.messages += res.messages;
    for (const [k, v] of res.byType) this.totals.byType.set(k, (this.totals.byType.get(k) ?? 0) + v);
    const report: SyncReport = { kind, messages: res.messages, byType: res.byType, durationMs: performance.now() - t0, drift: extra.drift, repaired: extra.repaired };
    this.opts.observer?.synced?.(report);
    this.opts.observer?.sizes?.(this.sizes(kind));
    this.opts.logger.info({ kind, events: extra.events, messages: res.messages, bytes: res.bytes, durationMs: Math.round(report.durationMs * 100) / 100, ...this.lastSizes }, 'sync committed');
    return report;
  }

  /** Reads back the chains a commit wrote and compares them with what was meant; a difference
   * (another writer, or a kernel that stored something else) triggers a full resync. */
  private async verifyChains(names: string[]): Promise<void> {
    const meant = names.filter((name) => this.committed.chains.has(name));
    if (meant.length === 0) return;
    const back = await listChainRules(this.opts.socket, 'inet', this.opts.table, meant);
    for (const name of meant) {
      if (sameRules(back.get(name) ?? [], this.committed.chains.get(name)!.rules)) continue;
      this.opts.logger.warn({ chain: name }, 'a chain read back differs from what was committed; scheduling a full resync');
      this.opts.observer?.failed?.('incremental', new Error(`chain ${name} read back differs`));
      setImmediate(() => void this.resync().catch(() => undefined));
      return;
    }
  }

  /** Object counts for logs and gauges. Counting walks the whole model, so incremental syncs
   * recount at most once a second: their cost must follow the change, not the cluster. */
  private sizes(kind: SyncReport['kind']): NonNullable<Agent['lastSizes']> {
    const now = Date.now();
    if (!this.lastSizes || kind !== 'incremental' || now - this.sizesAt >= 1000) {
      const m = this.desired!.model;
      const stats = this.engine.stats();
      this.lastSizes = { pods: stats.targets ?? 0, policies: stats.policies ?? 0, sets: m.sets.size, elements: countElements(m), rules: countRules(m) };
      this.sizesAt = now;
    }
    return this.lastSizes;
  }

  /** Replaces the whole table in one transaction: add, delete, add again, then every object.
   * The add before the delete makes the delete valid whether or not the table existed. */
  private async replaceTable(kind: SyncReport['kind'], genId?: number): Promise<SyncReport> {
    const t0 = performance.now();
    // Changes arriving while the commit is in flight stay pending against this exact state.
    const target = cloneModel(this.desired!.model);
    const tx = new Transaction().addTable(target.table).deleteTable(target.table).addTable(target.table);
    const empty = emptyModel(target.table);
    diffTransaction(empty, target, diffRulesets(empty, target), tx);
    const pendingAtStart = this.pending;
    this.pending = new ChangeScope();
    this.pendingEvents = 0;
    try {
      const res = await commit(this.opts.socket, tx, { echo: false, genId });
      this.committed = target;
      this.failures = 0;
      return this.recordCommit(kind, res, t0);
    } catch (err) {
      this.pending.merge(pendingAtStart);
      throw err;
    }
  }

  /** A cheap look at the table alone: present and not dormant. A foreign `flush ruleset` (an
   * nftables.service restart, say) or `delete table` ends all enforcement at once, so callers
   * check often rather than wait for the next full resync; when the table is gone or switched
   * off, this runs that resync now and returns its report. */
  async checkTable(): Promise<SyncReport | undefined> {
    if (!this.desired || this.stopped) return undefined;
    const tables = await listTables(this.opts.socket, 'inet');
    const own = tables.find((t) => t.name === this.opts.table);
    const problem = own ? tableFlagsProblem(own) : 'missing';
    if (!problem) return undefined;
    this.opts.logger.warn({ table: this.opts.table, problem }, 'own table missing or switched off; resyncing now');
    return this.resync();
  }

  /** Reads the table back and repairs any difference from the desired state atomically.
   * Returns the drift found ('' when none). */
  async resync(): Promise<SyncReport> {
    return this.exclusive(() => this.reconcile('resync'));
  }

  /** Reads the table back and commits the difference from the desired state in one transaction,
   * guarded by the generation it was read at. At start ('full') the difference is what changed
   * since the previous run, not drift: a restart over an unchanged cluster writes nothing and
   * keeps the rules' handles and counters; a table that is missing, unreadable or refuses the
   * difference is replaced whole. */
  private async reconcile(kind: 'full' | 'resync'): Promise<SyncReport> {
    const atStart = kind === 'full';
    for (let attempt = 0; ; attempt++) {
      const t0 = performance.now();
      let kernel: RulesetModel | undefined;
      let genId: number;
      let flags: string | undefined;
      try {
        const read = await readTable(this.opts.socket, 'inet', this.opts.table);
        genId = read.genId;
        kernel = read.value ? modelFromKernel(read.value) : undefined;
        flags = read.value ? tableFlagsProblem(read.value.table) : undefined;
      } catch (err) {
        if (!(err instanceof DecodeError)) {
          if (!atStart) this.commitFailed(kind, err);
          throw err;
        }
        // Bytes nfkube cannot even parse in its own table: replace all of it.
        this.opts.logger.warn({ err }, 'own table unreadable; replacing it');
        return this.replaceTable(kind);
      }
      try {
        if (!kernel || flags) {
          if (atStart && !kernel) return await this.replaceTable(kind, genId);
          const drift = flags ?? `table inet ${this.opts.table} missing`;
          this.opts.logger.warn({ table: this.opts.table, drift }, 'own table missing or switched off; replacing it');
          const r = await this.replaceTable(kind, genId);
          if (atStart) return r;
          r.drift = drift;
          r.repaired = { table: 1 };
          return r;
        }
        // Pending changes are part of the desired model now; they are committed by this repair.
        const target = cloneModel(this.desired!.model);
        const pendingAtStart = this.pending;
        this.pending = new ChangeScope();
        this.pendingEvents = 0;
        const d: RuleSetDiff = diffRulesets(kernel, target);
        if (isEmptyDiff(d)) {
          this.committed = target;
          this.failures = 0;
          const report: SyncReport = { kind, messages: 0, byType: new Map(), durationMs: performance.now() - t0 };
          if (!atStart) report.drift = '';
          this.opts.observer?.synced?.(report);
          this.opts.observer?.sizes?.(this.sizes(kind));
          this.opts.logger.info({ kind, messages: 0, ...this.lastSizes }, atStart ? "the previous run's table already matches: nothing written" : 'no drift');
          return report;
        }
        const drift = atStart ? undefined : formatDiff(kernel, target, d);
        if (atStart) this.opts.logger.info({ changes: repairedCounts(d) }, "updating the previous run's table");
        else this.opts.logger.warn({ drift }, 'kernel state differs from the desired state; repairing');
        let res: CommitResult;
        try {
          res = await commit(this.opts.socket, diffTransaction(kernel, target, d), { echo: false, genId });
        } catch (err) {
          this.pending.merge(pendingAtStart);
          throw err;
        }
        this.committed = target;
        this.failures = 0;
        return this.recordCommit(kind, res, t0, atStart ? {} : { drift, repaired: repairedCounts(d) });
      } catch (err) {
        if (isGenerationMismatch(err) && attempt < 5) continue; // someone committed meanwhile: read again
        if (atStart && err instanceof NetlinkError) {
          // The previous run's objects cannot be brought over (a definition the kernel will not
          // change in place): start from a clean replacement instead.
          this.opts.logger.warn({ err }, "the previous run's table could not be updated in place; replacing it");
          return this.replaceTable(kind);
        }
        if (!atStart) this.commitFailed(kind, err);
        throw err;
      }
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
    await this.busy;
  }

  /** The desired table (for render, verify and tests). */
  get desiredModel(): RulesetModel | undefined {
    return this.desired?.model;
  }
}

function repairedCounts(d: RuleSetDiff): Record<string, number> {
  let elements = 0;
  for (const e of d.addElements.values()) elements += e.length;
  for (const e of d.removeElements.values()) elements += e.length;
  const counts: Record<string, number> = {
    chain: d.addChains.length + d.removeChains.length + d.rewriteChains.length,
    set: d.addSets.length + d.removeSets.length + d.replaceSets.length,
    element: elements,
  };
  for (const k of Object.keys(counts)) if (counts[k] === 0) delete counts[k];
  return counts;
}
