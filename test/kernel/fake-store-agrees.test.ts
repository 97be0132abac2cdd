/** FakeTableStore against the kernel: the same random batches, from two writers, applied to the
 * fake and to a real table in a fresh namespace must be refused alike (errno and message index)
 * or committed alike (the generation moving or not), and read back alike. This keeps the fake
 * honest: TableSync's unit tests trust it. A failure prints the seed and the batch. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as b from '../../src/nft/build';
import * as C from '../../src/nft/constants';
import { NetlinkError } from '../../src/netlink/errors';
import { KernelTableStore } from '../../src/nft/kernel-store';
import type { TableStore } from '../../src/nft/table-store';
import { Transaction } from '../../src/nft/transaction';
import { Chain, Expr, NftSet, Operation, Rule, SetElement, Table } from '../../src/nft/types';
import { ipv4 } from '../../src/net/ip-bytes';
import { FakeTableStore } from '../../src/pipeline/fake-store';
import { diffRulesets, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { modelFromKernel } from '../../src/ruleset/model';
import { withSandbox } from '../helpers/netns';
import { mulberry32 } from '../helpers/prng';

const SEEDS = [1, 2, 3, 4, 5, 6];
const BATCHES = 80;
const T = 'fz';
const REGULAR = ['c0', 'c1', 'c2', 'c3'];
const BASE: Record<string, Chain['base']> = {
  in: { hook: 'input', priority: 0, type: 'filter', policy: 'accept' },
  out: { hook: 'output', priority: 0, type: 'filter', policy: 'accept' },
};
const SETS: Record<string, Omit<NftSet, 'family' | 'table' | 'name'>> = {
  s0: { key: ['ipv4_addr'] },
  s1: { key: ['ipv4_addr'], flags: C.NFT_SET_INTERVAL },
  m0: { key: ['ipv4_addr'], data: 'verdict' },
};

/** An operation whose rule handles are named by position (chain, index) and resolved against
 * each store's own read-back: the two stores number their objects independently. */
type AbstractOp = Operation | { kind: 'rule-at'; verb: 'delete' | 'replace' | 'add' | 'insert'; chain: string; index: number; rule?: Rule };

const pick = <T>(rnd: () => number, xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)];
const addr = (i: number) => ipv4(`198.18.0.${i}`);

function tableOp(rnd: () => number): Operation {
  const flags = pick(rnd, [0, 0, 0, C.NFT_TABLE_F_DORMANT, C.NFT_TABLE_F_OWNER | C.NFT_TABLE_F_PERSIST, C.NFT_TABLE_F_OWNER]);
  const table: Table = { family: 'inet', name: T, comment: 'managed by nfkube', flags };
  return { kind: 'table', verb: pick(rnd, ['add', 'add', 'add', 'add', 'create', 'delete', 'destroy', 'flush'] as const), table };
}

function chainOp(rnd: () => number): Operation {
  const name = pick(rnd, [...REGULAR, 'in', 'out']);
  let base = BASE[name];
  // Sometimes another policy (an update) or another priority (refused), or none at all.
  if (base && rnd() < 0.3) base = { ...base, policy: 'drop' };
  if (base && rnd() < 0.1) base = { ...base, priority: 10 };
  if (rnd() < 0.1) base = base ? undefined : BASE.in;
  return { kind: 'chain', verb: pick(rnd, ['add', 'add', 'create', 'delete', 'destroy', 'flush'] as const), chain: { family: 'inet', table: T, name, base } };
}

/** A rule body for `chain`: jumps only run forward (c0 to c3), so no loop is ever built, except
 * the odd jump to a base chain the kernel refuses. */
function ruleBody(rnd: () => number, chain: string): Expr[] {
  const i = REGULAR.indexOf(chain);
  const later = REGULAR.slice(i + 1);
  const kinds = ['counter', 'lookup', 'interval'];
  if (later.length) kinds.push('jump', 'jump');
  if (chain !== 'c3') kinds.push('vmap');
  if (rnd() < 0.05) return [b.jump('in')];
  switch (pick(rnd, kinds)) {
    case 'jump':
      return [b.counter(), b.jump(pick(rnd, later))];
    case 'lookup':
      return [...b.matchAddrInSet('ip saddr', 's0'), b.accept()];
    case 'interval':
      return [...b.matchAddrInSet('ip daddr', 's1'), b.drop()];
    case 'vmap':
      return [...b.loadAddr('ip saddr'), b.vmap('m0')];
    default:
      return [b.counter()];
  }
}

