/** Positional rule edits, pure: applied with the kernel's placement rules (nf_tables_newrule: a
 * NEWRULE with a position and no NLM_F_APPEND goes before that rule, one with NLM_F_APPEND and no
 * position at the chain's end; DELRULE by handle), the edits of random edit sequences turn the old
 * list into the new one, keep as many rules as a longest common subsequence (an O(NM) table here),
 * and are chosen only when cheaper than a rewrite. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as b from '../../src/nft/build';
import { Rule } from '../../src/nft/types';
import { committedRules, MAX_RULE_EDITS, planRuleEdits, RuleEdits } from '../../src/ruleset/rule-edits';
import { applyDiff, cloneModel, diffRulesets, diffTransaction } from '../../src/ruleset/diff';
import { emptyModel, RulesetModel } from '../../src/ruleset/model';
import { mulberry32 } from '../helpers/prng';

/** A rule whose identity is its comment: equal names are identical rules. */
const rule = (name: string, handle?: bigint): Rule => ({ family: 'inet', table: 't', chain: 'c', exprs: [b.counter(), b.accept()], comment: name, ...(handle !== undefined && { handle }) });
const names = (rules: readonly Rule[]): string[] => rules.map((r) => r.comment!);

/** The chain after the edits, by the kernel's rules; new handles from 1000 on. */
function applyAsKernel(from: readonly Rule[], e: RuleEdits): Rule[] {
  let chain = [...from];
  const gone = new Set(e.removed.map((r) => r.handle));
  let next = 1000n;
  for (const p of e.placed) {
    assert.equal(p.rule.handle, undefined, 'a new rule carries no handle');
    const stored = { ...p.rule, handle: next++ };
    delete stored.position;
    if (p.verb === 'add') {
      assert.equal(p.rule.position, undefined, 'an appended rule has no position');
      chain.push(stored);
      continue;
    }
    assert.ok(p.rule.position !== undefined && !gone.has(p.rule.position), 'placed before a rule that stays');
    const at = chain.findIndex((r) => r.handle === p.rule.position);
    assert.ok(at >= 0, `position ${p.rule.position} exists`);
    chain.splice(at, 0, stored);
  }
  for (const h of gone) {
    assert.ok(chain.some((r) => r.handle === h), `deleted handle ${h} exists`);
    chain = chain.filter((r) => r.handle !== h);
  }
  return chain;
}

/** Length of a longest common subsequence, by the textbook table. */
function lcs(a: string[], b2: string[]): number {
  const t = Array.from({ length: a.length + 1 }, () => new Array<number>(b2.length + 1).fill(0));
  for (let i = 1; i <= a.length; i++) for (let j = 1; j <= b2.length; j++) t[i][j] = a[i - 1] === b2[j - 1] ? t[i - 1][j - 1] + 1 : Math.max(t[i - 1][j], t[i][j - 1]);
  return t[a.length][b2.length];
}

/** One random edit: insert at the front, middle or end, delete, move, or duplicate a rule. */
function edit(list: string[], rnd: () => number, fresh: () => string): string[] {
  const out = [...list];
  const at = () => Math.floor(rnd() * (out.length + 1));
  const pick = () => Math.floor(rnd() * out.length);
  const kind = Math.floor(rnd() * 7);
  if (kind === 0) out.unshift(fresh());
  else if (kind === 1) out.push(fresh());
  else if (kind === 2) out.splice(at(), 0, fresh());
  else if (out.length === 0) out.push(fresh());
  else if (kind === 3) out.splice(pick(), 1);
  else if (kind === 4) out.splice(at(), 0, ...out.splice(pick(), 1));
  else if (kind === 5) out.splice(at(), 0, out[pick()]);
  else out.splice(pick(), 1, fresh());
  return out;
}

test('random edit sequences: the edits reach the new list, keep a longest common subsequence, and beat a rewrite', () => {
  const rnd = mulberry32(28);
  let n = 0;
  const fresh = () => `r${n++}`;
  let planned = 0;
  for (let round = 0; round < 400; round++) {
    let handle = 1n;
    const before = Array.from({ length: Math.floor(rnd() * 40) }, () => (rnd() < 0.2 && n > 0 ? `r${Math.floor(rnd() * n)}` : fresh()));
    let after = before;
    for (let k = Math.floor(rnd() * 6); k >= 0; k--) after = edit(after, rnd, fresh);
    const from = before.map((name) => rule(name, handle++));
    const to = after.map((name) => rule(name));
    const e = planRuleEdits(from, to);
    const common = lcs(before, after);
    const cost = before.length + after.length - 2 * common;
    if (cost >= after.length + 1) {
      assert.equal(e, undefined, `round ${round}: ${cost} edits cost no less than a rewrite of ${after.length}`);
      continue;
    }
    assert.ok(e, `round ${round}: ${cost} edits are cheaper than a rewrite of ${after.length}`);
    planned++;
    assert.equal(e.removed.length + e.placed.length, cost, `round ${round}: as few edits as a longest common subsequence allows`);
    assert.deepEqual(names(applyAsKernel(from, e)), after, `round ${round}: ${before.join(',')} -> ${after.join(',')}`);
    assert.deepEqual(names(e.result), after);
  }
  assert.ok(planned > 200, `most rounds are edits (${planned})`);
});

