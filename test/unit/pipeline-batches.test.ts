/** Bounded batches (src/pipeline/batches.ts), without a kernel: random policy clusters rendered
 * before and after random changes, the difference cut into tiny batches and applied one batch at
 * a time to an in-memory table that refuses what nf_tables refuses (a reference to a missing
 * object, a chain deleted while it has rules, an element added twice with another value). After
 * every batch, everything a packet can reach from a base chain is whole: each reachable chain
 * holds exactly its rules before or after, each reachable new set all its elements; at the end
 * the table is the desired one. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Renderer } from '../../src/policy/render/render';
import { boundedBatches, batchTestHooks, BatchLimits } from '../../src/pipeline/batches';
import { compileFull } from '../../src/policy/engine/compile';
import { diffRulesets, diffTransaction } from '../../src/ruleset/diff';
import { elementKey, emptyModel, RulesetModel, sameElementValue, sameRules } from '../../src/ruleset/model';
import { Operation, Rule, SetElement, Verdict } from '../../src/nft/types';
import { NODE, randomChange, World } from '../helpers/random-cluster';
import { mulberry32 } from '../helpers/prng';

const TINY: BatchLimits = { objects: 3, elements: 4 };

function render(w: World): RulesetModel {
  const ir = compileFull({ pods: w.pods.values(), namespaces: w.namespaces.values(), policies: w.policies.values() }, NODE);
  return new Renderer({ table: 'nfkube', denyAction: 'drop' }).full(ir);
}

interface Memory {
  chains: Map<string, { base: boolean; rules: Rule[] }>;
  sets: Map<string, Map<string, SetElement>>;
}

function memoryOf(m: RulesetModel): Memory {
  return {
    chains: new Map([...m.chains].map(([n, c]) => [n, { base: !!c.chain.base, rules: [...c.rules] }])),
    sets: new Map([...m.sets].map(([n, s]) => [n, new Map(s.elements)])),
  };
}

const jumpTarget = (v: Verdict | undefined): string | undefined => (v && (v.kind === 'jump' || v.kind === 'goto') ? v.chain : undefined);

function ruleRefs(r: Rule): { chains: string[]; sets: string[] } {
  const chains: string[] = [];
  const sets: string[] = [];
  for (const e of r.exprs) {
    if (e.type === 'lookup') sets.push(e.set);
    if (e.type === 'immediate' && jumpTarget(e.verdict)) chains.push(jumpTarget(e.verdict)!);
  }
  return { chains, sets };
}

function referenced(mem: Memory, chain: string): boolean {
  for (const c of mem.chains.values()) if (c.rules.some((r) => ruleRefs(r).chains.includes(chain))) return true;
  for (const s of mem.sets.values()) for (const e of s.values()) if (jumpTarget(e.verdict) === chain) return true;
  return false;
}

/** Applies one operation as nf_tables would, throwing where it would refuse. */
function applyOp(mem: Memory, op: Operation): void {
  switch (op.kind) {
    case 'table':
      if (op.verb === 'delete') {
        mem.chains.clear();
        mem.sets.clear();
      }
      return;
    case 'chain': {
      const name = op.chain.name;
      if (op.verb === 'add') {
        if (!mem.chains.has(name)) mem.chains.set(name, { base: !!op.chain.base, rules: [] });
        return;
      }
      const c = mem.chains.get(name);
      assert.ok(c, `${op.verb} of missing chain ${name}`);
      if (op.verb === 'flush') c.rules = [];
      else {
        assert.equal(c.rules.length, 0, `delete of chain ${name} with rules`);
        assert.ok(!referenced(mem, name), `delete of chain ${name} still referenced`);
        mem.chains.delete(name);
      }
      return;
    }
    case 'rule': {
      assert.equal(op.verb, 'add');
      const c = mem.chains.get(op.rule.chain);
      assert.ok(c, `rule in missing chain ${op.rule.chain}`);
      const refs = ruleRefs(op.rule);
      for (const s of refs.sets) assert.ok(mem.sets.has(s), `rule looks up missing set ${s}`);
      for (const t of refs.chains) assert.ok(mem.chains.has(t), `rule jumps to missing chain ${t}`);
      c.rules.push(op.rule);
      return;
    }
    case 'set':
      if (op.verb === 'add') mem.sets.set(op.set.name, new Map());
      else {
        for (const c of mem.chains.values()) assert.ok(!c.rules.some((r) => ruleRefs(r).sets.includes(op.set.name)), `delete of set ${op.set.name} still looked up`);
        mem.sets.delete(op.set.name);
      }
      return;
    case 'element': {
      const s = mem.sets.get(op.set.name);
      assert.ok(s, `elements of missing set ${op.set.name}`);
      for (const e of op.elements) {
        const k = elementKey(e);
        if (op.verb === 'delete') {
          assert.ok(s.has(k), `delete of missing element ${k} in ${op.set.name}`);
          s.delete(k);
        } else {
          const old = s.get(k);
          assert.ok(!old || sameElementValue(old, e), `element ${k} of ${op.set.name} added again with another value`);
          if (jumpTarget(e.verdict)) assert.ok(mem.chains.has(jumpTarget(e.verdict)!), `element jumps to missing chain`);
          s.set(k, e);
        }
      }
      return;
    }
  }
}

