/** The planner decides from a table read back, with no kernel: noop, diff or replace, and the
 * drift it reports (none at start, where a difference is what changed since the previous run). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Renderer } from '../../src/policy/render/render';
import { NFT_TABLE_F_DORMANT } from '../../src/nft/constants';
import { plan, repairedCounts } from '../../src/pipeline/plan';
import { compileFull } from '../../src/policy/engine/compile';
import { cloneModel, diffRulesets, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { emptyModel, RulesetModel, tableFlagsProblem } from '../../src/ruleset/model';
import { baseCluster, NODE } from '../agent/fixtures';

function desiredModel(): RulesetModel {
  const snap = baseCluster().snapshot();
  const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, NODE);
  return new Renderer({ table: 'nfkube', denyAction: 'drop' }).full(ir);
}

test('a missing table at start is created whole, with no problem or drift to report', () => {
  const desired = desiredModel();
  const p = plan(undefined, undefined, desired, true);
  assert.equal(p.action, 'replace');
  assert.equal(p.action === 'replace' && p.problem, undefined);
  assert.equal(p.drift, undefined);
  assert.deepEqual(p.diff, diffRulesets(emptyModel(desired.table), desired), 'the diff is the replacement: everything, from an empty table');
});

test('a table that went missing while running is replaced and reported as drift', () => {
  const desired = desiredModel();
  const p = plan(undefined, undefined, desired, false);
  assert.equal(p.action, 'replace');
  if (p.action !== 'replace') return;
  assert.equal(p.problem, 'table inet nfkube missing');
  assert.equal(p.drift, 'table inet nfkube missing');
  assert.deepEqual(p.repaired, { table: 1 });
});

test('a dormant table is replaced, at start without drift, on a resync with the flags as drift', () => {
  const desired = desiredModel();
  const kernel = cloneModel(desired);
  const flags = tableFlagsProblem({ family: 'inet', name: 'nfkube', flags: NFT_TABLE_F_DORMANT });
  assert.ok(flags);
  const atStart = plan(kernel, flags, desired, true);
  assert.equal(atStart.action, 'replace');
  assert.equal(atStart.action === 'replace' && atStart.problem, flags);
  assert.equal(atStart.drift, undefined);
  const later = plan(kernel, flags, desired, false);
  assert.equal(later.action, 'replace');
  assert.equal(later.drift, flags);
  assert.deepEqual(later.action === 'replace' && later.repaired, { table: 1 });
  assert.ok(isEmptyDiff(later.diff), 'the content itself is equal: only the flags are wrong');
});

test('an equal table is left alone: noop, and on a resync the drift is empty', () => {
  const desired = desiredModel();
  const atStart = plan(cloneModel(desired), undefined, desired, true);
  assert.equal(atStart.action, 'noop');
  assert.equal(atStart.drift, undefined);
  const later = plan(cloneModel(desired), undefined, desired, false);
  assert.equal(later.action, 'noop');
  assert.equal(later.drift, '');
});

test('a table that differs gets exactly the difference; a resync reports it in formatDiff notation', () => {
  const desired = desiredModel();
  const kernel = cloneModel(desired);
  // A foreign chain, and one element missing from a set that has some.
  kernel.chains.set('stale', { chain: { family: 'inet', table: 'nfkube', name: 'stale' }, rules: [] });
  const [setName, set] = [...kernel.sets].find(([, s]) => s.elements.size > 0)!;
  const [key] = set.elements.keys();
  set.elements.delete(key);

  const atStart = plan(kernel, undefined, desired, true);
  assert.equal(atStart.action, 'diff');
  if (atStart.action !== 'diff') return;
  assert.deepEqual(atStart.diff.removeChains, ['stale']);
  assert.deepEqual([...atStart.diff.addElements.keys()], [setName]);
  assert.deepEqual(atStart.changes, { chain: 1, element: 1 });
  assert.equal(atStart.drift, undefined, 'at start a difference is not drift');
  assert.equal(atStart.repaired, undefined);

  const later = plan(kernel, undefined, desired, false);
  assert.equal(later.action, 'diff');
  if (later.action !== 'diff') return;
  assert.equal(later.drift, formatDiff(kernel, desired, later.diff));
  assert.match(later.drift!, /^- chain stale$/m);
  assert.match(later.drift!, new RegExp(`^\\+ element ${setName} \\{`, 'm'));
  assert.deepEqual(later.repaired, { chain: 1, element: 1 });
});

test('planning changes neither the kernel model nor the desired one', () => {
  const desired = desiredModel();
  const kernel = cloneModel(desired);
  kernel.sets.delete([...kernel.sets.keys()][0]);
  const snapshot = (m: RulesetModel) => JSON.stringify({ chains: [...m.chains.keys()], sets: [...m.sets].map(([k, s]) => [k, [...s.elements.keys()]]) });
  const before = [snapshot(kernel), snapshot(desired)];
  plan(kernel, undefined, desired, false);
  assert.deepEqual([snapshot(kernel), snapshot(desired)], before);
});

test('repaired counts leave out kinds with no change', () => {
  const desired = desiredModel();
  assert.deepEqual(repairedCounts(diffRulesets(desired, desired)), {});
  const d = diffRulesets(emptyModel(desired.table), desired);
  const counts = repairedCounts(d);
  assert.equal(counts.chain, desired.chains.size);
  assert.equal(counts.set, desired.sets.size);
});
