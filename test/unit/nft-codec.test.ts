import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AttrWriter } from '../../src/netlink/attr';
import { DecodeError } from '../../src/netlink/errors';
import { decodeNfMessages, encodeNfMessage } from '../../src/netlink/message';
import {
  decodeChain,
  decodeRule,
  decodeSet,
  decodeSetElements,
  decodeTable,
  encodeChain,
  encodeRule,
  encodeSet,
  encodeSetElements,
  encodeTable,
  kernelElements,
  userElements,
} from '../../src/nft/objects';
import { decodeGeneration } from '../../src/nft/generation';
import * as b from '../../src/nft/build';
import * as C from '../../src/nft/constants';
import { Chain, NFPROTO, NftSet, Rule, SetElement, Table } from '../../src/nft/types';
import { cidrRange, ipv4, ipv6 } from '../../src/net/ip-bytes';
import { be16, concatKey } from '../../src/nft/values';

function bytes(write: (w: AttrWriter) => void): Buffer {
  const w = new AttrWriter();
  write(w);
  return w.finish();
}

test('golden bytes: nft add table inet filter', () => {
  // struct nlattr { u16 len = 11; u16 type = NFTA_TABLE_NAME (1) } "filter\0" + 1 byte of padding
  assert.equal(bytes((w) => encodeTable(w, { family: 'inet', name: 'filter' })).toString('hex'), '0b00010066696c74657200' + '00');
});

test('golden bytes: nft add chain inet t c { type filter hook input priority -5; policy drop; }', () => {
  const got = bytes((w) => encodeChain(w, { family: 'inet', table: 't', name: 'c', base: { type: 'filter', hook: 'input', priority: -5, policy: 'drop' } }));
  const expected = [
    '0600010074000000', // NFTA_CHAIN_TABLE "t"
    '0600030063000000', // NFTA_CHAIN_NAME "c"
    '14000480', // NFTA_CHAIN_HOOK | NLA_F_NESTED, 20 bytes
    '0800010000000001', // NFTA_HOOK_HOOKNUM = NF_INET_LOCAL_IN (1), big-endian
    '08000200fffffffb', // NFTA_HOOK_PRIORITY = -5, big-endian two's complement
    '0800050000000000', // NFTA_CHAIN_POLICY = NF_DROP (0)
    '0b00070066696c74657200' + '00', // NFTA_CHAIN_TYPE "filter"
  ].join('');
  assert.equal(got.toString('hex'), expected);
});

test('golden bytes: a set element list with one IPv4 key', () => {
  const w = new AttrWriter();
  encodeSetElements(w, { table: 't', name: 's' }, [{ key: ipv4('198.18.0.1') }], 0);
  const expected = [
    '0600010074000000', // NFTA_SET_ELEM_LIST_TABLE "t"
    '0600020073000000', // NFTA_SET_ELEM_LIST_SET "s"
    '14000380', // NFTA_SET_ELEM_LIST_ELEMENTS, nested
    '10000180', // NFTA_LIST_ELEM, nested
    '0c000180', // NFTA_SET_ELEM_KEY, nested
    '08000100c6120001', // NFTA_DATA_VALUE 198.18.0.1
  ].join('');
  assert.equal(w.finish().toString('hex'), expected);
});

const family = NFPROTO.inet;

test('decode(encode(x)) == x: tables, chains, rules, sets', () => {
  const table: Table = { family: 'inet', name: 'nfk', flags: 0x12345678 };
  assert.deepEqual(decodeTable(family, bytes((w) => encodeTable(w, table))), { ...table, handle: undefined, use: undefined });

  const base: Chain = { family: 'inet', table: 'nfk', name: 'in', base: { type: 'nat', hook: 'postrouting', priority: 0x12345678, policy: 'accept' } };
  const plain: Chain = { family: 'inet', table: 'nfk', name: 'pol_x' };
  for (const c of [base, plain]) assert.deepEqual(decodeChain(family, bytes((w) => encodeChain(w, c))), { ...c, handle: undefined, flags: undefined, use: undefined });
  const netdev: Chain = { family: 'netdev', table: 'nd', name: 'ing', base: { type: 'filter', hook: 'ingress', priority: -500, policy: 'accept', device: 'eth0' } };
  assert.deepEqual(decodeChain(NFPROTO.netdev, bytes((w) => encodeChain(w, netdev))).base, netdev.base);

  const rule: Rule = { family: 'inet', table: 'nfk', chain: 'in', exprs: [...b.matchAddrInSet('ip saddr', 'peers'), ...b.matchPort('tcp', 'th dport', 80, 90), b.counter(), b.jump('pol_x')], comment: 'x/web ingress[0]' };
  assert.deepEqual(decodeRule(family, bytes((w) => encodeRule(w, rule))), { ...rule, handle: undefined });
  const withHandle = { ...rule, handle: 0x123456789an };
  assert.equal(decodeRule(family, bytes((w) => encodeRule(w, withHandle))).handle, 0x123456789an);

  const sets: NftSet[] = [
    { family: 'inet', table: 'nfk', name: 'a', key: ['ipv4_addr'], flags: 0 },
    { family: 'inet', table: 'nfk', name: 'b', key: ['ipv6_addr'], flags: C.NFT_SET_INTERVAL },
    { family: 'inet', table: 'nfk', name: 'c', key: ['ipv4_addr', 'inet_proto', 'inet_service'], flags: 0 },
    { family: 'inet', table: 'nfk', name: 'd', key: ['ipv4_addr'], flags: 0, data: 'verdict' },
    { family: 'inet', table: 'nfk', name: 'e', key: ['inet_service'], flags: C.NFT_SET_TIMEOUT, data: 'mark', timeout: 30_000n },
  ];
  for (const s of sets) assert.deepEqual(decodeSet(family, bytes((w) => encodeSet(w, { ...s, id: 7 }))), { ...s, handle: undefined });
});