/** Everything reachable from a base chain is whole: its rules as before or as after, and a set it
 * looks up that did not exist before holds all its elements. */
function assertNothingHalfProgrammed(mem: Memory, from: RulesetModel, to: RulesetModel, where: string): void {
  const seen = new Set<string>();
  const todo = [...mem.chains].filter(([, c]) => c.base).map(([n]) => n);
  while (todo.length) {
    const name = todo.pop()!;
    if (seen.has(name)) continue;
    seen.add(name);
    const c = mem.chains.get(name)!;
    const before = from.chains.get(name)?.rules;
    const after = to.chains.get(name)?.rules;
    assert.ok((before && sameRules(c.rules, before)) || (after && sameRules(c.rules, after)), `${where}: chain ${name} is reachable and half-programmed`);
    for (const r of c.rules) {
      const refs = ruleRefs(r);
      todo.push(...refs.chains);
      for (const s of refs.sets) {
        const elements = mem.sets.get(s)!;
        if (!from.sets.has(s)) assert.equal(elements.size, to.sets.get(s)!.elements.size, `${where}: new set ${s} is looked up before it is full`);
        for (const e of elements.values()) if (jumpTarget(e.verdict)) todo.push(jumpTarget(e.verdict)!);
      }
    }
  }
}

function assertEqualMemory(mem: Memory, to: RulesetModel): void {
  assert.deepEqual([...mem.chains.keys()].sort(), [...to.chains.keys()].sort());
  for (const [n, c] of to.chains) assert.ok(sameRules(mem.chains.get(n)!.rules, c.rules), `chain ${n}`);
  assert.deepEqual([...mem.sets.keys()].sort(), [...to.sets.keys()].sort());
  for (const [n, s] of to.sets) assert.deepEqual([...mem.sets.get(n)!.keys()].sort(), [...s.elements.keys()].sort(), `set ${n}`);
}

function runBatches(from: RulesetModel, to: RulesetModel, limits: BatchLimits): number {
  const batches = boundedBatches(from, to, diffRulesets(from, to), limits);
  if (!batches) return 0;
  const mem = memoryOf(from);
  batches.forEach((tx, i) => {
    for (const op of tx.operations) applyOp(mem, op);
    assertNothingHalfProgrammed(mem, from, to, `after batch ${i + 1} of ${batches.length}`);
  });
  assertEqualMemory(mem, to);
  return batches.length;
}

test('random clusters: every batch boundary leaves nothing reachable half-programmed, and the last the desired table', () => {
  let cut = 0;
  for (let seed = 1; seed <= 40; seed++) {
    const w = new World(mulberry32(seed));
    for (let i = 0; i < 25; i++) randomChange(w);
    const before = render(w);
    for (let i = 0; i < 15; i++) randomChange(w);
    const after = render(w);
    // A first start (from nothing), a restart over a changed cluster, and back.
    for (const [from, to] of [
      [emptyModel(after.table), after],
      [before, after],
      [after, before],
    ] as const) {
      if (runBatches(from, to, TINY) > 1) cut++;
    }
  }
  assert.ok(cut > 40, `the tiny limits cut most syncs into several batches (${cut})`);
});

