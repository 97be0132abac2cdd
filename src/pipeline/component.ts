/** What the pipeline asks of a component (policy now, proxy next): a producer of desired kernel
 * state for the one table it owns. Everything else (read-back, planning, committing, coalescing,
 * retries, periodic resync, the table check) belongs to the pipeline. */
import type { Family } from '../nft/types';
import type { ClusterChange, ClusterSnapshot } from '../k8s/source';
import type { RulesetModel } from '../ruleset/model';
import type { RuleSetDiff } from '../ruleset/diff';
import type { ChangeScope } from './scope';
import type { SyncKind } from '../observe/metrics';

/** One table, referred to by one value everywhere (no literal 'inet' scattered around). */
export interface TableRef {
  family: Family;
  name: string;
}

/** A sync's kind, as the pipeline reports it and its metrics count it (observe/metrics.ts). */
export type { SyncKind };

/** A producer of desired kernel state (policy now, proxy next). The pipeline owns everything else:
 * reading back, planning, committing, coalescing, retries, periodic resync, the table check. */
export interface Component {
  /** 'policy', 'proxy': names logs and metric labels. */
  readonly name: string;
  /** The one table this component owns; nothing else is touched. */
  readonly table: TableRef;
  /** Loads the initial state and builds the whole desired model. */
  start(snapshot: ClusterSnapshot): void;
  /** What start() took, in ms by stage (e.g. `engine`, `render`), for the first full sync's
   * report; when absent the pipeline times start() as a whole (`load`). */
  readonly loadStages?: Record<string, number>;
  /** The desired model, kept current by apply(). */
  readonly desired: RulesetModel;
  /** Applies one change to the desired model and records in `scope` every chain, set and element
   * it touched; returns false (recording nothing) when the change does not concern this component.
   * Never throws for a bad object: it fails closed and reports it itself. */
  apply(change: ClusterChange, scope: ChangeScope): boolean;
  /** Called after each committed transaction of this component's table, with the diff committed
   * (e.g. the proxy deletes conntrack entries of removed UDP endpoints). Errors are logged. */
  afterCommit?(diff: RuleSetDiff, kind: SyncKind): Promise<void>;
  /** Sizes for logs and gauges (cheap; called at most once a second). */
  stats?(): Record<string, number>;
}

/** `inet nfkube`: how nft names a table. */
export function tableText(t: TableRef): string {
  return `${t.family} ${t.name}`;
}
