/** The nf_tables semantics nfkube relies on, over plain data: the state RulesetModelStore holds and
 * how one batch changes it, all or nothing. Each rule is the kernel's (nf_tables_api.c), and
 * test/kernel/fake-store-agrees.test.ts applies the same random batches to both and compares what
 * they refuse and what they read back.
 *
 * Modelled: tables (create-only, ownership with NFT_TABLE_F_OWNER, flag updates, user data set
 * once), chains (a chain a jump or verdict element refers to cannot go), rules (append, insert,
 * replace and delete by handle, at a position), sets and maps (a set a rule looks up cannot go; a
 * definition cannot change), elements (a key mapped to another value is refused; interval
 * overlaps are refused), handles, and the generation, bumped by a batch that changed anything.
 * Not modelled: expressions' own validation, chain loops, timeouts, stateful objects. */
import { NFT_SET_INTERVAL, NFT_TABLE_F_OWNER, NFT_TABLE_F_PERSIST } from '../nft/constants';
import { Chain, Family, NftSet, NftObjectKind, Operation, OperationOf, Rule, SetElement, Table } from '../nft/types';
import { ChainModel, elementKey, RulesetModel, sameChainDefinition, sameElementValue, sameSetDefinition, SetModel } from '../ruleset/model';

export interface FakeRuleset {
  generation: number;
  /** By `family name`, each as plain data (its elements in insertion order). */
  tables: Map<string, RulesetModel>;
  /** The last handle given: chains, rules and sets (and tables) are numbered from one counter. */
  lastHandle: bigint;
}

/** The errno names the fake answers with, and their numbers on Linux. */
export const FAKE_ERRNO = { EPERM: 1, ENOENT: 2, EBUSY: 16, EEXIST: 17, EINVAL: 22, ERESTART: 85, EOPNOTSUPP: 95 } as const;
export type FakeErrno = keyof typeof FAKE_ERRNO;

/** One operation of a batch refused: the whole batch is. */
export class FakeRefusal extends Error {
  constructor(
    readonly code: FakeErrno,
    readonly reason: string,
    /** Index of the refused operation in its batch. */
    readonly opIndex = -1,
  ) {
    super(`${code}: ${reason}`);
    this.name = 'FakeRefusal';
  }
}

export function emptyRuleset(): FakeRuleset {
  return { generation: 1, tables: new Map(), lastHandle: 0n };
}

const tableKey = (family: Family, name: string) => `${family} ${name}`;

/** What one batch works on: a copy of the state, changed in place, and who sends it. */
interface BatchContext {
  state: FakeRuleset;
  writer: number;
  /** Whether any operation changed something (the kernel commits, and bumps the generation). */
  changed: boolean;
}

/** The state after `operations`, or a FakeRefusal naming the first refused one (the state passed
 * in is never changed). `writer` is the sender's port id, as table ownership records it. */
export function applyBatch(state: FakeRuleset, operations: readonly Operation[], writer: number): FakeRuleset {
  const ctx: BatchContext = { state: cloneRuleset(state), writer, changed: false };
  operations.forEach((op, i) => {
    try {
      (APPLY[op.kind] as (ctx: BatchContext, op: Operation) => void)(ctx, op);
    } catch (err) {
      if (err instanceof FakeRefusal) throw new FakeRefusal(err.code, err.reason, i);
      throw err;
    }
  });
  if (ctx.changed) ctx.state.generation++;
  return ctx.state;
}

function cloneRuleset(s: FakeRuleset): FakeRuleset {
  const tables = new Map<string, RulesetModel>();
  for (const [k, t] of s.tables) {
    tables.set(k, {
      table: t.table,
      chains: new Map([...t.chains].map(([n, c]) => [n, { chain: c.chain, rules: [...c.rules] }])),
      sets: new Map([...t.sets].map(([n, x]) => [n, { set: x.set, elements: new Map(x.elements) }])),
    });
  }
  return { generation: s.generation, tables, lastHandle: s.lastHandle };
}

function nextHandle(ctx: BatchContext): bigint {
  return ++ctx.state.lastHandle;
}

/** The table an operation names; EPERM when another writer holds it (nft_table_lookup). */
function tableFor(ctx: BatchContext, family: Family, name: string): RulesetModel {
  const t = ctx.state.tables.get(tableKey(family, name));
  if (!t) throw new FakeRefusal('ENOENT', `no table ${family} ${name}`);
  if (((t.table.flags ?? 0) & NFT_TABLE_F_OWNER) !== 0 && t.table.owner !== ctx.writer) throw new FakeRefusal('EPERM', `table ${family} ${name} is held by port ${t.table.owner}`);
  return t;
}

