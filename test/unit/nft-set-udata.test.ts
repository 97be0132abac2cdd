/** NFTA_SET_USERDATA (a set's `typeof`): golden bytes captured from nft itself, the set codec's
 * round trip, the read-back comparison, and decoders fed hostile bytes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { endianness } from 'node:os';
import { AttrMap, AttrWriter } from '../../src/netlink/attr';
import { decodeSet, encodeSet } from '../../src/nft/objects';
import { decodeSetUdata, encodeSetUdata, sameTypeof } from '../../src/nft/objects/set-udata';
import * as C from '../../src/nft/constants';
import { formatRuleBody, formatSet } from '../../src/nft/format';
import { NFPROTO, NftSet } from '../../src/nft/types';
import { sameSetDefinition } from '../../src/ruleset/model';
import { mulberry32 as rng } from '../helpers/prng';

const hex = (s: string) => Buffer.from(s.replace(/ /g, ''), 'hex');

// NFTA_SET_USERDATA of `nft add map inet t m '{ typeof numgen random mod 65536 : <data>; flags
// interval; }'`, captured with `nft --debug=mnl` (nftables v1.0.6, x86_64: host order is little
// endian). Only the data typeof's payload udata (proto desc id, field index) differs.
const COMMON_KEY = '00 04 01 00 00 00 01 04 02 00 00 00 03 1a 00 04 17 00 00 00 01 12 00 04 01 00 00 00 01 04 00 00 01 00 02 04 00 00 00 00';
const captured = (payload: string) => hex(`${COMMON_KEY} 04 14 00 04 07 00 00 00 01 0c ${payload} 06 04 00 00 00 00`);
const NFT_CAPTURES = [
  { data: 'ip daddr', udata: captured('00 04 0c 00 00 00 01 04 0c 00 00 00') },
  { data: 'ip6 daddr', udata: captured('00 04 0d 00 00 00 01 04 09 00 00 00') },
  { data: 'th dport', udata: captured('00 04 0b 00 00 00 01 04 02 00 00 00') },
];

const LE = endianness() === 'LE';

// `nft add map inet t v '{ typeof numgen random mod 2 : verdict; }'` (same capture): data
// byteorder 0, data typeof EXPR_VERDICT with empty expression udata.
const VERDICT_CAPTURE = hex('00 04 01 00 00 00 01 04 00 00 00 00 03 1a 00 04 17 00 00 00 01 12 00 04 01 00 00 00 01 04 02 00 00 00 02 04 00 00 00 00 04 08 00 04 01 00 00 00 01 00 06 04 00 00 00 00');

test('golden bytes: typeof numgen random mod 2 : verdict (nft --debug=mnl)', { skip: !LE && 'captured on a little-endian host' }, () => {
  const t = { key: 'numgen random mod 2', data: 'verdict' };
  assert.equal(encodeSetUdata(t).toString('hex'), VERDICT_CAPTURE.toString('hex'));
  assert.deepEqual(decodeSetUdata(VERDICT_CAPTURE), t);
});

for (const c of NFT_CAPTURES) {
  test(`golden bytes: typeof numgen random mod 65536 : ${c.data} (nft --debug=mnl)`, { skip: !LE && 'captured on a little-endian host' }, () => {
    const t = { key: 'numgen random mod 65536', data: c.data };
    assert.equal(encodeSetUdata(t).toString('hex'), c.udata.toString('hex'));
    assert.deepEqual(decodeSetUdata(c.udata), t);
  });
}

// `nft add map inet t m '{ typeof numgen random mod 65536 : ip daddr . th dport; flags interval; }'`
// (same capture): data byteorder 0 (a concatenation has none of its own), data typeof EXPR_CONCAT
// whose udata nests each field (type = its index) as sub expression id and sub udata.
const CONCAT_CAPTURE = hex(
  '00 04 01 00 00 00 01 04 00 00 00 00 03 1a 00 04 17 00 00 00 01 12 00 04 01 00 00 00 01 04 00 00 01 00 02 04 00 00 00 00 ' +
    '04 34 00 04 0d 00 00 00 01 2c 00 14 00 04 07 00 00 00 01 0c 00 04 0c 00 00 00 01 04 0c 00 00 00 ' +
    '01 14 00 04 07 00 00 00 01 0c 00 04 0b 00 00 00 01 04 02 00 00 00 06 04 00 00 00 00',
);

test('golden bytes: typeof numgen random mod 65536 : ip daddr . th dport (nft --debug=mnl)', { skip: !LE && 'captured on a little-endian host' }, () => {
  const t = { key: 'numgen random mod 65536', data: 'ip daddr . th dport' };
  assert.equal(encodeSetUdata(t).toString('hex'), CONCAT_CAPTURE.toString('hex'));
  assert.deepEqual(decodeSetUdata(CONCAT_CAPTURE), t);
});

test('a concatenated data typeof round-trips; a field nfkube cannot name makes the whole unnamed', () => {
  for (const data of ['ip6 daddr . th dport', 'ip saddr . ip daddr . th sport']) {
    const t = { key: 'numgen random mod 65536 offset 65536', data };
    assert.deepEqual(decodeSetUdata(encodeSetUdata(t)), t, data);
  }
  // The second field's expression id changed to EXPR_META (15).
  const bad = Buffer.from(CONCAT_CAPTURE);
  bad[bad.indexOf(Buffer.from('0b000000', 'hex')) - 8] = 15;
  assert.equal(decodeSetUdata(bad), undefined);
});

test('a set without data, other numgen forms, and payload keys round-trip', () => {
  for (const t of [
    { key: 'ip saddr' },
    { key: 'ip6 saddr', data: 'th sport' },
    { key: 'numgen incremental mod 3 offset 7', data: 'ip daddr' },
    { key: 'numgen random mod 1' },
  ]) {
    assert.deepEqual(decodeSetUdata(encodeSetUdata(t)), t, t.key);
  }
});

test('expressions outside the table are refused when encoding, unnamed when decoding', () => {
  assert.throws(() => encodeSetUdata({ key: 'meta mark' }), RangeError);
  assert.throws(() => encodeSetUdata({ key: 'numgen random mod 0' }), RangeError);
  assert.throws(() => encodeSetUdata({ key: 'numgen random mod 4294967296' }), RangeError);
  // A comment only (NFTNL_UDATA_SET_COMMENT), as `nft add set ... { comment "x"; }` writes.
  assert.equal(decodeSetUdata(Buffer.from([7, 2, 0x78, 0])), undefined);
  // An expression id nfkube does not name (EXPR_META = 15).
  const meta = Buffer.concat([Buffer.from([0, 4, 1, 0, 0, 0, 3, 12, 0, 4, 15, 0, 0, 0, 1, 4]), Buffer.from([0, 0, 0, 0])]);
  assert.equal(decodeSetUdata(meta), undefined);
});

test('the set codec writes NFTA_SET_USERDATA and reads it back; nft lists and format prints the typeof', () => {
  const set: NftSet = { family: 'inet', table: 't', name: 'm', key: ['integer'], data: 'ipv4_addr', flags: C.NFT_SET_INTERVAL, typeof: { key: 'numgen random mod 65536', data: 'ip daddr' } };
  const w = new AttrWriter();
  encodeSet(w, set);
  const payload = w.finish();
  const attrs = AttrMap.parse(payload, 'set');
  const ud = attrs.get(C.NFTA_SET_USERDATA)!;
  assert.ok(ud.buf.subarray(ud.start, ud.end).equals(encodeSetUdata(set.typeof!)));
  const back = decodeSet(NFPROTO.inet, payload);
  assert.deepEqual(back.typeof, set.typeof);
  assert.ok(sameSetDefinition(set, back));
  assert.match(formatSet(back), /\ttypeof numgen random mod 65536 : ip daddr\n/);
  // A different typeof is a definition change; none is not the same as one.
  assert.ok(!sameSetDefinition(set, { ...back, typeof: { key: 'numgen random mod 65536', data: 'th dport' } }));
  assert.ok(!sameSetDefinition(set, { ...back, typeof: undefined }));
  assert.ok(sameTypeof(undefined, undefined));
  // Without userdata, nothing is read.
  const plain = new AttrWriter();
  encodeSet(plain, { ...set, typeof: undefined });
  assert.equal(decodeSet(NFPROTO.inet, plain.finish()).typeof, undefined);
});

test("a map with concatenated data: the set codec writes nft's type id and length and reads them back", () => {
  for (const [addr, text, len, typeId] of [
    ['ipv4_addr', 'ip daddr', 8, 461],
    ['ipv6_addr', 'ip6 daddr', 20, 525],
  ] as const) {
    const set: NftSet = { family: 'inet', table: 't', name: 'm', key: ['integer'], data: [addr, 'inet_service'], flags: C.NFT_SET_INTERVAL, typeof: { key: 'numgen random mod 65536', data: `${text} . th dport` } };
    const w = new AttrWriter();
    encodeSet(w, set);
    const payload = w.finish();
    const attrs = AttrMap.parse(payload, 'set');
    // As nft sends it (captured with --debug=mnl): the fields' type ids 6 bits each, padded length.
    assert.equal(attrs.be32(C.NFTA_SET_DATA_TYPE), typeId);
    assert.equal(attrs.be32(C.NFTA_SET_DATA_LEN), len);
    const back = decodeSet(NFPROTO.inet, payload);
    assert.deepEqual(back.data, set.data);
    assert.ok(sameSetDefinition(set, back));
    assert.ok(!sameSetDefinition(set, { ...back, data: addr }));
    assert.match(formatSet(back), new RegExp(`\ttypeof numgen random mod 65536 : ${text} \\. th dport\n`));
  }
  const four = Buffer.from([198, 18, 1, 10, 0x1f, 0x90, 0, 0]);
  const v4: NftSet = { family: 'inet', table: 't', name: 'm', key: ['integer'], data: ['ipv4_addr', 'inet_service'], flags: C.NFT_SET_INTERVAL };
  assert.match(formatSet(v4, [{ key: Buffer.from([0, 0, 0, 0]), keyEnd: Buffer.from([0, 0, 0x7f, 0xff]), data: four }]), /elements = \{ 0-32767 : 198\.18\.1\.10 \. 8080 \}/);
});

test('the draw rule prints as nft lists it', { skip: !LE && 'host order' }, () => {
  const text = formatRuleBody([
    { type: 'meta', key: C.NFT_META_L4PROTO, dreg: C.NFT_REG_1 },
    { type: 'cmp', sreg: C.NFT_REG_1, op: 'eq', data: Buffer.from([6]) },
    { type: 'numgen', dreg: C.NFT_REG_3, modulus: 65536, ngType: 'random', offset: 0 },
    { type: 'bitwise', sreg: C.NFT_REG_3, dreg: C.NFT_REG_3, len: 4, op: 'lshift', shift: 16 },
    { type: 'bitwise', sreg: C.NFT_REG_3, dreg: C.NFT_REG_3, len: 4, op: 'bool', mask: Buffer.from([0, 0, 0xff, 0xff]), xor: Buffer.from([0x0d, 0xfe, 0, 0]) },
    { type: 'lookup', set: 'a', sreg: C.NFT_REG_3, dreg: C.NFT_REG_1 },
    { type: 'lookup', set: 'p', sreg: C.NFT_REG_3, dreg: C.NFT_REG_2 },
    { type: 'nat', natType: 'dnat', family: NFPROTO.ip, regAddrMin: C.NFT_REG_1, regAddrMax: C.NFT_REG_1, regProtoMin: C.NFT_REG_2, regProtoMax: C.NFT_REG_2, flags: 3 },
  ]);
  // As `nft list` printed the table nfkube committed (nftables v1.0.6).
  const draw = 'numgen random mod 65536 << 16 & 4294966797 | 65037';
  assert.equal(text, `meta l4proto tcp dnat ip to ${draw} map @a:${draw} map @p`);
});

test('the one-lookup draw rule prints as nft lists it and as nft -f reads it', { skip: !LE && 'host order' }, () => {
  for (const [fam, nat, portReg] of [[NFPROTO.ip, 'ip', C.NFT_REG32_01], [NFPROTO.ip6, 'ip6', C.NFT_REG_2]] as const) {
    const text = formatRuleBody([
      { type: 'meta', key: C.NFT_META_L4PROTO, dreg: C.NFT_REG_1 },
      { type: 'cmp', sreg: C.NFT_REG_1, op: 'eq', data: Buffer.from([6]) },
      { type: 'numgen', dreg: C.NFT_REG_1, modulus: 65536, ngType: 'random', offset: 0x12340000 },
      { type: 'byteorder', sreg: C.NFT_REG_1, dreg: C.NFT_REG_1, op: 'hton', len: 4, size: 4 },
      { type: 'lookup', set: 'm', sreg: C.NFT_REG_1, dreg: C.NFT_REG_1 },
      { type: 'nat', natType: 'dnat', family: fam, regAddrMin: C.NFT_REG_1, regAddrMax: C.NFT_REG_1, regProtoMin: portReg, regProtoMax: portReg, flags: 3 },
    ]);
    // nftables v1.0.6 lists (and parses back) exactly this.
    assert.equal(text, `meta l4proto tcp dnat ${nat} to numgen random mod 65536 offset 305397760 map @m`);
  }
});

test('hostile userdata: decoders never throw, and what they return re-encodes to itself', () => {
  const r = rng(11);
  const seeds = [...NFT_CAPTURES.map((c) => c.udata), VERDICT_CAPTURE, encodeSetUdata({ key: 'ip saddr' })];
  for (let i = 0; i < 20000; i++) {
    const base = Buffer.from(seeds[i % seeds.length]);
    let b: Buffer;
    switch (i % 4) {
      case 0:
        b = base.subarray(0, Math.floor(r() * (base.length + 1)));
        break;
      case 1:
        b = Buffer.from(base);
        for (let k = 0; k < 1 + Math.floor(r() * 4); k++) b[Math.floor(r() * b.length)] = Math.floor(r() * 256);
        break;
      case 2:
        b = Buffer.from(Array.from({ length: Math.floor(r() * 80) }, () => Math.floor(r() * 256)));
        break;
      default:
        b = Buffer.concat([base, Buffer.from(Array.from({ length: Math.floor(r() * 8) }, () => Math.floor(r() * 256)))]);
    }
    const t = decodeSetUdata(b);
    if (t) assert.deepEqual(decodeSetUdata(encodeSetUdata(t)), t);
    // Through the set codec too: hostile udata never fails a set's decode.
    const w = new AttrWriter();
    encodeSet(w, { family: 'inet', table: 't', name: 'm', key: ['integer'], data: 'ipv4_addr' });
    w.bytes(C.NFTA_SET_USERDATA, b);
    decodeSet(NFPROTO.inet, w.finish());
  }
});