test('decode(encode(x)) == x: set elements, in batches split under the 16-bit nest limit', () => {
  const elems: SetElement[] = Array.from({ length: 5000 }, (_, i) => ({ key: ipv4(`198.18.${i >> 8}.${i & 255}`), verdict: i % 2 ? { kind: 'goto', chain: `pod_${i}_in` } : { kind: 'drop' } }));
  const messages: Buffer[] = [];
  for (let i = 0; i < elems.length; ) {
    const w = new AttrWriter();
    i = encodeSetElements(w, { table: 'nfk', name: 'm' }, elems, i);
    assert.ok(w.length < 65536);
    messages.push(w.finish());
  }
  assert.ok(messages.length > 1);
  const back = messages.flatMap((m) => decodeSetElements(m).elements);
  assert.deepEqual(back, elems);
});

test('interval sets: ranges become rbtree start/end pairs for one field and KEY_END for concatenations, and back', () => {
  const one: NftSet = { family: 'inet', table: 't', name: 'n', key: ['ipv4_addr'], flags: C.NFT_SET_INTERVAL };
  const r = cidrRange('198.18.0.0/16');
  const user: SetElement[] = [{ key: r.first, keyEnd: r.last }, { key: ipv4('198.19.0.7') }, { key: ipv4('255.255.255.0'), keyEnd: ipv4('255.255.255.255') }];
  const kernel = kernelElements(one, user);
  assert.deepEqual(
    kernel.map((e) => [[...e.key].join('.'), e.flags ?? 0]),
    [['198.18.0.0', 0], ['198.19.0.0', 1], ['198.19.0.7', 0], ['198.19.0.8', 1], ['255.255.255.0', 0]],
  );
  assert.deepEqual(userElements(one, [...kernel].reverse()), user.slice().sort((x, y) => Buffer.compare(x.key, y.key)));

  const concat: NftSet = { family: 'inet', table: 't', name: 'p', key: ['inet_proto', 'inet_service'], flags: C.NFT_SET_INTERVAL };
  const range = { key: concatKey([Buffer.from([6]), be16(1000)]), keyEnd: concatKey([Buffer.from([6]), be16(2000)]) };
  assert.deepEqual(kernelElements(concat, [range]), [range]);
  assert.deepEqual(userElements(concat, [{ key: range.key, keyEnd: range.key }]), [{ key: range.key }]);
  assert.equal(ipv6('2001:db8::1').toString('hex'), '20010db8000000000000000000000001');
});

test('generation and framing: NEWGEN decodes; messages round-trip', () => {
  const payload = bytes((w) => w.be32(C.NFTA_GEN_ID, 0x12345678));
  assert.equal(decodeGeneration(payload), 0x12345678);
  const m = encodeNfMessage({ type: 0x0a10, flags: 5, seq: 0x12345678, family: 1, resId: 0x0a00, payload });
  assert.deepEqual(decodeNfMessages(Buffer.concat([m, m])).map((x) => [x.type, x.flags, x.seq, x.family, x.resId, x.payload.toString('hex')]), [
    [0x0a10, 5, 0x12345678, 1, 0x0a00, payload.toString('hex')],
    [0x0a10, 5, 0x12345678, 1, 0x0a00, payload.toString('hex')],
  ]);
});

