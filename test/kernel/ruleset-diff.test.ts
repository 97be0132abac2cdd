/** RuleSetDiff against the kernel: the transaction diffTransaction builds is accepted, and the
 * table read back afterwards is the target model. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as b from '../../src/nft/build';
import * as C from '../../src/nft/constants';
import { listTable } from '../../src/nft/readback';
import { commit, Transaction } from '../../src/nft/transaction';
import { Chain, Expr, NftSet, Rule, Table } from '../../src/nft/types';
import { ipv4 } from '../../src/net/ip-bytes';
import { diffRulesets, diffTransaction, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { elementMap, emptyModel, modelFromKernel, RulesetModel } from '../../src/ruleset/model';
import { withSandbox } from '../helpers/netns';

const table: Table = { family: 'inet', name: 'nfk' };
const chain = (name: string, base?: Chain['base']): Chain => ({ family: 'inet', table: 'nfk', name, base });
const rule = (chainName: string, exprs: Expr[]): Rule => ({ family: 'inet', table: 'nfk', chain: chainName, exprs });
const set = (name: string, flags: number): NftSet => ({ family: 'inet', table: 'nfk', name, key: ['ipv4_addr'], flags });

/** A base chain jumping to `pol`, whose rules look `peers` up, and one more chain that does too. */
function model(peersFlags: number): RulesetModel {
  const m = emptyModel(table);
  const input = chain('input', { hook: 'input', priority: 0, type: 'filter', policy: 'accept' });
  m.chains.set('input', { chain: input, rules: [rule('input', [b.jump('pol')])] });
  m.chains.set('pol', { chain: chain('pol'), rules: [rule('pol', [...b.matchAddrInSet('ip saddr', 'peers'), b.accept()]), rule('pol', [b.drop()])] });
  m.chains.set('audit', { chain: chain('audit'), rules: [rule('audit', [...b.matchAddrInSet('ip daddr', 'peers'), b.counter()])] });
  m.sets.set('peers', { set: set('peers', peersFlags), elements: elementMap([{ key: ipv4('198.18.0.1') }, { key: ipv4('198.18.0.2') }]) });
  return m;
}

async function load(socket: Parameters<typeof commit>[0], m: RulesetModel): Promise<void> {
  const empty = emptyModel(table);
  await commit(socket, diffTransaction(empty, m, diffRulesets(empty, m), new Transaction().addTable(table)));
}

test('a set whose definition changes is replaced, and every chain that looks it up is rewritten around it', async () => {
  await withSandbox(async (sb) => {
    // What an earlier version left (peers without flags) and what this one means (a set with
    // timeouts): the chains that look peers up are the same rules, which the kernel still binds to
    // the old set until they are rewritten.
    const before = model(0);
    const after = model(C.NFT_SET_TIMEOUT);
    await load(sb.socket, before);
    const kernel = modelFromKernel((await listTable(sb.socket, 'inet', 'nfk'))!);
    const d = diffRulesets(kernel, after);
    assert.deepEqual(d.replaceSets, ['peers']);
    assert.deepEqual([...d.rewriteChains].sort(), ['audit', 'pol'], 'both chains that look peers up, and not the base chain');
    assert.match(formatDiff(kernel, after, d), /~ chain pol\n {4}\(its rules look up a set that is replaced\)/);

    await commit(sb.socket, diffTransaction(kernel, after, d));
    const back = modelFromKernel((await listTable(sb.socket, 'inet', 'nfk'))!);
    assert.ok(isEmptyDiff(diffRulesets(back, after)), formatDiff(back, after, diffRulesets(back, after)));
    assert.match(sb.run('nft', ['list', 'set', 'inet', 'nfk', 'peers']), /flags timeout/);
  });
});
