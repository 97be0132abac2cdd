/** A restart over a changed cluster on a busy node, in a namespace made for the test: another
 * writer commits to a table of its own right before every transaction the agent sends (so the
 * ruleset generation the agent read is always stale by then). The agent holds its table
 * (NFT_TABLE_F_OWNER), so no one else can have changed it: the difference is still committed in
 * bounded transactions into the same table, rather than the generation guard refusing every
 * attempt and the whole table being replaced in one transaction. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { NFNL_MSG_BATCH_BEGIN } from '../../src/netlink/message';
import { NetlinkSocket } from '../../src/netlink/socket';
import { listTable } from '../../src/nft/readback';
import { commit, Transaction } from '../../src/nft/transaction';
import { Agent, SyncReport } from '../../src/pipeline/agent';
import { BatchLimits } from '../../src/pipeline/batches';
import { withSandbox } from '../helpers/netns';
import { baseCluster, Cluster, NODE, pod, policy } from './fixtures';

const TINY: BatchLimits = { objects: 4, elements: 3 };

function agent(socket: NetlinkSocket, onSync: (r: SyncReport) => void): Agent {
  const logger = pino({ level: process.env.DEBUG_TEST ? 'info' : 'silent' });
  return new Agent({ socket, logger, holdTable: true, batchLimits: TINY, components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger })], observer: { synced: onSync } });
}

function grow(c: Cluster, from: number, to: number): void {
  for (let i = from; i < to; i++) c.apply(pod('x', `p${i}`, `198.18.0.${20 + i}`, { app: i % 2 ? 'web' : 'client' }));
}

test('a held table is updated in bounded transactions even when every transaction follows another writer\'s commit', { timeout: 120_000 }, async () => {
  await withSandbox(async (sb) => {
    const c = baseCluster();
    grow(c, 0, 8);
    let first!: SyncReport;
    const before = agent(sb.socket, (r) => void (first = r));
    await before.start(c.snapshot());
    before.stop();
    assert.ok((first.batchKernelMs?.length ?? 0) > 1, 'the first start was cut into batches');
    const tableHandle = (await listTable(sb.socket, 'inet', 'nfkube'))!.table.handle;

    grow(c, 8, 16);
    c.apply(policy('x', 'web', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }] }));
    // The other writer: one element into a set of its own table before each of the agent's batches.
    const other = NetlinkSocket.open({ netns: sb.netns });
    try {
      const table = { family: 'inet' as const, name: 'other-writer' };
      const set = { family: 'inet' as const, table: table.name, name: 's', key: ['ipv4_addr' as const] };
      await commit(other, new Transaction().addTable(table).addSet(set), { echo: false });
      let n = 0;
      let interposed = 0;
      const transact = sb.socket.transact.bind(sb.socket);
      sb.socket.transact = async (datagrams) => {
        if (datagrams[0].readUInt16LE(4) === NFNL_MSG_BATCH_BEGIN && interposed < 200) {
          interposed++;
          // Added, then removed again by the next.
          const i = n++;
          const element = [{ key: Buffer.from([198, 18, 9, (i >> 1) % 250]) }];
          await commit(other, i % 2 ? new Transaction().deleteElements(set, element) : new Transaction().addElements(set, element), { echo: false });
        }
        return transact(datagrams);
      };
      let restart!: SyncReport;
      const after = agent(sb.socket, (r) => void (restart = r));
      await after.start(c.snapshot());
      after.stop();
      assert.ok(interposed > 1, 'the other writer committed before the agent\'s transactions');
      assert.ok((restart.batchKernelMs?.length ?? 0) > 1, `the restart's difference went in bounded transactions (${restart.batchKernelMs?.length ?? 'one whole replacement'})`);
      assert.ok(restart.messages > 0);
    } finally {
      await other.close();
    }
    assert.equal((await listTable(sb.socket, 'inet', 'nfkube'))!.table.handle, tableHandle, 'the table was updated, not replaced');
    // The table is the desired one: a third start over the same cluster finds nothing to write.
    let third!: SyncReport;
    const check = agent(sb.socket, (r) => void (third = r));
    await check.start(c.snapshot());
    check.stop();
    assert.equal(third.messages, 0, 'nothing left to write');
  });
});
