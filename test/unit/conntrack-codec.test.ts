/** The ctnetlink codec: a delete request laid out by hand from nfnetlink_conntrack.h, a dump
 * entry decoded, and random or truncated bytes that only ever raise DecodeError. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { AttrWriter } from '../../src/netlink/attr';
import { DecodeError } from '../../src/netlink/errors';
import { AF_INET, AF_INET6, decodeNfMessages, encodeNfMessage } from '../../src/netlink/message';
import { decodeEntry, encodeDelete, encodeDump } from '../../src/conntrack/codec';
import * as C from '../../src/conntrack/constants';
import { mulberry32 as prng } from '../helpers/prng';

const hex = (s: string) => Buffer.from(s.replace(/#.*$/gm, '').replace(/\s+/g, ''), 'hex');

test('delete by original tuple: CTA_TUPLE_ORIG { CTA_TUPLE_IP, CTA_TUPLE_PROTO }, CTA_ID', () => {
  const msg = encodeDelete({ family: 'v4', orig: { src: '198.18.1.12', dst: '198.19.0.10', proto: 17, srcPort: 40000, dstPort: 53 }, id: 7 }, 5);
  const expected = hex(`
    50000000 0201 0500 05000000 00000000  # nlmsghdr (80 bytes): IPCTNL_MSG_CT_DELETE | CTNETLINK << 8, REQUEST|ACK, seq 5
    02 00 0000                            # nfgenmsg AF_INET, v0, res 0
    34000180                              # CTA_TUPLE_ORIG (nested)
      14000180                            #   CTA_TUPLE_IP
        08000100 c612010c                 #     CTA_IP_V4_SRC 198.18.1.12
        08000200 c613000a                 #     CTA_IP_V4_DST 198.19.0.10
      1c000280                            #   CTA_TUPLE_PROTO
        05000100 11000000                 #     CTA_PROTO_NUM 17
        06000200 9c400000                 #     CTA_PROTO_SRC_PORT 40000
        06000300 00350000                 #     CTA_PROTO_DST_PORT 53
    08000c00 00000007                     # CTA_ID 7`);
  assert.equal(msg.toString('hex'), expected.toString('hex'));
  assert.equal(encodeDump('v6', 1).readUInt16LE(4), (C.NFNL_SUBSYS_CTNETLINK << 8) | C.IPCTNL_MSG_CT_GET);
});

function entryMessage(family: number, fill: (w: AttrWriter) => void): Buffer {
  const w = new AttrWriter();
  fill(w);
  return encodeNfMessage({ type: (C.NFNL_SUBSYS_CTNETLINK << 8) | C.IPCTNL_MSG_CT_NEW, flags: 2, seq: 1, family, payload: w.finish() });
}

const tuple = (w: AttrWriter, type: number, src: Buffer, dst: Buffer, v6: boolean, sport: number, dport: number) =>
  w.nest(type, (t) => {
    t.nest(C.CTA_TUPLE_IP, (i) => i.bytes(v6 ? C.CTA_IP_V6_SRC : C.CTA_IP_V4_SRC, src).bytes(v6 ? C.CTA_IP_V6_DST : C.CTA_IP_V4_DST, dst));
    t.nest(C.CTA_TUPLE_PROTO, (p) => p.u8(C.CTA_PROTO_NUM, 17).be16(C.CTA_PROTO_SRC_PORT, sport).be16(C.CTA_PROTO_DST_PORT, dport));
  });

test('a dump entry decodes to both tuples, id and mark; unknown attributes are skipped', () => {
  const a = Buffer.from([198, 18, 1, 12]);
  const vip = Buffer.from([198, 19, 0, 10]);
  const ep = Buffer.from([198, 18, 1, 10]);
  const m = decodeNfMessages(
    entryMessage(AF_INET, (w) => {
      tuple(w, C.CTA_TUPLE_ORIG, a, vip, false, 40000, 53);
      tuple(w, C.CTA_TUPLE_REPLY, ep, a, false, 5353, 40000);
      w.be32(C.CTA_STATUS, 0x18e).be32(C.CTA_TIMEOUT, 30).be32(C.CTA_MARK, 0x4000).be32(C.CTA_ID, 99).be32(99, 1);
    }),
  )[0];
  assert.deepEqual(decodeEntry(m), {
    family: 'v4',
    orig: { src: '198.18.1.12', dst: '198.19.0.10', proto: 17, srcPort: 40000, dstPort: 53 },
    reply: { src: '198.18.1.10', dst: '198.18.1.12', proto: 17, srcPort: 5353, dstPort: 40000 },
    id: 99,
    mark: 0x4000,
  });
  const v6 = decodeNfMessages(
    entryMessage(AF_INET6, (w) => {
      const x = Buffer.alloc(16, 0);
      x[0] = 0x20;
      x[1] = 0x01;
      x[15] = 1;
      tuple(w, C.CTA_TUPLE_ORIG, x, x, true, 1, 2);
      tuple(w, C.CTA_TUPLE_REPLY, x, x, true, 2, 1);
    }),
  )[0];
  assert.equal(decodeEntry(v6).orig.src, '2001::1');
});

test('hostile bytes: wrong sizes, families, missing tuples and random payloads raise DecodeError only', () => {
  const bad = [
    entryMessage(AF_INET, (w) => tuple(w, C.CTA_TUPLE_ORIG, Buffer.alloc(16), Buffer.alloc(16), true, 1, 2)),
    entryMessage(AF_INET, (w) => w.bytes(C.CTA_TUPLE_ORIG, Buffer.from([1, 2, 3]))),
    entryMessage(7, () => undefined),
    entryMessage(AF_INET, () => undefined),
  ];
  for (const b of bad) assert.throws(() => decodeEntry(decodeNfMessages(b)[0]), DecodeError);
  const rand = prng(42);
  const good = entryMessage(AF_INET, (w) => {
    tuple(w, C.CTA_TUPLE_ORIG, Buffer.alloc(4, 1), Buffer.alloc(4, 2), false, 1, 2);
    tuple(w, C.CTA_TUPLE_REPLY, Buffer.alloc(4, 2), Buffer.alloc(4, 1), false, 2, 1);
  });
  for (let i = 0; i < 5000; i++) {
    const b = Buffer.from(good);
    const flips = 1 + Math.floor(rand() * 6);
    for (let k = 0; k < flips; k++) b[20 + Math.floor(rand() * (b.length - 20))] = Math.floor(rand() * 256);
    const cut = rand() < 0.3 ? b.subarray(0, 20 + Math.floor(rand() * (b.length - 20))) : b;
    const payload = cut.subarray(20);
    const m = { type: (C.NFNL_SUBSYS_CTNETLINK << 8) | 0, flags: 0, seq: 0, pid: 0, family: AF_INET, version: 0, resId: 0, payload };
    try {
      decodeEntry(m);
    } catch (err) {
      assert.ok(err instanceof DecodeError, String(err));
    }
  }
});