test('object decoders never crash on random or truncated bytes: DecodeError or a value', () => {
  const seeds = [
    bytes((w) => encodeRule(w, { family: 'inet', table: 't', chain: 'c', exprs: [...b.ctState(['established']), b.accept()], comment: 'c' })),
    bytes((w) => encodeSet(w, { family: 'inet', table: 't', name: 's', key: ['ipv4_addr', 'inet_service'], flags: 0, id: 1 })),
    bytes((w) => encodeChain(w, { family: 'inet', table: 't', name: 'c', base: { type: 'filter', hook: 'input', priority: 0, policy: 'accept' } })),
    bytes((w) => void encodeSetElements(w, { table: 't', name: 's' }, [{ key: ipv4('198.18.0.1'), verdict: { kind: 'jump', chain: 'x' } }], 0)),
  ];
  const decoders = [(p: Buffer) => decodeRule(1, p), (p: Buffer) => decodeSet(1, p), (p: Buffer) => decodeChain(1, p), (p: Buffer) => decodeSetElements(p), (p: Buffer) => decodeTable(1, p), (p: Buffer) => decodeNfMessages(p)];
  let seed = 12345;
  const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
  let decoded = 0;
  for (let i = 0; i < 20000; i++) {
    const base = seeds[i % seeds.length];
    let input: Buffer;
    if (i % 3 === 0) input = base.subarray(0, Math.floor(rand() * base.length));
    else if (i % 3 === 1) {
      input = Buffer.from(base);
      for (let k = 0; k < 1 + rand() * 4; k++) input[Math.floor(rand() * input.length)] = Math.floor(rand() * 256);
    } else input = Buffer.from(Array.from({ length: Math.floor(rand() * 64) }, () => Math.floor(rand() * 256)));
    for (const decode of decoders) {
      try {
        decode(input);
        decoded++;
      } catch (err) {
        assert.ok(err instanceof DecodeError, `${(err as Error).name}: ${(err as Error).message}`);
      }
    }
  }
  assert.ok(decoded > 0);
});

test('a concatenated set key reads back whole whether or not the set carries NFTA_SET_DESC_CONCAT', () => {
  // nft sends the field lengths only for interval concatenations; the packed type id alone must
  // give every field (6 bits each: ipv4_addr 7, inet_proto 12, inet_service 13).
  const packed = (7 << 12) | (12 << 6) | 13;
  const w = new AttrWriter();
  w.str(C.NFTA_SET_TABLE, 't').str(C.NFTA_SET_NAME, 'svc').be32(C.NFTA_SET_FLAGS, C.NFT_SET_CONCAT).be32(C.NFTA_SET_KEY_TYPE, packed).be32(C.NFTA_SET_KEY_LEN, 12);
  assert.deepEqual(decodeSet(NFPROTO.inet, w.finish()).key, ['ipv4_addr', 'inet_proto', 'inet_service']);

  const mine: NftSet = { family: 'inet', table: 't', name: 'svc', key: ['ipv4_addr', 'inet_proto', 'inet_service'], flags: 0 };
  const enc = new AttrWriter();
  encodeSet(enc, mine);
  assert.deepEqual(decodeSet(NFPROTO.inet, enc.finish()).key, mine.key);

  // A type id whose fields do not add up to the key length is refused, not misread.
  const bad = new AttrWriter();
  bad.str(C.NFTA_SET_TABLE, 't').str(C.NFTA_SET_NAME, 'x').be32(C.NFTA_SET_KEY_TYPE, packed).be32(C.NFTA_SET_KEY_LEN, 8);
  assert.throws(() => decodeSet(NFPROTO.inet, bad.finish()), DecodeError);
});

test('nestedBytes writes what a nest around one bytes attribute writes, padding included, at any offset', () => {
  for (let len = 1; len <= 40; len++) {
    const data = Buffer.from(Array.from({ length: len }, (_, i) => 0xa0 + i));
    for (const lead of [0, 1, 2, 3]) {
      // A small initial buffer: both writers grow it mid-attribute at some lengths.
      const viaNest = new AttrWriter(8);
      const direct = new AttrWriter(8);
      for (const w of [viaNest, direct]) if (lead) w.bytes(1, Buffer.alloc(lead, 0xff));
      viaNest.nest(C.NFTA_SET_ELEM_KEY, (w) => w.bytes(C.NFTA_DATA_VALUE, data));
      direct.nestedBytes(C.NFTA_SET_ELEM_KEY, C.NFTA_DATA_VALUE, data);
      assert.deepEqual(direct.finish(), viaNest.finish(), `${len} bytes after ${lead}`);
    }
  }
  assert.throws(() => new AttrWriter().nestedBytes(1, 1, Buffer.alloc(0xfff8)), /too long/);
});

test('AttrWriter frames a message exactly as writeNfHeader and encodeNfMessage do', () => {
  for (const [type, flags, seq, family, resId] of [
    [0x0a06, 0x0405, 1, 1, 0],
    [0xffff, 0xffff, 0xffffffff, 0xff, 0xffff],
    [0x10, 0x1, 0x80000000, 0, 10],
  ]) {
    const w = new AttrWriter(8);
    const at = w.beginMessage(type, flags, seq, family, resId);
    w.str(1, 'payload');
    w.endMessage(at);
    const payload = new AttrWriter().str(1, 'payload').finish();
    assert.deepEqual(w.finish(), encodeNfMessage({ type, flags, seq, family, resId, payload }));
  }
  assert.throws(() => new AttrWriter().beginMessage(0x10000, 0, 1, 0), /out of range/);
  assert.throws(() => new AttrWriter().beginMessage(1, 0, 1, 256), /out of range/);
});
