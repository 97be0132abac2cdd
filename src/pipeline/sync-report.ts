/** What a table's syncs report: to the observer (metrics), in totals (tests, logs). */
import type { SyncKind } from './component';

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
