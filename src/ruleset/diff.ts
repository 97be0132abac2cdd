/** RuleSetDiff: the minimal transaction that turns one RulesetModel into another, optionally
 * looking only at the chains and sets an event touched (so its cost follows the change). */
import { ruleKey } from '../nft/canonical';
import { formatElement, formatRule } from '../nft/format';
import { Transaction } from '../nft/transaction';
import { SetElement } from '../nft/types';
import { elementKey, packetOwnedElements, RulesetModel, sameChainDefinition, sameElementValue, sameRules, sameSetDefinition, SetModel } from './model';

export interface DiffScope {
  chains: Iterable<string>;
  /** Sets compared whole (created, removed, redefined). */
  sets: Iterable<string>;
  /** Sets compared only at these element keys, so a one-element change costs one lookup. */
  elements?: ReadonlyMap<string, Iterable<string>>;
}

/** What differs, in a form both the transaction builder and humans (verify) use. */
export interface RuleSetDiff {
  addChains: string[];
  removeChains: string[];
  /** Chains whose definition or rules differ: rewritten whole (flush, then add). */
  rewriteChains: string[];
  addSets: string[];
  removeSets: string[];
  /** Sets whose definition differs: recreated with their elements. */
  replaceSets: string[];
  addElements: Map<string, SetElement[]>;
  removeElements: Map<string, SetElement[]>;
  /** The elements' keys (elementKey), at the same index, where the diff knew them: applyDiff
   * then need not spell them again. */
  addElementKeys?: Map<string, string[]>;
  removeElementKeys?: Map<string, string[]>;
}

export function isEmptyDiff(d: RuleSetDiff): boolean {
  return (
    d.addChains.length + d.removeChains.length + d.rewriteChains.length + d.addSets.length + d.removeSets.length + d.replaceSets.length ===
      0 &&
    d.addElements.size === 0 &&
    d.removeElements.size === 0
  );
}

export function diffRulesets(from: RulesetModel, to: RulesetModel, scope?: DiffScope): RuleSetDiff {
  const d: RuleSetDiff = {
    addChains: [],
    removeChains: [],
    rewriteChains: [],
    addSets: [],
    removeSets: [],
    replaceSets: [],
    addElements: new Map(),
    removeElements: new Map(),
    addElementKeys: new Map(),
    removeElementKeys: new Map(),
  };
  const chainNames = scope ? new Set(scope.chains) : new Set([...from.chains.keys(), ...to.chains.keys()]);
  const setNames = scope ? new Set(scope.sets) : new Set([...from.sets.keys(), ...to.sets.keys()]);
  for (const name of chainNames) {
    const a = from.chains.get(name);
    const b = to.chains.get(name);
    if (!a && b) d.addChains.push(name);
    else if (a && !b) d.removeChains.push(name);
    else if (a && b && (!sameChainDefinition(a.chain, b.chain) || !sameRules(a.rules, b.rules))) d.rewriteChains.push(name);
  }
  for (const [name, keys] of scope?.elements ?? []) {
    if (setNames.has(name)) continue;
    const a = from.sets.get(name);
    const b = to.sets.get(name);
    if (!a || !b) {
      setNames.add(name);
      continue;
    }
    if (packetOwnedElements(b.set)) continue;
    diffElements(d, name, a, b, keys);
  }
  for (const name of setNames) {
    const a = from.sets.get(name);
    const b = to.sets.get(name);
    if (!a && b) d.addSets.push(name);
    else if (a && !b) d.removeSets.push(name);
    else if (a && b) {
      if (!sameSetDefinition(a.set, b.set)) {
        d.replaceSets.push(name);
        continue;
      }
      // The packet path owns the elements of a set whose elements time out (session affinity).
      if (packetOwnedElements(b.set)) continue;
      diffElements(d, name, a, b, allKeys(a, b));
    }
  }
  if (d.replaceSets.length > 0) rewriteLookupsOf(d, from, to);
  return d;
}

/** Every key of two versions of a set: the new one's, then those only the old one has. */
function* allKeys(a: SetModel, b: SetModel): Iterable<string> {
  yield* b.elements.keys();
  for (const k of a.elements.keys()) if (!b.elements.has(k)) yield k;
}

/** Records in the diff how one set's elements differ at `keys`, with their keys for applyDiff:
 * an element gone or changed is deleted, one new or changed is added. */