function chainFor(t: RulesetModel, name: string): ChainModel {
  const c = t.chains.get(name);
  if (!c) throw new FakeRefusal('ENOENT', `no chain ${name}`);
  return c;
}

function setFor(t: RulesetModel, name: string): SetModel {
  const s = t.sets.get(name);
  if (!s) throw new FakeRefusal('ENOENT', `no set ${name}`);
  return s;
}

/** The chains a rule jumps or goes to. */
function ruleJumps(r: Rule): string[] {
  const out: string[] = [];
  for (const e of r.exprs) if (e.type === 'immediate' && e.verdict && 'chain' in e.verdict) out.push(e.verdict.chain);
  return out;
}

/** The sets a rule looks up, updates or takes an object from. */
function ruleSets(r: Rule): string[] {
  const out: string[] = [];
  for (const e of r.exprs) {
    if (e.type === 'lookup' || e.type === 'dynset') out.push(e.set);
    else if (e.type === 'objref' && e.setName) out.push(e.setName);
  }
  return out;
}

/** Whether a rule or a verdict map's element jumps to `chain` (the kernel's chain use count). */
function chainReferenced(t: RulesetModel, chain: string): boolean {
  for (const c of t.chains.values()) if (c.chain.name !== chain && c.rules.some((r) => ruleJumps(r).includes(chain))) return true;
  for (const s of t.sets.values()) for (const e of s.elements.values()) if (e.verdict && 'chain' in e.verdict && e.verdict.chain === chain) return true;
  return false;
}

function setReferenced(t: RulesetModel, set: string): boolean {
  for (const c of t.chains.values()) if (c.rules.some((r) => ruleSets(r).includes(set))) return true;
  return false;
}

function dropRules(ctx: BatchContext, c: ChainModel): void {
  if (c.rules.length) ctx.changed = true;
  c.rules = [];
}

