/** After a refusal, the missing reference is named by replaying what the transaction defined
 * before the failing operation (each codec's `defines`): a table removed earlier takes its chains
 * and sets with it, while removing a chain takes nothing else, even one named like its table. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { commit, NetlinkError, nftBuild as b, NftSet, Transaction } from '../../src/netfilter';
import { withSandbox } from '../helpers/netns';

const T = { family: 'inet' as const, name: 'lib' };
const v4set: NftSet = { family: 'inet', table: 'lib', name: 'v4set', key: ['ipv4_addr'] };
const chain = { family: 'inet' as const, table: 'lib', name: 'c' };
const sameName = { family: 'inet' as const, table: 'lib', name: 'lib' };

test('a table removed and added again in one transaction has lost its chains and sets; a removed chain only itself', async () => {
  await withSandbox(async (sb) => {
    await commit(sb.socket, new Transaction().addTable(T).addChain(chain).addChain(sameName).addSet(v4set));
    const missing = async (tx: Transaction): Promise<string | undefined> => {
      let found: string | undefined;
      await assert.rejects(commit(sb.socket, tx), (err: unknown) => {
        assert.ok(err instanceof NetlinkError, String(err));
        assert.equal(err.code, 'ENOENT');
        found = err.missing;
        return true;
      });
      return found;
    };
    assert.match((await missing(new Transaction().deleteTable(T).addTable(T).addRule({ ...chain, chain: 'c', exprs: [b.accept()] }))) ?? '', /^chain c in table inet lib \(its chain\) does not exist/);
    const lookup = { ...chain, chain: 'c', exprs: [...b.matchAddrInSet('ip saddr', 'v4set'), b.accept()] };
    assert.match((await missing(new Transaction().deleteTable(T).addTable(T).addChain(chain).addRule(lookup))) ?? '', /^set v4set in table inet lib \(looked up\) does not exist/);
    // The chain `lib` of table `lib` goes alone: chain c and set v4set are still there, so the
    // missing reference is the jump target.
    assert.match((await missing(new Transaction().deleteChain(sameName).addRule({ ...chain, chain: 'c', exprs: [...b.matchAddrInSet('ip saddr', 'v4set'), b.jump('nowhere')] }))) ?? '', /^chain nowhere in table inet lib \(jump target\) does not exist/);
  });
});
