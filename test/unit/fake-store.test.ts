/** FakeTableStore's own contract, without a kernel: a refused batch changes nothing and names its
 * operation (and the missing reference) as a kernel refusal does; injected faults; the generation
 * guard; and an Agent run on it. What it shares with the kernel is checked by
 * test/kernel/fake-store-agrees.test.ts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { NetlinkError } from '../../src/netlink/errors';
import * as b from '../../src/nft/build';
import { Transaction } from '../../src/nft/transaction';
import { Chain, Rule, Table } from '../../src/nft/types';
import { Agent } from '../../src/pipeline/agent';
import type { Component } from '../../src/pipeline/component';
import { FakeTableStore } from '../../src/pipeline/fake-store';
import { ChangeScope } from '../../src/pipeline/scope';
import { emptyModel, RulesetModel } from '../../src/ruleset/model';

const table: Table = { family: 'inet', name: 't' };
const chain = (name: string): Chain => ({ family: 'inet', table: 't', name });
const rule = (c: string, ...exprs: Rule['exprs']): Rule => ({ family: 'inet', table: 't', chain: c, exprs });

const refusal = (err: unknown) => {
  assert.ok(err instanceof NetlinkError, String(err));
  return err;
};

test('a batch refused at any operation changes nothing, and the error names the operation and what it misses', async () => {
  const store = new FakeTableStore();
  await store.commit(new Transaction().addTable(table).addChain(chain('a')));
  const gen = await store.generation();
  const before = store.state;
  const err = refusal(await store.commit(new Transaction().addChain(chain('b')).addRule(rule('b', b.jump('nowhere')))).catch((e) => e));
  assert.equal(err.code, 'ENOENT');
  assert.equal(err.msgIndex, 1);
  assert.equal(err.op, 'NFT_MSG_NEWRULE');
  assert.match(err.missing ?? '', /chain nowhere in table inet t \(jump target\) does not exist/);
  assert.equal(store.state, before, 'the state is the one before the batch');
  assert.equal(await store.generation(), gen);
  assert.deepEqual(
    (await store.listChains('inet', 't')).map((c) => c.name),
    ['a'],
  );
});

test('an operation that sends no message is not applied, and a refusal after it names the right message', async () => {
  const store = new FakeTableStore();
  await store.commit(new Transaction().addTable(table));
  const set = { family: 'inet', table: 't', name: 'missing', key: ['ipv4_addr'] } as const;
  const err = refusal(await store.commit(new Transaction().addChain(chain('a')).add({ kind: 'element', verb: 'add', set: { ...set, key: [...set.key] }, elements: [] }).deleteChain(chain('b'))).catch((e) => e));
  assert.equal(err.code, 'ENOENT');
  assert.equal(err.msgIndex, 1);
  assert.equal(err.object, 'chain inet t b');
});

test('create-only objects are refused when they exist; deletes of missing objects and of referenced ones are refused', async () => {
  const store = new FakeTableStore();
  await store.commit(new Transaction().addTable(table).addChain(chain('a')).addChain(chain('b')).addRule(rule('a', b.jump('b'))));
  const code = async (tx: Transaction) => refusal(await store.commit(tx).catch((e) => e)).code;
  assert.equal(await code(new Transaction().add({ kind: 'table', verb: 'create', table })), 'EEXIST');
  assert.equal(await code(new Transaction().deleteChain(chain('c'))), 'ENOENT');
  assert.equal(await code(new Transaction().deleteChain(chain('b'))), 'EBUSY');
  // Unlinked first, in the same batch: accepted.
  await store.commit(new Transaction().flushChain(chain('a')).deleteChain(chain('b')));
  assert.deepEqual(
    (await store.listChains('inet', 't')).map((c) => c.name),
    ['a'],
  );
});

test('injected faults: a refusal of the whole batch or of message N with any errno, and a race the generation guard catches', async () => {
  const store = new FakeTableStore();
  await store.commit(new Transaction().addTable(table));
  store.inject({ refuse: 'EBUSY' }, { refuse: 'ENOSPC', atMessage: 1 }, { race: true });
  const tx = () => new Transaction().addChain(chain('a')).addChain(chain('b'));
  const whole = refusal(await store.commit(tx()).catch((e) => e));
  assert.equal(whole.code, 'EBUSY');
  assert.equal(whole.op, 'NFNL_MSG_BATCH_BEGIN');
  const second = refusal(await store.commit(tx()).catch((e) => e));
  assert.equal(second.msgIndex, 1);
  assert.equal(second.object, 'chain inet t b');
  const gen = await store.generation();
  const raced = refusal(await store.commit(tx(), { genId: gen }).catch((e) => e));
  assert.equal(raced.code, 'ERESTART');
  assert.equal(await store.generation(), gen + 1, 'the other writer committed');
  await store.commit(tx(), { genId: gen + 1 });
  assert.deepEqual(
    store.received.map((r) => r.outcome),
    ['committed', 'EBUSY', 'ENOSPC', 'ERESTART', 'committed'],
  );
});

test('an Agent runs on the fake store: start, a node change, idle, resync', async () => {
  const desired: RulesetModel = emptyModel(table);
  desired.chains.set('a', { chain: chain('a'), rules: [rule('a', b.counter())] });
  const component: Component = { name: 'test', table: { family: 'inet', name: 't' }, desired, start: () => undefined, apply: () => false };
  const store = new FakeTableStore();
  const agent = new Agent({ store, logger: pino({ level: 'silent' }), components: [component] });
  await agent.start({} as Parameters<Agent['start']>[0]);
  agent.onNodeChange('test', 'a second rule', (scope: ChangeScope) => {
    desired.chains.set('a', { chain: chain('a'), rules: [...desired.chains.get('a')!.rules, rule('a', b.drop())] });
    scope.chains.add('a');
    return true;
  });
  await agent.idle();
  assert.equal((await store.listRules('inet', 't', 'a')).length, 2);
  assert.equal((await agent.resync()).drift, '');
  await agent.stop();
});
