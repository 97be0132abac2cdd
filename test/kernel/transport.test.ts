import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AttrMap, AttrWriter } from '../../src/netlink/attr';
import {
  encodeNfMessage,
  nfMsgType,
  NFNL_MSG_BATCH_BEGIN,
  NFNL_MSG_BATCH_END,
  NFNL_SUBSYS_NFTABLES,
  NLM_F_ACK,
  NLM_F_CREATE,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLM_F_REQUEST,
} from '../../src/netlink/message';
import { Netns } from '../../src/netlink/netns';
import { NetlinkSocket } from '../../src/netlink/socket';
import * as C from '../../src/nft/constants';
import { withSandbox } from '../helpers/netns';

const nft = (msg: number) => nfMsgType(NFNL_SUBSYS_NFTABLES, msg);

function newTable(seq: number, name: string, extra?: (w: AttrWriter) => void): Buffer {
  const w = new AttrWriter().str(C.NFTA_TABLE_NAME, name);
  extra?.(w);
  return encodeNfMessage({ type: nft(C.NFT_MSG_NEWTABLE), flags: NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL, seq, family: 1, payload: w.finish() });
}

function batch(sock: NetlinkSocket, inner: Buffer[]): Buffer {
  return Buffer.concat([
    encodeNfMessage({ type: NFNL_MSG_BATCH_BEGIN, flags: NLM_F_REQUEST, seq: sock.nextSeq(), family: 0, resId: NFNL_SUBSYS_NFTABLES }),
    ...inner,
    encodeNfMessage({ type: NFNL_MSG_BATCH_END, flags: NLM_F_REQUEST, seq: sock.nextSeq(), family: 0, resId: NFNL_SUBSYS_NFTABLES }),
  ]);
}

async function tableNames(sock: NetlinkSocket): Promise<string[]> {
  const msgs = await sock.dump(encodeNfMessage({ type: nft(C.NFT_MSG_GETTABLE), flags: NLM_F_REQUEST | NLM_F_DUMP, seq: sock.nextSeq(), family: 0 }));
  return msgs.map((m) => AttrMap.parse(m.payload, 'table').str(C.NFTA_TABLE_NAME) ?? '').sort();
}

test('a socket opened in a fresh namespace sees only that namespace', async () => {
  await withSandbox(async (a) => {
    await withSandbox(async (b) => {
      const r = await a.socket.transact([batch(a.socket, [newTable(a.socket.nextSeq(), 'only_in_a')])]);
      assert.deepEqual(r.acks.map((x) => x.errno), [0]);
      assert.deepEqual(await tableNames(a.socket), ['only_in_a']);
      assert.deepEqual(await tableNames(b.socket), []);
    });
  });
});

test('a failing message reports errno, extended ack and offset; the batch leaves nothing', async () => {
  await withSandbox(async ({ socket }) => {
    const okSeq = socket.nextSeq();
    const badSeq = socket.nextSeq();
    const r = await socket.transact([
      batch(socket, [newTable(okSeq, 't1'), newTable(badSeq, 't1')]),
    ]);
    const bad = r.acks.find((a) => a.seq === badSeq);
    assert.equal(bad?.code, 'EEXIST');
    assert.equal(bad?.errno, 17);
    assert.equal(typeof bad?.offset, 'number');
    assert.deepEqual(await tableNames(socket), []);
  });
});

test('a namespace can be opened by path', async () => {
  const ns = Netns.create();
  try {
    const s1 = NetlinkSocket.open({ netns: ns });
    const s2 = NetlinkSocket.open({ netns: ns.path });
    await s1.transact([batch(s1, [newTable(s1.nextSeq(), 'shared')])]);
    assert.deepEqual(await tableNames(s2), ['shared']);
    await s1.close();
    await s2.close();
  } finally {
    ns.close();
  }
});

test('parallel callers are serialised and each gets its own replies', async () => {
  await withSandbox(async ({ socket }) => {
    const names = Array.from({ length: 40 }, (_, i) => `t${i}`);
    const results = await Promise.all(names.map((n) => socket.transact([batch(socket, [newTable(socket.nextSeq(), n)])])));
    for (const r of results) assert.deepEqual(r.acks.map((a) => a.errno), [0]);
    assert.deepEqual(await tableNames(socket), [...names].sort());
  });
});

test('operations on a closed socket reject', async () => {
  const ns = Netns.create();
  const s = NetlinkSocket.open({ netns: ns });
  await s.close();
  ns.close();
  await assert.rejects(s.dump(Buffer.alloc(20)), /closed/);
});

test('dumpAll runs many dumps in one trip; a kernel error fails only its own request', async () => {
  await withSandbox(async ({ socket }) => {
    await socket.transact([batch(socket, [newTable(socket.nextSeq(), 'present')])]);
    const getTable = (name: string) =>
      encodeNfMessage({ type: nft(C.NFT_MSG_GETTABLE), flags: NLM_F_REQUEST | NLM_F_DUMP, seq: socket.nextSeq(), family: 0, payload: new AttrWriter().str(C.NFTA_TABLE_NAME, name).finish() });
    const getChains = (table: string) =>
      encodeNfMessage({ type: nft(C.NFT_MSG_GETCHAIN), flags: NLM_F_REQUEST | NLM_F_DUMP, seq: socket.nextSeq(), family: 1, payload: new AttrWriter().str(C.NFTA_CHAIN_TABLE, table).finish() });
    const requests = Array.from({ length: 200 }, (_, i) => (i % 2 ? getChains('present') : getTable('present')));
    const results = await socket.dumpAll(requests, (i) => `request ${i}`);
    assert.equal(results.length, 200);
    for (let i = 0; i < 200; i += 2) assert.deepEqual(results[i].map((m) => AttrMap.parse(m.payload, 'table').str(C.NFTA_TABLE_NAME)), ['present']);
    // A dump of a set that does not exist is an error for that request, named by `what`.
    const badSet = encodeNfMessage({
      type: nft(C.NFT_MSG_GETSETELEM),
      flags: NLM_F_REQUEST | NLM_F_DUMP,
      seq: socket.nextSeq(),
      family: 1,
      payload: new AttrWriter().str(C.NFTA_SET_ELEM_LIST_TABLE, 'present').str(C.NFTA_SET_ELEM_LIST_SET, 'missing').finish(),
    });
    await assert.rejects(socket.dumpAll([getTable('present'), badSet], (i) => `request ${i}`), (err: Error) => /request 1/.test(err.message) && /ENOENT/.test(err.message));
    // Read on the calling thread, the same requests give the same replies and the same errors.
    const small = await socket.dumpAll(requests.slice(0, 10), (i) => `request ${i}`, { small: true });
    assert.deepEqual(
      small.map((msgs) => msgs.map((m) => m.payload)),
      results.slice(0, 10).map((msgs) => msgs.map((m) => m.payload)),
    );
    await assert.rejects(socket.dumpAll([badSet], () => 'small request', { small: true }), (err: Error) => /small request/.test(err.message) && /ENOENT/.test(err.message));
    // The socket stays usable afterwards.
    assert.deepEqual(await tableNames(socket), ['present']);
    assert.deepEqual(await socket.dumpAll([], () => 'none'), []);
  });
});
