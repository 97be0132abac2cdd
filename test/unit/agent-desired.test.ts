/** The desired table the agent keeps up to date event by event equals a full render of the same
 * state, and the changes it records (ChangeScope) are enough for a scoped diff to carry every
 * change to the committed model: what the agent writes per event is exactly what changed. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DesiredTable } from '../../src/policy/render/desired';
import { ChangeScope } from '../../src/pipeline/scope';
import { Renderer } from '../../src/policy/render/render';
import * as C from '../../src/nft/constants';
import { Expr } from '../../src/nft/types';
import { PolicyEngine } from '../../src/policy/engine/engine';
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

test('neighbor discovery passes for IPv6 only: an IPv4 packet with protocol 58 is not let through', () => {
  const { chains } = new Renderer({ table: 'nfkube', denyAction: 'drop' }).base();
  const matchesL4Proto58 = (exprs: Expr[]) => exprs.some((e, i) => e.type === 'meta' && e.key === C.NFT_META_L4PROTO && exprs[i + 1]?.type === 'cmp' && (exprs[i + 1] as { data: Buffer }).data[0] === 58);
  const checksIPv6 = (exprs: Expr[]) => exprs.some((e, i) => e.type === 'meta' && e.key === C.NFT_META_NFPROTO && exprs[i + 1]?.type === 'cmp' && (exprs[i + 1] as { data: Buffer }).data[0] === 10); // NFPROTO_IPV6
  const discovery = chains.flatMap((c) => c.rules).filter((r) => matchesL4Proto58(r.exprs));
  assert.equal(discovery.length, 3, 'one discovery rule per base chain');
  for (const r of discovery) assert.ok(checksIPv6(r.exprs), `${r.chain}: the discovery rule checks the family`);
});
