/** Transactions without a kernel: commitBatch() over a recording transport. The batch's bytes against
 * golden bytes laid out by hand from linux/netlink.h, linux/netfilter/nfnetlink.h and
 * linux/netfilter/nf_tables.h; how the kernel's answers map back to operations; the nft-syntax
 * listing (toString). test/kernel/nft-transaction.test.ts commits the same kinds for real. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NetlinkError } from '../../src/netlink/errors';
import * as b from '../../src/nft/build';
import { commitBatch, OperationEncodeError, Transaction } from '../../src/nft/transaction';
import { Chain, Table } from '../../src/nft/types';
import { assertBytes, golden, sideBySide } from '../helpers/golden';
import { RecordingTransport } from '../helpers/recording-transport';

const table: Table = { family: 'inet', name: 't' };
const chain: Chain = { family: 'inet', table: 't', name: 'c' };
const tx = () => new Transaction().addTable(table).addChain(chain).deleteTable(table);

const BATCH = `
  1c000000 1000 0100 01000000 00000000  # 28 bytes, NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, seq 1, port 0
  00 00 000a                            # nfgenmsg: AF_UNSPEC, NFNETLINK_V0, res_id NFNL_SUBSYS_NFTABLES (be16)
  08000100 0000002a                     # NFNL_BATCH_GENID be32 42

  1c000000 000a 0104 02000000 00000000  # 28 bytes, NFT_MSG_NEWTABLE (10 << 8 | 0), NLM_F_REQUEST | NLM_F_CREATE, seq 2
  01 00 0000                            # NFPROTO_INET
  06000100 74000000                     # NFTA_TABLE_NAME "t\\0", padded to 4

  24000000 030a 0104 03000000 00000000  # 36 bytes, NFT_MSG_NEWCHAIN, NLM_F_REQUEST | NLM_F_CREATE, seq 3
  01 00 0000                            # NFPROTO_INET
  06000100 74000000                     # NFTA_CHAIN_TABLE "t"
  06000300 63000000                     # NFTA_CHAIN_NAME "c"

  1c000000 020a 0500 04000000 00000000  # 28 bytes, NFT_MSG_DELTABLE, NLM_F_REQUEST | NLM_F_ACK (the last message asks for the ack), seq 4
  01 00 0000                            # NFPROTO_INET
  06000100 74000000                     # NFTA_TABLE_NAME "t"

  14000000 1100 0100 05000000 00000000  # 20 bytes, NFNL_MSG_BATCH_END, NLM_F_REQUEST, seq 5
  00 00 000a                            # res_id NFNL_SUBSYS_NFTABLES`;

test('commit sends one datagram: BEGIN with the generation, one message per operation, END', async () => {
  const t = new RecordingTransport();
  const res = await commitBatch(t, tx(), { echo: false, genId: 42 });
  assert.equal(t.sent.length, 1);
  assertBytes(t.sent[0], golden(BATCH), 'add table, add chain, delete table');
  assert.equal(res.messages, 3);
  assert.equal(res.bytes, t.sent[0].length);
  assert.deepEqual(Object.fromEntries(res.byType), { NFT_MSG_NEWTABLE: 1, NFT_MSG_NEWCHAIN: 1, NFT_MSG_DELTABLE: 1 });
});

test('encodeBatch maps every message to its operation and sequence number', () => {
  let seq = 100;
  const { datagram, messages } = tx().encodeBatch(() => ++seq, { echo: false });
  assert.deepEqual(
    messages.map((m) => [m.opIndex, m.seq]),
    [
      [0, 102],
      [1, 103],
      [2, 104],
    ],
  );
  assert.equal(datagram.readUInt32LE(8), 101, 'BEGIN takes the first sequence number');
});

test("the kernel's refusal names the operation, its object, the errno and the extended ack", async () => {
  const t = new RecordingTransport({ refuse: { message: 2, errno: 2, code: 'ENOENT', extAck: 'No such file or directory' } });
  await assert.rejects(commitBatch(t, tx(), { echo: false }), (err: unknown) => {
    assert.ok(err instanceof NetlinkError);
    assert.equal(err.code, 'ENOENT');
    assert.equal(err.op, 'NFT_MSG_NEWCHAIN');
    assert.equal(err.object, 'chain inet t c');
    assert.equal(err.msgIndex, 1);
    assert.equal(err.message, 'NFT_MSG_NEWCHAIN chain inet t c: ENOENT (No such file or directory) [message 1]');
    return true;
  });
});

test('a refused BEGIN (no CAP_NET_ADMIN) names the batch; a batch never acknowledged is an error', async () => {
  await assert.rejects(commitBatch(new RecordingTransport({ refuse: { message: 0, errno: 1, code: 'EPERM' } }), tx()), /^NetlinkError: NFNL_MSG_BATCH_BEGIN batch: EPERM$/);
  await assert.rejects(commitBatch(new RecordingTransport({ unacknowledged: true }), tx()), /the kernel did not acknowledge the batch/);
});

test('an empty transaction sends nothing', async () => {
  const t = new RecordingTransport();
  const res = await commitBatch(t, new Transaction());
  assert.equal(res.messages, 0);
  assert.equal(t.sent.length, 0);
});

test('a delete of a rule without a handle is refused before anything is sent', async () => {
  const t = new RecordingTransport();
  const rule = { family: 'inet' as const, table: 't', chain: 'c', exprs: [] };
  await assert.rejects(commitBatch(t, new Transaction().add({ kind: 'rule', verb: 'delete', rule })), /delete rule inet t c: the rule has no handle/);
  assert.equal(t.sent.length, 0);
});

test('an operation that cannot be encoded is named by its index and object; nothing is sent', async () => {
  const t = new RecordingTransport();
  const ok = { family: 'inet' as const, table: 't', chain: 'c', exprs: [b.accept()] };
  const bad = { family: 'inet' as const, table: 't', chain: 'pod_x_in', exprs: [...b.l4proto('tcp'), b.load('th dport'), { type: 'cmp' as const, sreg: 1, op: 'eq' as const, data: Buffer.alloc(0) }] };
  const big = new Transaction().addTable(table).addChain(chain);
  for (let i = 0; i < 1232; i++) big.addRule(ok);
  big.addRule(bad).addRule(ok);
  await assert.rejects(commitBatch(t, big), (err: unknown) => {
    assert.ok(err instanceof OperationEncodeError);
    assert.equal(err.message, 'operation 1234: add rule inet t pod_x_in: cmp.data: 0 bytes, the kernel takes 1..64');
    assert.equal(err.opIndex, 1234);
    assert.equal(err.operation, 'add rule inet t pod_x_in');
    assert.ok(err.cause instanceof RangeError);
    return true;
  });
  assert.equal(t.sent.length, 0);
});

test('toString lists the transaction in nft syntax, one operation a line', () => {
  assert.equal(tx().toString(), ['add table inet t', 'add chain inet t c', 'delete table inet t'].join('\n'));
});

test('golden mismatches are listed side by side, four bytes a line, the differing lines marked', () => {
  const expected = golden('1c000000 000a 0104 02000000');
  const actual = golden('1c000000 000a 0504 02000000 ff');
  assert.equal(
    sideBySide(actual, expected),
    ['  offset  actual    expected', '  000000  1c000000  1c000000', '! 000004  000a0504  000a0104', '  000008  02000000  02000000', '! 00000c  ff        --------'].join('\n'),
  );
  assert.throws(() => assertBytes(actual, expected, 'example'), /example: bytes differ at offset 0x6 \(13 bytes, expected 12\)\n  offset/);
});