test('batches stay within the limits unless one chain with its rules is larger', () => {
  const w = new World(mulberry32(7));
  for (let i = 0; i < 40; i++) randomChange(w);
  const to = render(w);
  const from = emptyModel(to.table);
  const d = diffRulesets(from, to);
  const batches = boundedBatches(from, to, d, TINY)!;
  const whole = diffTransaction(from, to, d);
  assert.equal(
    batches.reduce((n, tx) => n + tx.operations.filter((op) => op.kind !== 'element').length, 0),
    whole.operations.filter((op) => op.kind !== 'element').length,
    'the same objects as one transaction',
  );
  for (const tx of batches) {
    const objects = tx.operations.filter((op) => op.kind !== 'element');
    const elements = tx.operations.reduce((n, op) => n + (op.kind === 'element' ? op.elements.length : 0), 0);
    assert.ok(elements <= TINY.elements || tx.operations.length === 1, `${elements} elements`);
    const oneChain = objects.every((op) => op.kind === 'chain' || (op.kind === 'rule' && op.rule.chain === (objects[0] as { chain: { name: string } }).chain?.name));
    assert.ok(objects.length <= TINY.objects || oneChain, `${objects.length} objects in a batch that is not one chain`);
  }
});

test('a value changed under an existing key is removed and added in the same batch', () => {
  const w = new World(mulberry32(3));
  for (let i = 0; i < 30; i++) randomChange(w);
  const before = render(w);
  const after = render(w);
  const [name, s] = [...after.sets].find(([, s]) => s.set.flags !== undefined && [...s.elements.values()].some((e) => e.verdict))!;
  const [key, e] = [...s.elements].find(([, e]) => e.verdict)!;
  // The same key now jumps to another chain that exists before and after.
  const other = [...after.chains.values()].find((c) => !c.chain.base && c.chain.name !== jumpTarget(e.verdict))!.chain.name;
  s.elements.set(key, { ...e, verdict: { kind: 'goto', chain: other } });
  const batches = boundedBatches(before, after, diffRulesets(before, after), { objects: 1, elements: 1 })!;
  const holding = batches.filter((tx) => tx.operations.some((op) => op.kind === 'element' && op.set.name === name));
  assert.equal(holding.length, 1);
  assert.deepEqual(
    holding[0].operations.map((op) => op.verb),
    ['delete', 'add'],
  );
  assert.equal(runBatches(before, after, { objects: 1, elements: 1 }), batches.length);
});

test('a replaced set is left to one transaction', () => {
  const w = new World(mulberry32(5));
  for (let i = 0; i < 30; i++) randomChange(w);
  const before = render(w);
  const after = render(w);
  const [name, s] = [...after.sets][0];
  after.sets.set(name, { set: { ...s.set, flags: (s.set.flags ?? 0) ^ 0x40 }, elements: s.elements });
  const d = diffRulesets(before, after);
  assert.deepEqual(d.replaceSets, [name]);
  assert.equal(boundedBatches(before, after, d, TINY), undefined);
});

test('the crash test hooks come from the environment and bad values are refused by name', () => {
  assert.deepEqual(batchTestHooks({}), {});
  assert.deepEqual(batchTestHooks({ NFKUBE_TEST_BATCH_LIMITS: '5,20', NFKUBE_TEST_KILL_AFTER_BATCH: '3' }), { batchLimits: { objects: 5, elements: 20 }, killAfterBatch: 3 });
  assert.throws(() => batchTestHooks({ NFKUBE_TEST_BATCH_LIMITS: '5' }), /NFKUBE_TEST_BATCH_LIMITS: "5" is not OBJECTS,ELEMENTS/);
  assert.throws(() => batchTestHooks({ NFKUBE_TEST_KILL_AFTER_BATCH: '0' }), /NFKUBE_TEST_KILL_AFTER_BATCH: "0"/);
});
