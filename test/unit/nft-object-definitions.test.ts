/** What each object codec says about an operation, which check.ts walks without knowing kinds:
 * the object it creates or removes (a table holding its chains and sets, a set with its
 * declaration), the values it checks against a set's types, and the sets that check resolves. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as b from '../../src/nft/build';
import { checkTransaction, SetTypeError } from '../../src/nft/check';
import { checkOperation, operationDefinition, setsCheckedBy } from '../../src/nft/objects';
import { NftSet, Operation, Rule } from '../../src/nft/types';
import { ipv4, ipv6 } from '../../src/net/ip-bytes';

const table = { family: 'inet' as const, name: 't' };
const chain = { family: 'inet' as const, table: 't', name: 'c' };
const v4: NftSet = { family: 'inet', table: 't', name: 'peers', key: ['ipv4_addr'], flags: 0 };
const rule = (exprs: Rule['exprs']): Rule => ({ family: 'inet', table: 't', chain: 'c', exprs });
const v6Lookup = rule([...b.loadAddr('ip6 saddr'), b.lookup('peers'), b.accept()]);
const noSets = () => undefined;

test('creations and removals define their object; a table holds its chains and sets; a set carries its declaration', () => {
  assert.deepEqual(operationDefinition({ kind: 'table', verb: 'add', table }), { kind: 'table', family: 'inet', table: 't', name: 't', exists: true, holdsObjects: true });
  assert.deepEqual(operationDefinition({ kind: 'table', verb: 'destroy', table }), { kind: 'table', family: 'inet', table: 't', name: 't', exists: false, holdsObjects: true });
  assert.deepEqual(operationDefinition({ kind: 'chain', verb: 'create', chain }), { kind: 'chain', family: 'inet', table: 't', name: 'c', exists: true });
  assert.deepEqual(operationDefinition({ kind: 'chain', verb: 'delete', chain }), { kind: 'chain', family: 'inet', table: 't', name: 'c', exists: false });
  assert.deepEqual(operationDefinition({ kind: 'set', verb: 'add', set: v4 }), { kind: 'set', family: 'inet', table: 't', name: 'peers', exists: true, set: v4 });
  assert.deepEqual(operationDefinition({ kind: 'set', verb: 'delete', set: v4 }), { kind: 'set', family: 'inet', table: 't', name: 'peers', exists: false });
  // A flush empties an object without removing it; rules and elements are not objects others name.
  const none: Operation[] = [
    { kind: 'table', verb: 'flush', table },
    { kind: 'chain', verb: 'flush', chain },
    { kind: 'set', verb: 'flush', set: v4 },
    { kind: 'rule', verb: 'add', rule: rule([b.accept()]) },
    { kind: 'element', verb: 'add', set: v4, elements: [{ key: ipv4('198.18.0.1') }] },
  ];
  for (const op of none) assert.equal(operationDefinition(op), undefined, `${op.kind} ${op.verb}`);
});

test('a rule checks its address lookups against the sets in its own table; elements against their set', () => {
  const op: Operation = { kind: 'rule', verb: 'add', rule: v6Lookup };
  assert.throws(() => checkOperation(op, (family, t, name) => (family === 'inet' && t === 't' && name === 'peers' ? v4 : undefined)), (err: unknown) => err instanceof SetTypeError && err.element === 'ip6 saddr');
  checkOperation(op, noSets);
  // A removed rule is not checked: its expressions no longer go anywhere.
  checkOperation({ kind: 'rule', verb: 'delete', rule: { ...v6Lookup, handle: 4n } }, () => v4);
  const wrong = [{ key: ipv6('2001:db8::1') }];
  assert.throws(() => checkOperation({ kind: 'element', verb: 'add', set: v4, elements: wrong }, noSets), SetTypeError);
  // Tables, chains and sets have nothing of their own to check.
  for (const op of [{ kind: 'table', verb: 'add', table }, { kind: 'chain', verb: 'add', chain }, { kind: 'set', verb: 'add', set: v4 }] as Operation[]) checkOperation(op, noSets);
});

test('the sets a check resolves: a rule’s lookups when it loads an address, none otherwise', () => {
  assert.deepEqual(setsCheckedBy({ kind: 'rule', verb: 'add', rule: v6Lookup }), [{ kind: 'set', family: 'inet', table: 't', name: 'peers', role: 'looked up' }]);
  assert.deepEqual(setsCheckedBy({ kind: 'rule', verb: 'add', rule: rule([...b.matchPort('tcp', 'th dport', 80).slice(0, -1), b.lookup('ports')]) }), []);
  assert.deepEqual(setsCheckedBy({ kind: 'rule', verb: 'destroy', rule: { ...v6Lookup, handle: 4n } }), []);
  assert.deepEqual(setsCheckedBy({ kind: 'element', verb: 'add', set: v4, elements: [{ key: ipv4('198.18.0.1') }] }), []);
});

test('checkTransaction resolves a set declared earlier in it, in the rule’s table only', () => {
  const ops: Operation[] = [
    { kind: 'set', verb: 'add', set: v4 },
    { kind: 'rule', verb: 'add', rule: { ...v6Lookup, table: 'other' } },
  ];
  checkTransaction(ops);
  assert.throws(() => checkTransaction([...ops, { kind: 'rule', verb: 'add', rule: v6Lookup }]), SetTypeError);
});
