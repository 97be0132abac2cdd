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
 *   drift in one transaction, guarded by the generation it was read at.
 *
 * This class decides when: coalescing, retries with backoff, the deferred read-back. How the
 * table is read, planned and written is TableWriter's (table-writer.ts). */
import type { Logger } from 'pino';
import { NetlinkError } from '../netlink/errors';
import { ClusterChange } from '../k8s/source';
import { stamp } from '../observe/latency-trace';
import { Component, SyncKind } from './component';
import type { Lane } from './lane';
import { ChangeScope } from './scope';
import type { SyncReport } from './sync-report';
import { TableWriter, TableWriterOptions, WriteSchedule } from './table-writer';

export interface TableSyncOptions extends TableWriterOptions {
  lane: Lane;
  /** Told whenever the number of events waiting for this table changes. */
  onQueue?(): void;
}

const MAX_BACKOFF_MS = 30_000;

export class TableSync implements WriteSchedule {
  readonly component: Component;
  private readonly logger: Logger;
  private readonly writer: TableWriter;
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
  /** Set by the first failed sync after a success (or the start), cleared by the next success. */
  failing?: { since: number; error: unknown };

  constructor(private readonly opts: TableSyncOptions) {
    this.component = opts.component;
    this.logger = opts.logger;
    this.writer = new TableWriter(opts, this);
  }

  /** Events merged into the pending change. */
  get pendingEvents(): number {
    return this.pendingObjects.length;
  }

  /** Builds the component's desired model from the snapshot; changes are accepted from now on. */
  load(snapshot: Parameters<Component['start']>[0]): void {
    this.writer.load(snapshot);
    this.started = true;
  }

  /** Brings the table to the desired state at start (see reconcile). */
  start(): Promise<SyncReport> {
    return this.opts.lane.run(() => this.writer.reconcile('full'));
  }

  /** Offers one change to the component; true when it changed the desired model. */
  offer(change: ClusterChange): boolean {
    if (!this.started || this.stopped) return false;
    stamp('offered');
    this.writer.beforeChange();
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
    this.writer.beforeChange();
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
  async handOff<T>(work: (scope: ChangeScope, objects: string[]) => Promise<T>): Promise<T> {
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
          await this.writer.verifyChains(names);
        } catch (err) {
          for (const name of names) this.unverified.add(name);
          this.failed('incremental', err);
          return;
        }
        continue;
      }
      try {
        await this.handOff((scope, objects) => this.writer.commitChanges(scope, objects, this.unverified));
      } catch (err) {
        this.failed('incremental', err);
        return;
      }
    }
  }

  /** A sync succeeded: the failures in a row are over. */
  succeeded(): void {
    this.failures = 0;
    this.failing = undefined;
  }

  /** Logs a failed sync and schedules its retry with backoff. */
  failed(kind: SyncKind, err: unknown): void {
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

  /** A full resync as soon as the lane is free (a read-back found drift). */
  resyncSoon(): void {
    setImmediate(() => void this.resync().catch(() => undefined));
  }

  /** A cheap look at the table alone: present and not dormant. A foreign `flush ruleset` (an
   * nftables.service restart, say) or `delete table` ends all enforcement at once, so the agent
   * checks often rather than wait for the next full resync; when the table is gone or switched
   * off, this runs that resync now and returns its report. */
  async checkTable(): Promise<SyncReport | undefined> {
    if (!this.started || this.stopped) return undefined;
    const problem = await this.writer.tableProblem();
    if (!problem) return undefined;
    this.logger.warn({ table: this.component.table.name, problem }, 'own table missing or switched off; resyncing now');
    return this.resync();
  }

  /** Reads the table back and repairs any difference from the desired state atomically. */
  resync(): Promise<SyncReport> {
    // A timer's resync queued before stop() may reach the lane after it: it writes nothing then.
    return this.opts.lane.run(async () => (this.stopped ? { kind: 'resync', messages: 0, byType: new Map(), durationMs: 0 } : this.writer.reconcile('resync')));
  }

  /** Stops retries and scheduled work; what is running finishes. */
  stop(): void {
    this.stopped = true;
    if (this.retryTimer) clearTimeout(this.retryTimer);
  }
}