function ruleOp(rnd: () => number, fake: FakeTableStore): AbstractOp {
  const chain = pick(rnd, [...REGULAR, 'in', 'out']);
  const rule: Rule = { family: 'inet', table: T, chain, exprs: ruleBody(rnd, chain) };
  const rules = fake.state.tables.get(`inet ${T}`)?.chains.get(chain)?.rules ?? [];
  const verb = pick(rnd, ['add', 'add', 'add', 'insert', 'replace', 'delete', 'delete'] as const);
  if (verb === 'add' && (rules.length === 0 || rnd() < 0.6)) return { kind: 'rule', verb: 'add', rule };
  if (verb === 'insert' && (rules.length === 0 || rnd() < 0.5)) return { kind: 'rule', verb: 'insert', rule };
  // An index past the end names a handle no rule has.
  const index = Math.floor(rnd() * (rules.length + (rnd() < 0.1 ? 1 : 0)));
  return { kind: 'rule-at', verb, chain, index, rule };
}

function setOp(rnd: () => number): Operation {
  const name = pick(rnd, Object.keys(SETS));
  const def = SETS[name];
  // Now and then the same name with another definition, which the kernel refuses.
  const flags = rnd() < 0.1 ? (def.flags ?? 0) ^ C.NFT_SET_INTERVAL : def.flags;
  return { kind: 'set', verb: pick(rnd, ['add', 'add', 'create', 'delete', 'destroy', 'flush'] as const), set: { family: 'inet', table: T, name, ...def, flags } };
}

function elementOp(rnd: () => number): Operation {
  const name = pick(rnd, Object.keys(SETS));
  const set: NftSet = { family: 'inet', table: T, name, ...SETS[name] };
  const elements: SetElement[] = [];
  for (let n = 1 + Math.floor(rnd() * 3); n > 0; n--) {
    if (name === 's1') {
      // Ranges that overlap go in different batches: the kernel refuses an overlap within one
      // message before it looks at the set.
      const [from, to] = pick(rnd, [[1, 4], [3, 6], [5, 8], [10, 10], [20, 29]]);
      if (elements.some((e) => e.key[3] <= to && from <= (e.keyEnd ?? e.key)[3])) continue;
      elements.push(from === to ? { key: addr(from) } : { key: addr(from), keyEnd: addr(to) });
    } else if (name === 'm0') {
      elements.push({ key: addr(1 + Math.floor(rnd() * 6)), verdict: pick(rnd, [{ kind: 'accept' }, { kind: 'drop' }, { kind: 'jump', chain: 'c3' }] as const) });
    } else elements.push({ key: addr(1 + Math.floor(rnd() * 6)) });
  }
  // One element per key in a message: the kernel and the fake both see them in order.
  const unique = [...new Map(elements.map((e) => [e.key.toString('hex'), e])).values()];
  return { kind: 'element', verb: pick(rnd, ['add', 'add', 'add', 'create', 'delete', 'destroy'] as const), set, elements: unique };
}

/** The table with every chain and set the random batches name. */
function startBatch(): AbstractOp[] {
  const ops: AbstractOp[] = [{ kind: 'table', verb: 'add', table: { family: 'inet', name: T, comment: 'managed by nfkube' } }];
  for (const name of [...REGULAR, ...Object.keys(BASE)]) ops.push({ kind: 'chain', verb: 'add', chain: { family: 'inet', table: T, name, base: BASE[name] } });
  for (const [name, def] of Object.entries(SETS)) ops.push({ kind: 'set', verb: 'add', set: { family: 'inet', table: T, name, ...def } });
  return ops;
}

function randomBatch(rnd: () => number, fake: FakeTableStore): AbstractOp[] {
  const ops: AbstractOp[] = [];
  for (let n = 1 + Math.floor(rnd() * 3); n > 0; n--) {
    const r = rnd();
    const op = r < 0.1 ? tableOp(rnd) : r < 0.3 ? chainOp(rnd) : r < 0.6 ? ruleOp(rnd, fake) : r < 0.75 ? setOp(rnd) : elementOp(rnd);
    // Switching a table dormant goes alone: the kernel refuses (EINVAL) some batches that also
    // change its base chains, which the fake does not model.
    if (op.kind === 'table' && (op.table.flags ?? 0) & C.NFT_TABLE_F_DORMANT) return [op];
    ops.push(op);
  }
  return ops;
}