const APPLY: { [K in NftObjectKind]: (ctx: BatchContext, op: OperationOf<K>) => void } = {
  table(ctx, op) {
    const { family, name } = op.table;
    const key = tableKey(family, name);
    const existing = ctx.state.tables.get(key);
    if (op.verb === 'destroy' && !existing) return;
    if (op.verb === 'add' || op.verb === 'create') {
      if (!existing) {
        const flags = op.table.flags ?? 0;
        const table: Table = { family, name, flags, handle: nextHandle(ctx), ...(op.table.comment !== undefined && { comment: op.table.comment }), ...(op.table.options !== undefined && { options: op.table.options }), ...(flags & NFT_TABLE_F_OWNER && { owner: ctx.writer }) };
        ctx.state.tables.set(key, { table, chains: new Map(), sets: new Map() });
        ctx.changed = true;
        return;
      }
      const t = tableFor(ctx, family, name);
      if (op.verb === 'create') throw new FakeRefusal('EEXIST', `table ${key} exists`);
      updateTableFlags(ctx, t, op.table.flags ?? 0);
      return;
    }
    const t = tableFor(ctx, family, name);
    if (op.verb === 'flush') {
      for (const c of t.chains.values()) dropRules(ctx, c);
      return;
    }
    ctx.state.tables.delete(key);
    ctx.changed = true;
  },

  chain(ctx, op) {
    const t = tableFor(ctx, op.chain.family, op.chain.table);
    const existing = t.chains.get(op.chain.name);
    if (op.verb === 'destroy' && !existing) return;
    if (op.verb === 'add' || op.verb === 'create') {
      if (!existing) {
        t.chains.set(op.chain.name, { chain: storedChain(op.chain, nextHandle(ctx)), rules: [] });
        ctx.changed = true;
        return;
      }
      // A policy for a regular chain is refused before anything else (nf_tables_newchain).
      if (op.chain.base && !existing.chain.base) throw new FakeRefusal('EOPNOTSUPP', `chain ${op.chain.name} exists without a hook`);
      if (op.verb === 'create') throw new FakeRefusal('EEXIST', `chain ${op.chain.name} exists`);
      updateChain(ctx, existing, op.chain);
      return;
    }
    const c = chainFor(t, op.chain.name);
    if (op.verb === 'flush') return dropRules(ctx, c);
    if (chainReferenced(t, c.chain.name)) throw new FakeRefusal('EBUSY', `chain ${c.chain.name} is jumped to`);
    t.chains.delete(c.chain.name);
    ctx.changed = true;
  },

  rule(ctx, op) {
    const r = op.rule;
    const t = tableFor(ctx, r.family, r.table);
    const c = chainFor(t, r.chain);
    const at = (handle: bigint | undefined, what: string): number => {
      const i = c.rules.findIndex((x) => x.handle === handle);
      if (i < 0) throw new FakeRefusal('ENOENT', `no rule with handle ${handle} (${what}) in chain ${r.chain}`);
      return i;
    };
    if (op.verb === 'delete' || op.verb === 'destroy') {
      const i = c.rules.findIndex((x) => x.handle === r.handle);
      if (i < 0 && op.verb === 'destroy') return;
      c.rules.splice(at(r.handle, 'to delete'), 1);
      ctx.changed = true;
      return;
    }
    for (const target of ruleJumps(r)) {
      const to = chainFor(t, target);
      if (to.chain.base) throw new FakeRefusal('EOPNOTSUPP', `jump to base chain ${target}`);
    }
    for (const set of ruleSets(r)) setFor(t, set);
    if (op.verb === 'replace') {
      const i = at(r.handle, 'to replace');
      c.rules[i] = storedRule(r, c.rules[i].handle!);
    } else if (op.verb === 'add') {
      const i = r.position === undefined ? c.rules.length : at(r.position, 'position') + 1;
      c.rules.splice(i, 0, storedRule(r, nextHandle(ctx)));
    } else {
      const i = r.position === undefined ? 0 : at(r.position, 'position');
      c.rules.splice(i, 0, storedRule(r, nextHandle(ctx)));
    }
    ctx.changed = true;
  },

  set(ctx, op) {
    const t = tableFor(ctx, op.set.family, op.set.table);
    const existing = t.sets.get(op.set.name);
    if (op.verb === 'destroy' && !existing) return;
    if (op.verb === 'add' || op.verb === 'create') {
      if (!existing) {
        t.sets.set(op.set.name, { set: storedSet(op.set, nextHandle(ctx)), elements: new Map() });
        ctx.changed = true;
        return;
      }
      if (op.verb === 'create') throw new FakeRefusal('EEXIST', `set ${op.set.name} exists`);
      if (!sameSetDefinition(existing.set, op.set)) throw new FakeRefusal('EEXIST', `set ${op.set.name} exists with another definition`);
      // An update the kernel commits, though it changes nothing here.
      ctx.changed = true;
      return;
    }
    const s = setFor(t, op.set.name);
    if (op.verb === 'flush') {
      if (s.elements.size) ctx.changed = true;
      s.elements.clear();
      return;
    }
    if (setReferenced(t, s.set.name)) throw new FakeRefusal('EBUSY', `set ${s.set.name} is looked up by a rule`);
    t.sets.delete(s.set.name);
    ctx.changed = true;
  },

  element(ctx, op) {
    const t = tableFor(ctx, op.set.family, op.set.table);
    const s = setFor(t, op.set.name);
    const interval = ((s.set.flags ?? 0) & NFT_SET_INTERVAL) !== 0;
    for (const raw of op.elements) {
      if (!interval && raw.keyEnd && !raw.keyEnd.equals(raw.key)) throw new FakeRefusal('EINVAL', `a range in set ${s.set.name}, which has no interval flag`);
      const e = storedElement(raw, interval);
      const key = elementKey(e);
      const existing = s.elements.get(key);
      if (op.verb === 'delete' || op.verb === 'destroy') {
        if (!existing && op.verb === 'destroy') continue;
        if (!existing) throw new FakeRefusal('ENOENT', `no element ${key} in set ${s.set.name}`);
        s.elements.delete(key);
        ctx.changed = true;
        continue;
      }
      if (existing) {
        if (op.verb === 'create') throw new FakeRefusal('EEXIST', `element ${key} exists in set ${s.set.name}`);
        if (!sameElementValue(existing, e)) throw new FakeRefusal('EEXIST', `element ${key} of set ${s.set.name} maps to another value`);
        continue;
      }
      if (interval && overlaps(s, e)) throw new FakeRefusal('EEXIST', `element ${key} overlaps another in set ${s.set.name}`);
      for (const target of e.verdict && 'chain' in e.verdict ? [e.verdict.chain] : []) {
        if (chainFor(t, target).chain.base) throw new FakeRefusal('EOPNOTSUPP', `jump to base chain ${target}`);
      }
      s.elements.set(key, e);
      ctx.changed = true;
    }
  },
};

