/** The desired model (src/pipeline/desired-model.ts), pure, no kernel: every put and delete
 * records in the scope what it changed and nothing else; a claimed chain or set exists exactly
 * while it has claimants; a claimed element holds the first claimant's (by key) rendering, and
 * the next one's takes over when it leaves. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CLAIMED_BY, DesiredModel } from '../../src/pipeline/desired-model';
import { ChangeScope } from '../../src/pipeline/scope';
import { applyDiff, cloneModel, diffRulesets, isEmptyDiff } from '../../src/ruleset/diff';
import { ChainModel, elementKey, emptyModel, SetModel } from '../../src/ruleset/model';
import type { SetElement } from '../../src/nft/types';
import { mulberry32 as rng } from '../helpers/prng';

const TABLE = { family: 'inet' as const, name: 'nfkube-test' };

function chain(name: string, comment = 'a'): ChainModel {
  return { chain: { family: 'inet', table: TABLE.name, name }, rules: [{ family: 'inet', table: TABLE.name, chain: name, exprs: [{ type: 'immediate', dreg: 0, verdict: { kind: 'accept' } }], comment }] };
}

function verdictMap(name: string, elements: SetElement[] = []): SetModel {
  return { set: { family: 'inet', table: TABLE.name, name, key: ['ipv4_addr'], data: 'verdict', flags: 0 }, elements: new Map(elements.map((e) => [elementKey(e), e])) };
}

function jumpTo(address: number, target: string): SetElement {
  return { key: Buffer.from([198, 18, 0, address]), verdict: { kind: 'goto', chain: target } };
}

function fresh(): { d: DesiredModel; scope: ChangeScope } {
  const d = new DesiredModel(emptyModel(TABLE));
  d.putSet('vmap', verdictMap('vmap'));
  const scope = new ChangeScope();
  d.recordingIn(scope);
  return { d, scope };
}

function recorded(scope: ChangeScope): string[] {
  return [...[...scope.chains].map((c) => `chain ${c}`), ...[...scope.sets].map((s) => `set ${s}`), ...[...scope.elements].flatMap(([s, keys]) => [...keys].map((k) => `element ${s} ${k}`))].sort();
}

test('puts and deletes record what they changed and nothing else', () => {
  const { d, scope } = fresh();
  const c = chain('one');
  d.putChain('one', c);
  d.putChain('one', c);
  d.putChain('gone', undefined);
  assert.deepEqual(recorded(scope), ['chain one'], 'a new chain; the same object again and an absent one deleted are no change');

  const s2 = new ChangeScope();
  d.recordingIn(s2);
  d.refreshChain('one', chain('one'));
  assert.deepEqual(recorded(s2), [], 'an equal chain rendered again');
  assert.notEqual(d.model.chains.get('one'), c, 'the model keeps the latest render');
  d.refreshChain('one', chain('one', 'b'));
  assert.deepEqual(recorded(s2), ['chain one']);

  const s3 = new ChangeScope();
  d.recordingIn(s3);
  const e = jumpTo(1, 'x');
  d.putElement('vmap', elementKey(e), e);
  d.putElement('vmap', elementKey(e), jumpTo(1, 'x'));
  d.deleteElement('vmap', elementKey(jumpTo(2, 'x')));
  assert.deepEqual(recorded(s3), [`element vmap ${elementKey(e)}`], 'an equal element again and an absent one deleted are no change');

  const s4 = new ChangeScope();
  d.recordingIn(s4);
  d.putSet('vmap', verdictMap('vmap', [jumpTo(1, 'x'), jumpTo(3, 'y')]));
  assert.deepEqual(recorded(s4), [`element vmap ${elementKey(jumpTo(3, 'y'))}`], 'a set of the same definition: the elements that differ');
  d.putSet('other', verdictMap('other'));
  d.putSet('vmap', undefined);
  assert.deepEqual(recorded(s4), [`element vmap ${elementKey(jumpTo(3, 'y'))}`, 'set other', 'set vmap']);
  assert.throws(() => d.putElement('vmap', '00', jumpTo(0, 'x')), /no set vmap/);
});

test('a claimed chain or set exists while it has claimants, recorded when it appears and goes', () => {
  const { d, scope } = fresh();
  let made = 0;
  const make = () => (made++, chain('combo'));
  assert.equal(d.claimChain('combo', 'pod-b', make), true);
  assert.equal(d.claimChain('combo', 'pod-a', make), false);
  assert.equal(d.claimChain('combo', 'pod-a', make), false, 'a second claim by one owner counts once');
  assert.equal(made, 1);
  assert.deepEqual([...d.claimants('chain combo')].sort(), ['pod-a', 'pod-b']);
  const first = new ChangeScope();
  d.recordingIn(first);
  assert.equal(d.releaseChain('combo', 'pod-b'), false);
  assert.equal(d.releaseChain('combo', 'nobody'), false);
  assert.ok(d.model.chains.has('combo'));
  assert.deepEqual(recorded(first), [], 'a claimant leaving while another stays changes nothing');
  assert.equal(d.releaseChain('combo', 'pod-a'), true);
  assert.ok(!d.model.chains.has('combo'));
  assert.deepEqual(recorded(first), ['chain combo']);
  assert.deepEqual(recorded(scope), ['chain combo']);

  const sets = new ChangeScope();
  d.recordingIn(sets);
  assert.equal(d.claimSet('ports', 'policy-1', () => verdictMap('ports')), true);
  assert.equal(d.claimSet('ports', 'policy-2', () => assert.fail('made twice')), false);
  assert.equal(d.releaseSet('ports', 'policy-1'), false);
  assert.ok(d.model.sets.has('ports'));
  assert.equal(d.releaseSet('ports', 'policy-2'), true);
  assert.ok(!d.model.sets.has('ports'));
  assert.deepEqual(recorded(sets), ['set ports']);
});

test('a claimed element: the first claimant by key is in force, the next takes over when it leaves', () => {
  const { d } = fresh();
  const k = elementKey(jumpTo(2, 'x'));
  const rendering: Record<string, SetElement> = { 'ns/b': jumpTo(2, 'combo-b'), 'ns/a': jumpTo(2, 'combo-a'), 'ns/c': jumpTo(2, 'combo-b') };
  const elementOf = (owner: string) => ({ ...rendering[owner] });
  const step = (what: () => boolean): { result: boolean; scope: string[] } => {
    const scope = new ChangeScope();
    d.recordingIn(scope);
    const result = what();
    return { result, scope: recorded(scope) };
  };
  assert.deepEqual(step(() => d.claimElement('vmap', k, 'ns/b', elementOf('ns/b'))), { result: true, scope: [`element vmap ${k}`] });
  assert.deepEqual(step(() => d.claimElement('vmap', k, 'ns/c', elementOf('ns/c'))), { result: false, scope: [] }, 'a later claimant: nothing changes');
  assert.deepEqual(step(() => d.claimElement('vmap', k, 'ns/a', elementOf('ns/a'))), { result: false, scope: [`element vmap ${k}`] }, 'an earlier claimant takes over');
  assert.equal(d.model.sets.get('vmap')!.elements.get(k)!.verdict!.kind === 'goto' && (d.model.sets.get('vmap')!.elements.get(k)!.verdict as { chain: string }).chain, 'combo-a');
  assert.equal(d.holderOf('vmap', k), 'ns/a');
  assert.deepEqual((d.model.sets.get('vmap')!.elements.get(k) as { [CLAIMED_BY]?: unknown })[CLAIMED_BY], ['ns/a', 'ns/b', 'ns/c'], 'the claimants, sorted, on the element in force');

  assert.deepEqual(step(() => d.releaseElement('vmap', k, 'ns/a', elementOf)), { result: false, scope: [`element vmap ${k}`] }, "the next one's rendering takes over");
  assert.equal(d.holderOf('vmap', k), 'ns/b');
  assert.deepEqual(step(() => d.releaseElement('vmap', k, 'ns/b', elementOf)), { result: false, scope: [] }, 'a hand-over to an equal element records nothing');
  assert.equal(d.holderOf('vmap', k), 'ns/c');
  assert.deepEqual(step(() => d.releaseElement('vmap', k, 'ns/x', elementOf)), { result: false, scope: [] }, 'no claimant of it');
  assert.deepEqual(step(() => d.releaseElement('vmap', k, 'ns/c', elementOf)), { result: true, scope: [`element vmap ${k}`] }, 'the last one leaves: gone');
  assert.ok(!d.model.sets.get('vmap')!.elements.has(k));
});

test('random claims and releases: the model is the first claimant’s rendering, and the scope is exactly what changed', () => {
  for (let seed = 1; seed <= 20; seed++) {
    const rand = rng(seed);
    const { d } = fresh();
    const owners = ['p/a', 'p/b', 'p/c', 'p/d'];
    const addresses = [1, 2, 3];
    /** owner -> address -> the chain its element goes to */
    const claims = new Map<string, Map<number, string>>(owners.map((o) => [o, new Map()]));
    const elementOf = (address: number) => (owner: string) => jumpTo(address, claims.get(owner)!.get(address)!);
    const committed = cloneModel(d.model);
    for (let i = 0; i < 200; i++) {
      const owner = owners[Math.floor(rand() * owners.length)];
      const address = addresses[Math.floor(rand() * addresses.length)];
      const k = elementKey(jumpTo(address, ''));
      const before = cloneModel(d.model);
      const scope = new ChangeScope();
      d.recordingIn(scope);
      if (claims.get(owner)!.has(address) && rand() < 0.5) {
        const gone = d.releaseElement('vmap', k, owner, (next) => elementOf(address)(next));
        claims.get(owner)!.delete(address);
        assert.equal(gone, owners.every((o) => !claims.get(o)!.has(address)), `seed ${seed} step ${i}: gone`);
      } else {
        claims.get(owner)!.set(address, rand() < 0.5 ? 'x' : 'y');
        d.claimElement('vmap', k, owner, elementOf(address)(owner));
      }
      for (const a of addresses) {
        const holders = owners.filter((o) => claims.get(o)!.has(a)).sort();
        const e = d.model.sets.get('vmap')!.elements.get(elementKey(jumpTo(a, '')));
        assert.deepEqual(e && { key: e.key, verdict: e.verdict }, holders.length ? jumpTo(a, claims.get(holders[0])!.get(a)!) : undefined, `seed ${seed} step ${i}: address ${a}`);
        assert.equal(d.holderOf('vmap', elementKey(jumpTo(a, ''))), holders[0]);
      }
      const changed = diffRulesets(before, d.model);
      const keys = [...changed.addElementKeys!.get('vmap') ?? [], ...changed.removeElementKeys!.get('vmap') ?? []];
      assert.deepEqual(recorded(scope), [...new Set(keys)].map((x) => `element vmap ${x}`).sort(), `seed ${seed} step ${i}: the scope is what changed`);
      applyDiff(committed, d.model, diffRulesets(committed, d.model, scope));
      assert.ok(isEmptyDiff(diffRulesets(committed, d.model)), `seed ${seed} step ${i}: the scoped diff carried every change`);
    }
  }
});
