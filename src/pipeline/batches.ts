/** Bounded kernel transactions: a large sync cut into batches of bounded kernel work, so no
 * single commit holds the kernel's nf_tables commit mutex for long (every other netlink writer on
 * the node waits for it). Pure: no I/O; `test/unit/pipeline-batches.test.ts` checks it without a
 * kernel.
 *
 * The cut never lets a packet see a half-programmed object:
 * 1. build, off to the side: new sets (empty), new regular chains, their rules, then the new
 *    sets' elements. Nothing live refers to any of them yet, so each may be filled over many
 *    batches;
 * 2. link: new base chains with their rules, existing chains rewritten (flush and rules, or
 *    recreated), elements of existing sets: each chain whole in one batch, and an element whose
 *    value changes is removed and added again in the same batch;
 * 3. unlink before removing: chains that go are flushed, then sets that go are deleted, then those
 *    chains.
 * Each batch is a valid transaction on its own once the ones before it are committed: a crash
 * between two leaves a table the next start reads back and completes (its plan is the difference
 * from what was committed). */
import { Transaction } from '../nft/transaction';
import { Operation, SetElement } from '../nft/types';
import { addCreatedElements, ELEMENT_CHUNK, RuleSetDiff } from '../ruleset/diff';
import { elementKey, RulesetModel, sameChainDefinition } from '../ruleset/model';

/** How much one batch may hold. A batch holds at least one unit (a chain and its rules stay
 * together), so a single larger unit makes a larger batch. */
export interface BatchLimits {
  /** Table, chain, set and rule operations. */
  objects: number;
  /** Set elements, added or removed. */
  elements: number;
}

/** Measured on this project's bench machine (bench/RESULTS.md, "Bounded transactions"): a batch
 * of this size keeps the kernel under ~50 ms, and the whole sync within 1.2x of one batch. */
export const DEFAULT_BATCH_LIMITS: BatchLimits = { objects: 250, elements: 2048 };

/** Operations that go in one batch, never split. */
type Unit = Operation[];

/** The diff from `from` to `to` as bounded batches, in commit order, each starting with `prefix`'s
 * operations for the first; undefined when the diff replaces a set (every rule looking it up is
 * rewritten around the replacement, which only one transaction can do without a gap). */
export function boundedBatches(from: RulesetModel, to: RulesetModel, d: RuleSetDiff, limits: BatchLimits, prefix: Operation[] = []): Transaction[] | undefined {
  if (d.replaceSets.length > 0) return undefined;
  const units: Unit[] = [];
  if (prefix.length) units.push(prefix);
  const newBase = d.addChains.filter((name) => to.chains.get(name)!.chain.base);
  const newRegular = d.addChains.filter((name) => !to.chains.get(name)!.chain.base);
  // 1. Build: nothing live refers to these yet.
  for (const name of d.addSets) units.push([{ kind: 'set', verb: 'add', set: to.sets.get(name)!.set }]);
  for (const name of newRegular) units.push([{ kind: 'chain', verb: 'add', chain: to.chains.get(name)!.chain }]);
  for (const name of newRegular) for (const rule of to.chains.get(name)!.rules) units.push([{ kind: 'rule', verb: 'add', rule }]);
  // After the rules that bind them, as in one transaction (diffTransaction says why).
  const fill = new Transaction();
  addCreatedElements(
    fill,
    d.addSets.map((name) => to.sets.get(name)!),
    Math.min(ELEMENT_CHUNK, limits.elements),
  );
  for (const op of fill.operations) units.push([op]);
  // 2. Link: each chain whole.
  for (const name of newBase) {
    const c = to.chains.get(name)!;
    units.push([{ kind: 'chain', verb: 'add', chain: c.chain }, ...c.rules.map((rule): Operation => ({ kind: 'rule', verb: 'add', rule }))]);
  }
  for (const name of d.rewriteChains) {
    const a = from.chains.get(name)!.chain;
    const b = to.chains.get(name)!;
    const head: Operation[] = sameChainDefinition(a, b.chain)
      ? [{ kind: 'chain', verb: 'flush', chain: b.chain }]
      : [
          { kind: 'chain', verb: 'delete', chain: a },
          { kind: 'chain', verb: 'add', chain: b.chain },
        ];
    units.push([...head, ...b.rules.map((rule): Operation => ({ kind: 'rule', verb: 'add', rule }))]);
  }
  for (const name of new Set([...d.removeElements.keys(), ...d.addElements.keys()])) {
    units.push(...elementChangeUnits(from, to, name, d.removeElements.get(name) ?? [], d.addElements.get(name) ?? [], limits.elements));
  }
  // 3. Unlink, then remove.
  for (const name of d.removeChains) units.push([{ kind: 'chain', verb: 'flush', chain: from.chains.get(name)!.chain }]);
  for (const name of d.removeSets) units.push([{ kind: 'set', verb: 'delete', set: from.sets.get(name)!.set }]);
  for (const name of d.removeChains) units.push([{ kind: 'chain', verb: 'delete', chain: from.chains.get(name)!.chain }]);
  return pack(units, limits);
}