function diffElements(d: RuleSetDiff, name: string, a: SetModel, b: SetModel, keys: Iterable<string>): void {
  const add: SetElement[] = [];
  const del: SetElement[] = [];
  const addKeys: string[] = [];
  const delKeys: string[] = [];
  for (const k of keys) {
    const old = a.elements.get(k);
    const now = b.elements.get(k);
    if (old && now && sameElementValue(old, now)) continue;
    if (old) {
      del.push(old);
      delKeys.push(k);
    }
    if (now) {
      add.push(now);
      addKeys.push(k);
    }
  }
  if (add.length) {
    d.addElements.set(name, add);
    d.addElementKeys!.set(name, addKeys);
  }
  if (del.length) {
    d.removeElements.set(name, del);
    d.removeElementKeys!.set(name, delKeys);
  }
}

/** A set is replaced by deleting it, which the kernel refuses while any rule looks it up: every
 * chain whose rules reference a replaced set is rewritten too, so its old rules are gone first
 * and its new ones bind the new set. */
function rewriteLookupsOf(d: RuleSetDiff, from: RulesetModel, to: RulesetModel): void {
  const replaced = new Set(d.replaceSets);
  const planned = new Set([...d.addChains, ...d.removeChains, ...d.rewriteChains]);
  for (const [name, c] of from.chains) {
    if (planned.has(name) || !to.chains.has(name)) continue;
    const refers = c.rules.some((r) => r.exprs.some((e) => (e.type === 'lookup' && replaced.has(e.set)) || (e.type === 'objref' && e.setName !== undefined && replaced.has(e.setName))));
    if (refers) d.rewriteChains.push(name);
  }
}

/** Orders the changes so every reference resolves at each step of the batch: chains exist
 * before elements and rules point at them; jumps and lookups are gone before their targets. */
export function diffTransaction(from: RulesetModel, to: RulesetModel, d: RuleSetDiff, tx = new Transaction()): Transaction {
  for (const name of d.addChains) tx.addChain(to.chains.get(name)!.chain);
  for (const name of d.rewriteChains) {
    const a = from.chains.get(name)!.chain;
    const b = to.chains.get(name)!.chain;
    // A base chain that changed hook or type must be recreated; a regular chain only flushed.
    if (!sameChainDefinition(a, b)) {
      tx.deleteChain(a).addChain(b);
    } else {
      tx.flushChain(b);
    }
  }
  // Rules of chains about to go stop referencing anything first.
  for (const name of d.removeChains) tx.flushChain(from.chains.get(name)!.chain);
  // Every rule that looked up a replaced set was just flushed (diffRulesets rewrites those
  // chains): the old set can go, and the rules added below bind the new one.
  for (const name of d.replaceSets) tx.deleteSet(from.sets.get(name)!.set);
  // Sets that go are unreferenced now (their rules were just flushed); a verdict map among them
  // must go before the chains its elements jump to.
  for (const name of d.removeSets) tx.deleteSet(from.sets.get(name)!.set);
  const created = [...d.addSets, ...d.replaceSets];
  for (const name of created) tx.addSet(to.sets.get(name)!.set);
  for (const [name, elems] of d.removeElements) tx.deleteElements(from.sets.get(name)!.set, elems);
  for (const [name, elems] of d.addElements) tx.addElements(to.sets.get(name)!.set, elems);
  for (const name of [...d.addChains, ...d.rewriteChains]) {
    for (const r of to.chains.get(name)!.rules) tx.addRule(r);
  }
  // A new set's elements come after the rules that bind it: binding a map from a new chain walks
  // every element already in it (nf_tables_bind_set), once per chain, while an element added to a
  // bound map is checked against its bindings only.
  addCreatedElements(tx, created.map((name) => to.sets.get(name)!));
  for (const name of d.removeChains) tx.deleteChain(from.chains.get(name)!.chain);
  return tx;
}

/** Elements per operation when a new set's elements are spread out. */
export const ELEMENT_CHUNK = 1024;

/** The elements of new sets: each set's in chunks, the chunks of every set spread evenly over the
 * whole sequence, each set at its own phase (sets of one chunk stay in their order). A hash set
 * filled in one burst outruns the kernel's resize, which runs deferred (rhashtable): measured at
 * 250k hairpin elements among 1024 endpoint maps, the batch took 1.7 s spread out, 2.1-2.7 s not. */
