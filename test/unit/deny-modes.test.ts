/** The deny tail (drop log, audit accepts) and audit mode: a combination chain's and the default
 * deny chain's text, and the desired table under random events and mode switches equals a full
 * render, with scoped diffs that carry every change; a mode switch writes set elements only. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DesiredTable } from '../../src/policy/render/desired';
import { ChangeScope } from '../../src/pipeline/scope';
import { comboChainName, comboId, Renderer } from '../../src/policy/render/render';
import { PolicyModes } from '../../src/policy/modes';
import { formatTable } from '../../src/nft/format';
import { TableContents } from '../../src/nft/types';
import { PolicyEngine } from '../../src/policy/engine/engine';
import { isEmptyDelta } from '../../src/policy/engine/ir';
import { applyDiff, cloneModel, diffRulesets, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { modelToContents, RulesetModel } from '../../src/ruleset/model';
import { mulberry32 as rng } from '../helpers/prng';
import { NODE, randomChange, World } from '../helpers/random-cluster';

function assertSame(actual: RulesetModel, expected: RulesetModel, where: string): void {
  const d = diffRulesets(actual, expected);
  assert.ok(isEmptyDiff(d), `${where}:\n${formatDiff(actual, expected, d)}`);
}

test('a combination chain ends in the rate-limited drop log and a goto to the default deny: audit accepts, per-address counts, the deny', () => {
  const modes = new PolicyModes('enforce');
  const r = new Renderer({ table: 'nfkube', denyAction: 'drop', log: { group: 100, rate: 10, burst: 5 }, modes });
  const chain = r.comboChain('ingress', ['pabc'], () => 'x/deny-b');
  assert.equal(chain.chain.name, comboChainName(['pabc'], 'ingress'));
  const deny = r.base().chains.find((c) => c.chain.name === 'default_deny_in')!;
  const contents: TableContents = { table: { family: 'inet', name: 'nfkube' }, chains: [chain.chain, deny.chain], sets: [], rules: [...chain.rules, ...deny.rules], elements: new Map() };
  const text = formatTable(contents);
  const id = comboId(['pabc']);
  assert.match(text, new RegExp(`jump pol_pabc_in comment "x\\/deny-b"\n\\s+limit rate 10\\/second burst 5 packets log prefix "nfkube in ${id}" group 100\n\\s+goto default_deny_in\n`));
  assert.match(
    text,
    new RegExp(
      `chain default_deny_in \\{\n` +
        `\\s+ip daddr @audit_v4 update @audited_in_v4 \\{ ip daddr \\} accept comment "audit ingress"\n` +
        `\\s+ip6 daddr @audit_v6 update @audited_in_v6 \\{ ip6 daddr \\} accept comment "audit ingress"\n` +
        `\\s+update @deny_in_v4 \\{ ip daddr \\}\n` +
        `\\s+update @deny_in_v6 \\{ ip6 daddr \\}\n` +
        `\\s+drop comment "default deny ingress"`,
    ),
  );
  // Without the options the combination chain is the jumps, then the goto to the deny.
  const plain = new Renderer({ table: 'nfkube', denyAction: 'drop' });
  assert.equal(plain.comboChain('ingress', ['p'], () => 'p').rules.length, 2);
  assert.equal(plain.base().chains.find((c) => c.chain.name === 'default_deny_out')!.rules.length, 3, 'the two per-address counts, the deny');
});

test('desired table under random events and mode switches equals a full render; switches write set elements only', () => {
  for (let seed = 1; seed <= 20; seed++) {
    const w = new World(rng(seed));
    const modes = new PolicyModes(seed % 5 === 0 ? 'audit' : 'enforce');
    const renderer = new Renderer({ table: 'nfkube', denyAction: 'drop', log: { group: 1, rate: 5, burst: 5 }, modes });
    const engine = new PolicyEngine(NODE);
    const desired = new DesiredTable(renderer, engine.state());
    const committed = cloneModel(desired.model);
    let pending = new ChangeScope();
    for (let i = 0; i < 200; i++) {
      const where = `seed ${seed} step ${i}`;
      let c = randomChange(w);
      if (c.kind === 'Namespace' && c.type === 'upsert') {
        const policyMode = w.pick(['audit', 'audit', 'enforce', 'bogus', undefined]);
        const object = policyMode ? { ...c.object, policyMode } : c.object;
        w.namespaces.set(c.key, object);
        c = { ...c, object };
      }
      const delta =
        c.kind === 'Pod' ? (c.type === 'upsert' ? engine.upsertPod(c.object) : engine.deletePod(c.object))
        : c.kind === 'Namespace' ? (c.type === 'upsert' ? engine.upsertNamespace(c.object) : engine.deleteNamespace(c.object))
        : c.type === 'upsert' ? engine.upsertPolicy(c.object) : engine.deletePolicy(c.object);
      const modeChanged = c.kind === 'Namespace' && (c.type === 'upsert' ? modes.setNamespace(c.object) : modes.deleteNamespace(c.key));
      desired.apply(delta, pending);
      if (modeChanged) {
        const before = cloneModel(desired.model);
        const scope = new ChangeScope();
        desired.namespaceModeChanged(c.key, scope);
        pending.merge(scope);
        if (isEmptyDelta(delta)) {
          const d = diffRulesets(before, desired.model);
          assert.equal(d.addChains.length + d.removeChains.length + d.rewriteChains.length + d.addSets.length + d.removeSets.length + d.replaceSets.length, 0, `${where}: a mode switch changed more than elements`);
        }
      }
      assertSame(desired.model, renderer.full(engine.state()), where);
      if (i % 3 === 2) {
        const d = diffRulesets(committed, desired.model, pending);
        applyDiff(committed, desired.model, d);
        pending = new ChangeScope();
        assertSame(committed, desired.model, `${where} (committed)`);
      }
    }
    assert.ok(modelToContents(desired.model).sets.some((s) => s.name === 'audit_v4'));
  }
});