/** The batch for one store: rules named by position get that store's handles. */
async function resolve(store: TableStore, ops: AbstractOp[]): Promise<Transaction> {
  const tx = new Transaction();
  for (const op of ops) {
    if (op.kind !== 'rule-at') {
      tx.add(op);
      continue;
    }
    const rules = (await store.listRules('inet', T, op.chain)).filter((r) => r.chain === op.chain);
    const handle = rules[op.index]?.handle ?? 999_999n;
    if (op.verb === 'delete') tx.add({ kind: 'rule', verb: 'delete', rule: { family: 'inet', table: T, chain: op.chain, exprs: [], handle } });
    else if (op.verb === 'replace') tx.add({ kind: 'rule', verb: 'replace', rule: { ...op.rule!, handle } });
    else tx.add({ kind: 'rule', verb: op.verb, rule: { ...op.rule!, position: handle } });
  }
  return tx;
}

type Outcome = { committed: true } | { code: string; msgIndex?: number };

async function apply(store: TableStore, ops: AbstractOp[]): Promise<Outcome> {
  const tx = await resolve(store, ops);
  try {
    await store.commit(tx, { echo: false });
    return { committed: true };
  } catch (err) {
    if (err instanceof NetlinkError) return { code: err.code, msgIndex: err.msgIndex };
    throw err;
  }
}

function describe(ops: AbstractOp[]): string {
  return ops.map((op) => (op.kind === 'rule-at' ? `${op.verb} rule #${op.index} of ${op.chain}` : new Transaction().add(op).toString())).join('\n');
}

/** The two read-backs differ by this (empty when alike): table presence, flags, owner, contents. */
async function difference(kernel: TableStore, fake: TableStore, writers: Map<number, number>): Promise<string> {
  const [k, f] = [(await kernel.readTable('inet', T)).value, (await fake.readTable('inet', T)).value];
  if (!k || !f) return k || f ? `table present in ${k ? 'the kernel' : 'the fake'} only` : '';
  const flags = (t: Table) => `${t.flags ?? 0} owner ${t.owner === undefined ? 'none' : writers.get(t.owner)} ${t.comment}`;
  if (flags(k.table) !== flags(f.table)) return `table flags: kernel ${flags(k.table)}, fake ${flags(f.table)}`;
  const [km, fm] = [modelFromKernel(k), modelFromKernel(f)];
  const d = diffRulesets(km, fm);
  return isEmptyDiff(d) ? '' : formatDiff(km, fm, d);
}

for (const seed of SEEDS) {
  test(`the fake store and the kernel agree on ${BATCHES} random batches from two writers (seed ${seed})`, async () => {
    await withSandbox(async (sb) => {
      const rnd = mulberry32(seed);
      const second = sb.socket.sibling();
      try {
        const kernel = [new KernelTableStore(sb.socket), new KernelTableStore(second)];
        const fakeA = new FakeTableStore();
        const fake = [fakeA, fakeA.peer()];
        // Port ids differ between the two: owners are compared as writer 0 or 1.
        const writers = new Map<number, number>([
          [kernel[0].portId, 0],
          [kernel[1].portId, 1],
          [fake[0].portId, 0],
          [fake[1].portId, 1],
        ]);
        let committed = 0;
        for (let i = 0; i < BATCHES; i++) {
          const w = rnd() < 0.8 ? 0 : 1;
          // A table to work in, made again when a batch deleted it.
          const ops = fake[w].state.tables.has(`inet ${T}`) ? randomBatch(rnd, fake[w]) : startBatch();
          const genBefore = [await kernel[0].generation(), await fake[0].generation()];
          const [k, f] = [await apply(kernel[w], ops), await apply(fake[w], ops)];
          const where = `seed ${seed} batch ${i} from writer ${w}:\n${describe(ops)}`;
          assert.deepEqual(f, k, `refused or committed alike, ${where}`);
          const moved = [(await kernel[0].generation()) !== genBefore[0], (await fake[0].generation()) !== genBefore[1]];
          assert.equal(moved[1], moved[0], `the generation moves alike, ${where}`);
          assert.equal(await difference(kernel[0], fake[0], writers), '', `read back alike, ${where}`);
          if ('committed' in k) committed++;
        }
        // The batches must exercise both sides: enough commits and enough refusals.
        assert.ok(committed >= BATCHES / 5 && committed < BATCHES, `${committed} of ${BATCHES} committed`);
      } finally {
        await second.close();
      }
    });
  });
}
