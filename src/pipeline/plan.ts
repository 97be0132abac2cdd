/** The planner: what one table needs to reach its desired state, decided from the table read
 * back, with no I/O. The agent's start-up and resync and `nfkube verify` all decide here.
 *
 * - `noop`: the kernel already holds the desired state; nothing is written.
 * - `diff`: the difference, committed in one transaction guarded by the read's generation.
 * - `replace`: the table is missing or switched off (table flags are not part of the model, and a
 *   dormant table's base chains see no packets); it is replaced whole in one transaction.
 *
 * At start the difference is what changed since the previous run, not drift, so no drift is
 * reported; on a resync it is drift, reported in formatDiff's notation ('' when none). */
import { diffRulesets, formatDiff, isEmptyDiff, RuleSetDiff } from '../ruleset/diff';
import { emptyModel, RulesetModel } from '../ruleset/model';
import { tableText } from './component';

export type Plan =
  | { action: 'noop'; diff: RuleSetDiff; drift?: string }
  | { action: 'diff'; diff: RuleSetDiff; changes: Record<string, number>; drift?: string; repaired?: Record<string, number> }
  | {
      action: 'replace';
      /** What the kernel holds differs from the desired state by this (from an empty table when
       * the table is missing): the replacement's content, and what `verify` prints. */
      diff: RuleSetDiff;
      /** Why the table is replaced rather than updated: undefined for a first start. */
      problem?: string;
      drift?: string;
      repaired?: Record<string, number>;
    };

/** `kernel` is the table read back (undefined when missing); `flagsProblem` is
 * tableFlagsProblem() of it. */
export function plan(kernel: RulesetModel | undefined, flagsProblem: string | undefined, desired: RulesetModel, atStart: boolean): Plan {
  const diff = diffRulesets(kernel ?? emptyModel(desired.table), desired);
  if (!kernel || flagsProblem) {
    if (atStart && !kernel) return { action: 'replace', diff };
    const problem = flagsProblem ?? `table ${tableText(desired.table)} missing`;
    return atStart ? { action: 'replace', diff, problem } : { action: 'replace', diff, problem, drift: problem, repaired: { table: 1 } };
  }
  if (isEmptyDiff(diff)) return atStart ? { action: 'noop', diff } : { action: 'noop', diff, drift: '' };
  const changes = repairedCounts(diff);
  if (atStart) return { action: 'diff', diff, changes };
  return { action: 'diff', diff, changes, drift: formatDiff(kernel, desired, diff), repaired: changes };
}

/** Objects a diff changes, by kind (chain, set, element); kinds with none are left out. */
export function repairedCounts(d: RuleSetDiff): Record<string, number> {
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