/** A table's flags changed by NEWTABLE on an existing table (nf_tables_updtable): its user data
 * stays as created; an owner cannot be dropped or changed, nor persistence switched, and only
 * an orphan can be taken. */
function updateTableFlags(ctx: BatchContext, t: RulesetModel, flags: number): void {
  const old = t.table.flags ?? 0;
  if (flags === old) return;
  const owned = (old & NFT_TABLE_F_OWNER) !== 0;
  // Only an orphan (persistent, its owner gone) can be taken.
  const orphan = (old & (NFT_TABLE_F_OWNER | NFT_TABLE_F_PERSIST)) === NFT_TABLE_F_PERSIST;
  if ((owned && !(flags & NFT_TABLE_F_OWNER)) || (flags & NFT_TABLE_F_OWNER && !owned && !orphan) || ((flags ^ old) & NFT_TABLE_F_PERSIST) !== 0) throw new FakeRefusal('EOPNOTSUPP', `table ${t.table.family} ${t.table.name}: flags ${old} cannot become ${flags}`);
  t.table = { ...t.table, flags, ...(flags & NFT_TABLE_F_OWNER && { owner: ctx.writer }) };
  ctx.changed = true;
}

/** NEWCHAIN on an existing chain (nf_tables_updchain): a base chain's policy may change; its
 * hook, priority and type may not, nor may a regular chain get a hook. Without a hook it changes
 * nothing, and is still a change to commit. */
function updateChain(ctx: BatchContext, c: ChainModel, to: Chain): void {
  const from = c.chain.base;
  if (to.base && from && (from.hook !== to.base.hook || from.priority !== to.base.priority || from.type !== to.base.type || from.device !== to.base.device)) {
    throw new FakeRefusal('EEXIST', `chain ${to.name} exists with another hook`);
  }
  if (from && to.base && !sameChainDefinition(c.chain, to)) c.chain = { ...c.chain, base: { ...from, policy: to.base.policy } };
  ctx.changed = true;
}

function storedChain(c: Chain, handle: bigint): Chain {
  return { family: c.family, table: c.table, name: c.name, handle, ...(c.base && { base: c.base }) };
}

function storedRule(r: Rule, handle: bigint): Rule {
  return { family: r.family, table: r.table, chain: r.chain, handle, exprs: r.exprs, ...(r.comment !== undefined && { comment: r.comment }) };
}

function storedSet(s: NftSet, handle: bigint): NftSet {
  const { id: _id, ...rest } = s;
  return { ...rest, handle, flags: s.flags ?? 0 };
}

/** An element as read back: an interval's end only when it differs from its start. */
function storedElement(e: SetElement, interval: boolean): SetElement {
  const out: SetElement = { key: e.key };
  if (interval && e.keyEnd && !e.keyEnd.equals(e.key)) out.keyEnd = e.keyEnd;
  if (e.data) out.data = e.data;
  if (e.verdict) out.verdict = e.verdict;
  return out;
}

function overlaps(s: SetModel, e: SetElement): boolean {
  const end = e.keyEnd ?? e.key;
  for (const x of s.elements.values()) if (Buffer.compare(e.key, x.keyEnd ?? x.key) <= 0 && Buffer.compare(x.key, end) <= 0) return true;
  return false;
}

// --- reading ------------------------------------------------------------------------------------

export function fakeTables(state: FakeRuleset, family?: Family): Table[] {
  return [...state.tables.values()].filter((t) => !family || t.table.family === family).map((t) => t.table);
}

export function fakeTable(state: FakeRuleset, family: Family, name: string): RulesetModel | undefined {
  return state.tables.get(tableKey(family, name));
}

/** What a writer's socket closing does to the tables it holds: a persistent one stays, without
 * an owner; any other goes. */
export function releaseWriter(state: FakeRuleset, writer: number): FakeRuleset {
  const held = [...state.tables.entries()].filter(([, t]) => ((t.table.flags ?? 0) & NFT_TABLE_F_OWNER) !== 0 && t.table.owner === writer);
  if (held.length === 0) return state;
  const next = cloneRuleset(state);
  for (const [key, t] of held) {
    if ((t.table.flags ?? 0) & NFT_TABLE_F_PERSIST) {
      const { owner: _owner, ...table } = t.table;
      next.tables.get(key)!.table = { ...table, flags: (table.flags ?? 0) & ~NFT_TABLE_F_OWNER };
    } else next.tables.delete(key);
  }
  return next;
}
