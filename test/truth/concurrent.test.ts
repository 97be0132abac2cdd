/** A concurrent foreign writer: while the agent syncs pod churn (and resyncs), another writer
 * adds and deletes rules in its own table 1,000 times over its own socket. None of its changes is
 * lost, and nfkube's table verifies equal afterwards. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NetlinkSocket } from '../../src/netlink/socket';
import * as b from '../../src/nft/build';
import { commit, Transaction } from '../../src/nft/transaction';
import { Chain, Rule } from '../../src/nft/types';
import { withSandbox } from '../helpers/netns';
import { churnEvent } from './churn';
import { baseCluster, startAgent, verify } from './harness';

const ROUNDS = 1000;
const CHAIN: Chain = { family: 'inet', table: 'writer', name: 'c' };

/** Round i adds rule i and, unless i-1 is a multiple of 3, deletes rule i-1 in the same batch. */
const kept = (i: number) => i % 3 === 0 || i === ROUNDS - 1;

function writerRule(i: number): Rule {
  return { family: 'inet', table: 'writer', chain: 'c', exprs: [...b.matchAddr('ip saddr', `198.18.${10 + (i >> 8)}.${i & 255}`), b.counter(), b.accept()], comment: `w${i}` };
}

async function foreignWriter(socket: NetlinkSocket): Promise<void> {
  await commit(socket, new Transaction().addTable({ family: 'inet', name: 'writer' }).addChain(CHAIN));
  let previous: Rule | undefined;
  for (let i = 0; i < ROUNDS; i++) {
    const rule = writerRule(i);
    const tx = new Transaction().addRule(rule);
    if (previous && !kept(i - 1)) tx.deleteRule(previous);
    const res = await commit(socket, tx);
    previous = { ...rule, handle: res.ruleHandles.get(rule) };
  }
}

test('a foreign writer committing 1,000 times during pod churn and resyncs loses nothing', async (t) => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);
    const writerSocket = NetlinkSocket.open({ netns: sb.netns });
    let writerDone = false;
    const writer = foreignWriter(writerSocket).finally(() => (writerDone = true));
    const commitsBefore = agent.totals.commits;
    let resyncs = 0;
    let starved = 0;
    let events = 0;
    try {
      while (!writerDone) {
        churnEvent(cluster, events++);
        await agent.idle();
        if (events % 50 === 0) {
          try {
            await agent.resync();
            resyncs++;
          } catch (err) {
            // Known limit (reported): a resync needs a moment with no commit anywhere in the
            // namespace to read consistently, and this writer leaves none. It must fail cleanly.
            assert.match((err as Error).message, /the ruleset kept changing|ERESTART/);
            starved++;
          }
        }
      }
      await writer;
    } finally {
      await writer.catch(() => undefined);
      await writerSocket.close();
    }
    assert.ok(agent.totals.commits > commitsBefore, 'agent commits overlapped the writer');
    t.diagnostic(`${events} churn events, ${agent.totals.commits - commitsBefore} agent commits, ${resyncs} resyncs completed and ${starved} starved during the writer's 1,000 commits`);

    const listed = JSON.parse(sb.run('nft', ['-j', 'list', 'chain', 'inet', 'writer', 'c'])).nftables.filter((e: any) => e.rule);
    const expected = [...Array(ROUNDS).keys()].filter(kept).map((i) => `w${i} ip saddr 198.18.${10 + (i >> 8)}.${i & 255} counter accept`);
    const describe = (r: any) => {
      const [match, counter, verdict] = r.expr;
      return `${r.comment} ${match.match.left.payload.protocol} ${match.match.left.payload.field} ${match.match.right} ${Object.keys(counter)[0]} ${Object.keys(verdict)[0]}`;
    };
    assert.deepEqual(
      listed.map((e: any) => describe(e.rule)),
      expected,
    );
    // Commits whatever a starved resync left pending (a retry may still be waiting on its timer).
    await agent.resync();
    assert.equal((await agent.resync()).drift, '');
    const v = verify(sb, cluster);
    assert.equal(v.status, 0, v.stdout);
    await agent.stop();
  });
});