test('identical rules are matched in order; a moved duplicate is one delete and one insert', () => {
  const from = ['a', 'x', 'b', 'x', 'c'].map((name, i) => rule(name, BigInt(i + 1)));
  const to = ['a', 'x', 'x', 'b', 'c'].map((name) => rule(name));
  const e = planRuleEdits(from, to)!;
  assert.equal(e.removed.length + e.placed.length, 2);
  assert.deepEqual(names(applyAsKernel(from, e)), ['a', 'x', 'x', 'b', 'c']);
});

test('a rule without a known handle, or an edit past the bound, makes the chain a rewrite', () => {
  const to = ['a', 'b', 'c'].map((name) => rule(name));
  assert.equal(planRuleEdits([rule('a', 1n), rule('c')], to), undefined, 'handle unknown');
  const long = Array.from({ length: 3 * MAX_RULE_EDITS }, (_, i) => `k${i}`);
  const from = long.map((name, i) => rule(name, BigInt(i + 1)));
  const shuffled = [...long.slice(MAX_RULE_EDITS), ...long.slice(0, MAX_RULE_EDITS).reverse()];
  assert.equal(planRuleEdits(from, shuffled.map((name) => rule(name))), undefined, 'more edits than the bound');
  assert.ok(planRuleEdits(from, [...long.slice(1), 'new'].map((name) => rule(name))), 'two edits in a long chain');
});

test('committed rules take the echoed handles of placed rules and keep the kept ones', () => {
  const from = [rule('a', 1n), rule('c', 2n)];
  const e = planRuleEdits(from, ['a', 'b', 'c', 'd'].map((name) => rule(name)))!;
  const echoed = new Map([[e.placed[0].rule, 7n]]);
  const rules = committedRules(e, echoed);
  assert.deepEqual(
    rules.map((r) => [r.comment, r.handle, r.position]),
    [
      ['a', 1n, undefined],
      ['b', 7n, undefined],
      ['c', 2n, undefined],
      ['d', undefined, undefined],
    ],
  );
});

/** A table with a base chain jumping to `pol`, whose rules are `rules`. */
function tableWith(rules: Rule[]): RulesetModel {
  const m = emptyModel({ family: 'inet', name: 't' });
  m.chains.set('input', { chain: { family: 'inet', table: 't', name: 'input', base: { hook: 'input', priority: 0, type: 'filter', policy: 'accept' } }, rules: [{ ...rule('in'), chain: 'input', exprs: [b.jump('c')] }] });
  m.chains.set('c', { chain: { family: 'inet', table: 't', name: 'c' }, rules });
  return m;
}

test('the diff edits a chain with known handles in place: DELRULE by handle, NEWRULE before a kept rule, no flush', () => {
  const committed = tableWith(['a', 'b', 'c', 'd'].map((name, i) => rule(name, BigInt(i + 10))));
  const desired = tableWith(['a', 'x', 'c', 'd'].map((name) => rule(name)));
  const d = diffRulesets(committed, desired);
  assert.deepEqual(d.rewriteChains, ['c']);
  const tx = diffTransaction(committed, desired, d);
  assert.deepEqual(tx.toString().split('\n'), ['delete rule inet t c handle 11', 'insert rule inet t c position 12 counter packets 0 bytes 0 accept comment "x"']);
  const after = cloneModel(committed);
  applyDiff(after, desired, d, new Map([[d.ruleEdits!.get('c')!.placed[0].rule, 99n]]));
  assert.deepEqual(
    after.chains.get('c')!.rules.map((r) => [r.comment, r.handle]),
    [
      ['a', 10n],
      ['x', 99n],
      ['c', 12n],
      ['d', 13n],
    ],
  );
  const without = tableWith(['a', 'b', 'c', 'd'].map((name) => rule(name)));
  assert.match(diffTransaction(without, desired, diffRulesets(without, desired)).toString(), /^flush chain inet t c\n/, 'handles unknown: flushed and written again');
});