export function addCreatedElements(tx: Transaction, sets: SetModel[], chunk = ELEMENT_CHUNK): void {
  const chunks: { at: number; set: SetModel; elements: SetElement[] }[] = [];
  sets.forEach((s, k) => {
    const all = [...s.elements.values()];
    const n = Math.max(1, Math.ceil(all.length / chunk));
    const phase = (k + 0.5) / sets.length;
    for (let j = 0; j < n; j++) chunks.push({ at: (j + phase) / n, set: s, elements: n === 1 ? all : all.slice(j * chunk, (j + 1) * chunk) });
  });
  chunks.sort((a, b) => a.at - b.at);
  for (const c of chunks) tx.addElements(c.set.set, c.elements);
}

/** Makes `committed` what it becomes once the transaction of `d` is committed. Chain models are
 * shared (they are never mutated once rendered); set element maps are copied or patched. */
export function applyDiff(committed: RulesetModel, desired: RulesetModel, d: RuleSetDiff): void {
  for (const name of [...d.addChains, ...d.rewriteChains]) committed.chains.set(name, desired.chains.get(name)!);
  for (const name of d.removeChains) committed.chains.delete(name);
  for (const name of [...d.addSets, ...d.replaceSets]) {
    const s = desired.sets.get(name)!;
    committed.sets.set(name, { set: s.set, elements: new Map(s.elements) });
  }
  for (const name of d.removeSets) committed.sets.delete(name);
  for (const [name, elems] of d.removeElements) {
    const s = committed.sets.get(name)!;
    const keys = d.removeElementKeys?.get(name);
    for (let i = 0; i < elems.length; i++) s.elements.delete(keys ? keys[i] : elementKey(elems[i]));
  }
  for (const [name, elems] of d.addElements) {
    const s = committed.sets.get(name)!;
    const keys = d.addElementKeys?.get(name);
    for (let i = 0; i < elems.length; i++) s.elements.set(keys ? keys[i] : elementKey(elems[i]), elems[i]);
  }
}

/** A deep enough copy to diff against later: chains shared, element maps copied. */
export function cloneModel(m: RulesetModel): RulesetModel {
  return {
    table: m.table,
    chains: new Map(m.chains),
    sets: new Map([...m.sets].map(([k, s]) => [k, { set: s.set, elements: new Map(s.elements) }])),
  };
}

/** The diff in nft syntax, for `nfkube verify` and drift logs: `+` meant but missing, `-`
 * present but not meant. */
export function formatDiff(from: RulesetModel, to: RulesetModel, d: RuleSetDiff): string {
  const lines: string[] = [];
  for (const n of d.addChains) lines.push(`+ chain ${n} (${to.chains.get(n)!.rules.length} rules)`);
  for (const n of d.removeChains) lines.push(`- chain ${n}`);
  for (const n of d.rewriteChains) {
    const a = from.chains.get(n)!;
    const b = to.chains.get(n)!;
    const aKeys = new Set(a.rules.map(ruleKey));
    const bKeys = new Set(b.rules.map(ruleKey));
    lines.push(`~ chain ${n}`);
    for (const r of b.rules) if (!aKeys.has(ruleKey(r))) lines.push(`+   ${formatRule({ ...r, handle: undefined })}`);
    for (const r of a.rules) if (!bKeys.has(ruleKey(r))) lines.push(`-   ${formatRule(r)}`);
    if ([...aKeys].every((k) => bKeys.has(k)) && [...bKeys].every((k) => aKeys.has(k))) {
      const unchanged = sameChainDefinition(a.chain, b.chain) && sameRules(a.rules, b.rules);
      lines.push(unchanged ? '    (its rules look up a set that is replaced)' : '    (rule order or base chain settings differ)');
    }
  }
  for (const n of d.addSets) lines.push(`+ set ${n} (${to.sets.get(n)!.elements.size} elements)`);
  for (const n of d.removeSets) lines.push(`- set ${n}`);
  for (const n of d.replaceSets) lines.push(`~ set ${n} (definition differs)`);
  for (const [n, elems] of d.addElements) for (const e of elems) lines.push(`+ element ${n} { ${formatElement(to.sets.get(n)!.set, e)} }`);
  for (const [n, elems] of d.removeElements) for (const e of elems) lines.push(`- element ${n} { ${formatElement(from.sets.get(n)!.set, e)} }`);
  return lines.join('\n');
}
