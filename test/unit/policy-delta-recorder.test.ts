/** DeltaRecorder, the one place an engine call's changes become its PolicyDelta: net element
 * changes of sets that existed, whole contents of created ones, nothing for a change undone
 * within the call. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DeltaRecorder, type DeltaSources, type SettledSets } from '../../src/policy/engine/delta-recorder';
import { emptyDelta, type IpBlockSet, type NamedPortSet, type PeerSet } from '../../src/policy/engine/ir';
import { tripleKey } from '../../src/policy/engine/objects';

/** Sets as fixed data: `live` says which exist after the call. */
function sets<S>(live: Record<string, S>): SettledSets<S> {
  return { settle: (id) => id in live, contents: (id) => live[id] };
}

function sources(peer: Record<string, PeerSet>, named: Record<string, NamedPortSet> = {}, ipBlock: Record<string, IpBlockSet> = {}): DeltaSources {
  return { settleTarget: () => undefined, policy: () => undefined, peerSets: sets(peer), ipBlockSets: sets(ipBlock), namedPortSets: sets(named) };
}

test('peer sets: net element changes of a set that existed, sorted and split by family; an undone change is not reported', () => {
  const rec = new DeltaRecorder();
  assert.equal(rec.peerSets.touch('ps1', true), true);
  for (const ip of ['198.18.0.9', '2001:db8::1', '198.18.0.2']) rec.peerSets.changed('ps1', ip, +1);
  rec.peerSets.changed('ps1', '198.18.0.7', -1);
  rec.peerSets.changed('ps1', '198.18.0.8', +1);
  rec.peerSets.changed('ps1', '198.18.0.8', -1);
  assert.equal(rec.peerSets.touch('ps1', false), true, 'the first touch decides');
  const delta = rec.finish(sources({ ps1: { id: 'ps1', describe: 'd', v4: [], v6: [] } }));
  assert.deepStrictEqual(delta.peerSets.add, [{ set: 'ps1', v4: ['198.18.0.2', '198.18.0.9'], v6: ['2001:db8::1'] }]);
  assert.deepStrictEqual(delta.peerSets.del, [{ set: 'ps1', v4: ['198.18.0.7'], v6: [] }]);
  assert.deepStrictEqual(delta.peerSets.create, []);
});

test('sets created in the call are reported whole, removed ones by id, and the recorder empties on reset', () => {
  const rec = new DeltaRecorder();
  const created: PeerSet = { id: 'new', describe: 'd', v4: ['198.18.0.1'], v6: [] };
  rec.peerSets.touch('new', false);
  rec.peerSets.touch('gone', true);
  rec.ipBlockSets.touch('ib', true);
  const delta = rec.finish(sources({ new: created }));
  assert.deepStrictEqual(delta.peerSets.create, [created]);
  assert.deepStrictEqual(delta.peerSets.remove, ['gone']);
  assert.deepStrictEqual(delta.ipBlockSets.remove, ['ib']);
  rec.reset();
  assert.deepStrictEqual(rec.finish(sources({})), emptyDelta());
});

test('named-port sets: element changes are triples, in canonical order', () => {
  const rec = new DeltaRecorder();
  rec.namedPortSets.touch('np', true);
  const triples = [
    { ip: '198.18.0.3', protocol: 'UDP' as const, port: 53 },
    { ip: '198.18.0.3', protocol: 'TCP' as const, port: 8080 },
    { ip: '2001:db8::3', protocol: 'TCP' as const, port: 80 },
  ];
  for (const t of triples) rec.namedPortSets.changed('np', tripleKey(t), +1);
  const set: NamedPortSet = { id: 'np', direction: 'ingress', ports: [], v4: [], v6: [] };
  const delta = rec.finish(sources({}, { np: set }));
  assert.deepStrictEqual(delta.namedPortSets.add, [{ set: 'np', v4: [triples[1], triples[0]], v6: [triples[2]] }]);
});
