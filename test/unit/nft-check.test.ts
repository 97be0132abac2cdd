/** checkTransaction resolves each rule's lookups among the sets of the rule's own table, added
 * before it in the transaction or given as known: an address match of the wrong family is
 * refused, a same-named set of another table or one added after the rule is not consulted. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as b from '../../src/nft/build';
import { checkTransaction, SetTypeError } from '../../src/nft/check';
import { NftSet, Rule } from '../../src/nft/types';
import { Transaction } from '../../src/nft/transaction';

const set = (table: string, name: string, key: 'ipv4_addr' | 'ipv6_addr', family: 'inet' | 'ip' = 'inet'): NftSet => ({ family, table, name, key: [key], flags: 0 });
const v6Match = (table: string, setName: string, family: 'inet' | 'ip' = 'inet'): Rule => ({ family, table, chain: 'c', exprs: [...b.loadAddr('ip6 saddr'), b.lookup(setName)] });

test('a wrong-family lookup is refused against a set of its own table, added before it or known', () => {
  const tx = new Transaction().addSet(set('t', 'peers', 'ipv4_addr')).addRule(v6Match('t', 'peers'));
  assert.throws(() => checkTransaction(tx.operations), (err: unknown) => err instanceof SetTypeError && err.setType === 'ipv4_addr' && err.element === 'ip6 saddr');
  assert.throws(() => checkTransaction(new Transaction().addRule(v6Match('t', 'peers')).operations, [set('t', 'peers', 'ipv4_addr')]), SetTypeError);
  // The right family passes; so does a rule that looks nothing up.
  checkTransaction(new Transaction().addSet(set('t', 'peers', 'ipv6_addr')).addRule(v6Match('t', 'peers')).addRule({ family: 'inet', table: 't', chain: 'c', exprs: [b.accept()] }).operations);
});

test('sets of other tables and families, and sets added after the rule, are not consulted', () => {
  const ops = new Transaction()
    .addSet(set('other', 'peers', 'ipv4_addr'))
    .addSet(set('t', 'peers', 'ipv4_addr', 'ip'))
    .addRule(v6Match('t', 'peers'))
    .addSet(set('t', 'peers', 'ipv4_addr'))
    .addRule(v6Match('other', 'missing')).operations;
  checkTransaction(ops);
  // Rules of several tables in turn each resolve in their own.
  const mixed = new Transaction().addSet(set('a', 's', 'ipv6_addr')).addSet(set('b', 's', 'ipv4_addr')).addRule(v6Match('a', 's')).addRule(v6Match('b', 's'));
  assert.throws(() => checkTransaction(mixed.operations), (err: unknown) => err instanceof SetTypeError && err.set === 'inet b s');
});