/** One existing set's element changes in chunks of at most `chunk`: an element whose value
 * changes (same key) is removed and added in one unit, so its key is never missing. */
function elementChangeUnits(from: RulesetModel, to: RulesetModel, name: string, removed: SetElement[], added: SetElement[], chunk: number): Unit[] {
  const oldSet = from.sets.get(name)!.set;
  const newSet = to.sets.get(name)!.set;
  const addedKeys = new Set(added.map(elementKey));
  const rekeyed = removed.filter((e) => addedKeys.has(elementKey(e)));
  const rekeyedKeys = new Set(rekeyed.map(elementKey));
  const units: Unit[] = [];
  const replacedBy = new Map(added.filter((e) => rekeyedKeys.has(elementKey(e))).map((e) => [elementKey(e), e]));
  for (const part of chunks(rekeyed, Math.max(1, chunk >> 1))) {
    units.push([
      { kind: 'element', verb: 'delete', set: oldSet, elements: part },
      { kind: 'element', verb: 'add', set: newSet, elements: part.map((e) => replacedBy.get(elementKey(e))!) },
    ]);
  }
  for (const part of chunks(removed.filter((e) => !rekeyedKeys.has(elementKey(e))), chunk)) units.push([{ kind: 'element', verb: 'delete', set: oldSet, elements: part }]);
  for (const part of chunks(added.filter((e) => !rekeyedKeys.has(elementKey(e))), chunk)) units.push([{ kind: 'element', verb: 'add', set: newSet, elements: part }]);
  return units;
}

function chunks<T>(all: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < all.length; i += size) out.push(all.slice(i, i + size));
  return out;
}

/** Kernel work of one unit, by the limits' two measures. */
function weight(unit: Unit): BatchLimits {
  let objects = 0;
  let elements = 0;
  for (const op of unit) {
    if (op.kind === 'element') elements += op.elements.length;
    else objects++;
  }
  return { objects, elements };
}

/** Units packed in order into batches within the limits (a unit over them alone in its own). */
function pack(units: Unit[], limits: BatchLimits): Transaction[] {
  const batches: Transaction[] = [];
  let tx = new Transaction();
  let used: BatchLimits = { objects: 0, elements: 0 };
  for (const unit of units) {
    const w = weight(unit);
    if (tx.size > 0 && (used.objects + w.objects > limits.objects || used.elements + w.elements > limits.elements)) {
      batches.push(tx);
      tx = new Transaction();
      used = { objects: 0, elements: 0 };
    }
    for (const op of unit) tx.add(op);
    used.objects += w.objects;
    used.elements += w.elements;
  }
  if (tx.size > 0) batches.push(tx);
  return batches;
}

/** The crash test's hooks, from the environment: `NFKUBE_TEST_BATCH_LIMITS=OBJECTS,ELEMENTS`
 * (small batches on a small cluster) and `NFKUBE_TEST_KILL_AFTER_BATCH=N` (the agent kills itself
 * with SIGKILL once batch N of a bounded sync is committed). */
export function batchTestHooks(env: Record<string, string | undefined>): { batchLimits?: BatchLimits; killAfterBatch?: number } {
  const out: { batchLimits?: BatchLimits; killAfterBatch?: number } = {};
  const limits = env.NFKUBE_TEST_BATCH_LIMITS;
  if (limits !== undefined) {
    const [objects, elements] = limits.split(',').map(Number);
    if (!(objects >= 1 && elements >= 1 && Number.isInteger(objects) && Number.isInteger(elements))) throw new Error(`NFKUBE_TEST_BATCH_LIMITS: ${JSON.stringify(limits)} is not OBJECTS,ELEMENTS (two positive integers)`);
    out.batchLimits = { objects, elements };
  }
  const kill = env.NFKUBE_TEST_KILL_AFTER_BATCH;
  if (kill !== undefined) {
    const n = Number(kill);
    if (!(Number.isInteger(n) && n >= 1)) throw new Error(`NFKUBE_TEST_KILL_AFTER_BATCH: ${JSON.stringify(kill)} is not a positive integer`);
    out.killAfterBatch = n;
  }
  return out;
}
