/** The desired table the agent keeps up to date event by event equals a full render of the same
 * state, and the changes it records (ChangeScope) are enough for a scoped diff to carry every
 * change to the committed model: what the agent writes per event is exactly what changed. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ChangeScope, DesiredTable } from '../../src/agent/desired';
import { Renderer } from '../../src/agent/render';
import { PolicyEngine } from '../../src/policy/engine';
import { applyDiff, cloneModel, diffRulesets, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { RulesetModel } from '../../src/ruleset/model';
import { mulberry32 as rng } from '../helpers/prng';
import { NODE, step, World } from '../helpers/random-cluster';

function assertSame(actual: RulesetModel, expected: RulesetModel, where: string): void {
  const d = diffRulesets(actual, expected);
  assert.ok(isEmptyDiff(d), `${where}:\n${formatDiff(actual, expected, d)}`);
}

test('desired table after every random event equals a full render; scoped diffs carry every change', () => {
  const renderer = new Renderer({ table: 'nfkube', denyAction: 'drop' });
  for (let seed = 1; seed <= 25; seed++) {
    const w = new World(rng(seed));
    const engine = new PolicyEngine(NODE);
    const desired = new DesiredTable(renderer, engine.state());
    const committed = cloneModel(desired.model);
    let pending = new ChangeScope();
    for (let i = 0; i < 200; i++) {
      desired.apply(step(w, engine), pending);
      const where = `seed ${seed} step ${i}`;
      assertSame(desired.model, renderer.full(engine.state()), where);
      // Commits, as the agent's, every few events: the scope accumulated since the last one.
      if (i % 3 === 2) {
        const d = diffRulesets(committed, desired.model, pending);
        applyDiff(committed, desired.model, d);
        pending = new ChangeScope();
        assertSame(committed, desired.model, `${where} (committed)`);
      }
    }
  }
});
