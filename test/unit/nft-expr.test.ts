/** The nf_tables expression codec: golden bytes laid out by hand from linux/netfilter/nf_tables.h
 * (each with the nft statement that produces it and the line `nft --debug=netlink` prints for it;
 * test/kernel/nft-expr-oracle.test.ts checks the same against nft's real bytes), round trips with
 * sentinel values, robustness against random bytes, and opaque expressions. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AttrWriter, NLA_F_NESTED } from '../../src/netlink/attr';
import { DecodeError } from '../../src/netlink/errors';
import * as C from '../../src/nft/constants';
import { ruleKey, sameRuleBody } from '../../src/nft/canonical';
import { decodeExpr, decodeExprList, describeExpr, encodeExpr, encodeExprList } from '../../src/nft/expr';
import { Expr } from '../../src/nft/types';
import { mulberry32 as prng } from '../helpers/prng';

/** Hex with `#` comments and free spacing, one attribute per line. */
function golden(text: string): Buffer {
  return Buffer.from(
    text
      .split('\n')
      .map((l) => l.replace(/#.*/, ''))
      .join('')
      .replace(/\s+/g, ''),
    'hex',
  );
}

function encodeOne(e: Expr): Buffer {
  const w = new AttrWriter();
  encodeExpr(w, e);
  return w.finish();
}

/** decodeExpr takes the payload of NFTA_LIST_ELEM: the element without its 4-byte header. */
const payloadOf = (elem: Buffer) => elem.subarray(4);

interface Golden {
  nft: string;
  debug: string;
  expr: Expr;
  bytes: string;
}

const GOLDENS: Golden[] = [
  {
    nft: 'ip saddr 198.18.0.1 (the load)',
    debug: '[ payload load 4b @ network header + 12 => reg 1 ]',
    expr: { type: 'payload', base: 'network', offset: 12, len: 4, dreg: 1 },
    bytes: `
      34000180                   # NFTA_LIST_ELEM, 52 bytes, nested
      0c000100 7061796c6f616400  # NFTA_EXPR_NAME "payload\\0"
      24000280                   # NFTA_EXPR_DATA, 36 bytes, nested
      08000100 00000001          # NFTA_PAYLOAD_DREG be32 1
      08000200 00000001          # NFTA_PAYLOAD_BASE be32 NFT_PAYLOAD_NETWORK_HEADER
      08000300 0000000c          # NFTA_PAYLOAD_OFFSET be32 12
      08000400 00000004          # NFTA_PAYLOAD_LEN be32 4`,
  },
  {
    nft: 'tcp dport set 80 (the store)',
    debug: '[ payload write reg 1 => 2b @ transport header + 2 csum_type 1 csum_off 16 csum_flags 0x0 ]',
    expr: { type: 'payload', base: 'transport', offset: 2, len: 2, sreg: 1, csumType: C.NFT_PAYLOAD_CSUM_INET, csumOffset: 16 },
    bytes: `
      44000180
      0c000100 7061796c6f616400  # "payload"
      34000280
      08000500 00000001          # NFTA_PAYLOAD_SREG 1
      08000200 00000002          # NFTA_PAYLOAD_BASE NFT_PAYLOAD_TRANSPORT_HEADER
      08000300 00000002          # NFTA_PAYLOAD_OFFSET 2
      08000400 00000002          # NFTA_PAYLOAD_LEN 2
      08000600 00000001          # NFTA_PAYLOAD_CSUM_TYPE NFT_PAYLOAD_CSUM_INET
      08000700 00000010          # NFTA_PAYLOAD_CSUM_OFFSET 16 (the TCP checksum)`,
  },
  {
    nft: 'meta l4proto tcp (the load)',
    debug: '[ meta load l4proto => reg 1 ]',
    expr: { type: 'meta', key: C.NFT_META_L4PROTO, dreg: 1 },
    bytes: `
      24000180
      09000100 6d657461 00000000 # NFTA_EXPR_NAME "meta\\0", padded to 4
      14000280
      08000200 00000010          # NFTA_META_KEY NFT_META_L4PROTO
      08000100 00000001          # NFTA_META_DREG 1`,
  },
  {
    nft: 'meta l4proto tcp (the compare)',
    debug: '[ cmp eq reg 1 0x00000006 ]',
    expr: { type: 'cmp', sreg: 1, op: 'eq', data: Buffer.from([6]) },
    bytes: `
      2c000180
      08000100 636d7000          # "cmp"
      20000280
      08000100 00000001          # NFTA_CMP_SREG 1
      08000200 00000000          # NFTA_CMP_OP NFT_CMP_EQ
      0c000380                   # NFTA_CMP_DATA, nested
      05000100 06000000          #   NFTA_DATA_VALUE, 1 byte + padding`,
  },
  {
    nft: 'ip saddr 198.18.0.0/15 (the mask)',
    debug: '[ bitwise reg 1 = ( reg 1 & 0x0000feff ) ^ 0x00000000 ]',
    expr: { type: 'bitwise', sreg: 1, dreg: 1, len: 4, mask: Buffer.from('fffe0000', 'hex'), xor: Buffer.alloc(4) },
    bytes: `
      44000180
      0c000100 62697477697365 00 # "bitwise"
      34000280
      08000100 00000001          # NFTA_BITWISE_SREG 1
      08000200 00000001          # NFTA_BITWISE_DREG 1
      08000300 00000004          # NFTA_BITWISE_LEN 4
      0c000480 08000100 fffe0000 # NFTA_BITWISE_MASK {NFTA_DATA_VALUE 255.254.0.0}
      0c000580 08000100 00000000 # NFTA_BITWISE_XOR {NFTA_DATA_VALUE 0}`,
  },
  {
    nft: 'meta mark set meta mark << 2 (the shift)',
    debug: '[ bitwise reg 1 = ( reg 1 << 0x00000002 ) ]',
    expr: { type: 'bitwise', sreg: 1, dreg: 1, len: 4, op: 'lshift', shift: 2 },
    bytes: `
      40000180
      0c000100 62697477697365 00
      30000280
      08000100 00000001          # SREG
      08000200 00000001          # DREG
      08000600 00000001          # NFTA_BITWISE_OP NFT_BITWISE_LSHIFT (libnftnl puts OP before LEN)
      08000300 00000004          # LEN
      0c000780 08000100 02000000 # NFTA_BITWISE_DATA {NFTA_DATA_VALUE u32 2 in host order}`,
  },
  {
    nft: 'tcp sport != 3000-4000',
    debug: '[ range neq reg 1 0x0000b80b 0x0000a00f ]',
    expr: { type: 'range', sreg: 1, op: 'neq', from: Buffer.from('0bb8', 'hex'), to: Buffer.from('0fa0', 'hex') },
    bytes: `
      3c000180
      0a000100 72616e6765000000  # "range"
      2c000280
      08000100 00000001          # NFTA_RANGE_SREG 1
      08000200 00000001          # NFTA_RANGE_OP NFT_RANGE_NEQ
      0c000380 06000100 0bb80000 # NFTA_RANGE_FROM_DATA {3000}
      0c000480 06000100 0fa00000 # NFTA_RANGE_TO_DATA {4000}`,
  },
  {
    nft: 'ip daddr != @s (set s created in the same batch with id 1)',
    debug: '[ lookup reg 1 set s 0x1 ]',
    expr: { type: 'lookup', set: 's', setId: 1, sreg: 1, invert: true },
    bytes: `
      34000180
      0b000100 6c6f6f6b75700000  # "lookup"
      24000280
      08000200 00000001          # NFTA_LOOKUP_SREG 1
      06000100 73000000          # NFTA_LOOKUP_SET "s\\0"
      08000400 00000001          # NFTA_LOOKUP_SET_ID 1
      08000500 00000001          # NFTA_LOOKUP_FLAGS NFT_LOOKUP_F_INV`,
  },
  {
    nft: 'accept',
    debug: '[ immediate reg 0 accept ]',
    expr: { type: 'immediate', dreg: 0, verdict: { kind: 'accept' } },
    bytes: `
      30000180
      0e000100 696d6d656469617465000000 # "immediate"
      1c000280
      08000100 00000000          # NFTA_IMMEDIATE_DREG NFT_REG_VERDICT
      10000280                   # NFTA_IMMEDIATE_DATA
      0c000280                   #   NFTA_DATA_VERDICT
      08000100 00000001          #     NFTA_VERDICT_CODE NF_ACCEPT`,
  },
  {
    nft: 'jump c2',
    debug: '[ immediate reg 0 jump -> c2 ]',
    expr: { type: 'immediate', dreg: 0, verdict: { kind: 'jump', chain: 'c2' } },
    bytes: `
      38000180
      0e000100 696d6d656469617465000000
      24000280
      08000100 00000000
      18000280
      14000280
      08000100 fffffffd          #     NFTA_VERDICT_CODE NFT_JUMP (-3)
      07000200 63320000          #     NFTA_VERDICT_CHAIN "c2\\0"`,
  },
  {
    nft: 'meta mark set 0x12345678 (the load)',
    debug: '[ immediate reg 1 0x12345678 ]',
    expr: { type: 'immediate', dreg: 1, data: Buffer.from('78563412', 'hex') },
    bytes: `
      2c000180
      0e000100 696d6d656469617465000000
      18000280
      08000100 00000001          # NFTA_IMMEDIATE_DREG 1
      0c000280 08000100 78563412 # NFTA_IMMEDIATE_DATA {NFTA_DATA_VALUE mark in host order}`,
  },
  {
    nft: 'counter packets 5 bytes 10',
    debug: '[ counter pkts 5 bytes 10 ]',
    expr: { type: 'counter', packets: 5n, bytes: 10n },
    bytes: `
      2c000180
      0c000100 636f756e74657200  # "counter"
      1c000280
      0c000100 000000000000000a  # NFTA_COUNTER_BYTES be64 10
      0c000200 0000000000000005  # NFTA_COUNTER_PACKETS be64 5`,
  },
  {
    nft: 'counter',
    debug: '[ counter pkts 0 bytes 0 ]',
    expr: { type: 'counter', packets: 0n, bytes: 0n },
    bytes: `
      14000180
      0c000100 636f756e74657200
      04000280                   # empty NFTA_EXPR_DATA: zero counts are sent as absent`,
  },
  {
    nft: 'ct original ip saddr 198.18.0.9 (the load)',
    debug: '[ ct load src_ip => reg 1 , dir original ]',
    expr: { type: 'ct', key: C.NFT_CT_SRC_IP, dreg: 1, direction: 0 },
    bytes: `
      28000180
      07000100 63740000          # "ct"
      1c000280
      08000200 00000013          # NFTA_CT_KEY NFT_CT_SRC_IP
      08000100 00000001          # NFTA_CT_DREG 1
      05000300 00000000          # NFTA_CT_DIRECTION u8 IP_CT_DIR_ORIGINAL`,
  },
  {
    nft: 'limit rate 10/second burst 3 packets',
    debug: '[ limit rate 10/second burst 3 type packets flags 0x0 ]',
    expr: { type: 'limit', rate: 10n, unit: 1n, burst: 3, limitType: 'pkts', flags: 0 },
    bytes: `
      44000180
      0a000100 6c696d6974000000  # "limit"
      34000280
      0c000100 000000000000000a  # NFTA_LIMIT_RATE be64 10
      0c000200 0000000000000001  # NFTA_LIMIT_UNIT be64 1 (second)
      08000300 00000003          # NFTA_LIMIT_BURST 3
      08000400 00000000          # NFTA_LIMIT_TYPE NFT_LIMIT_PKTS
      08000500 00000000          # NFTA_LIMIT_FLAGS 0`,
  },
  {
    nft: 'log prefix "x" level info',
    debug: '[ log prefix x level 6 ]',
    expr: { type: 'log', prefix: 'x', level: 6 },
    bytes: `
      20000180
      08000100 6c6f6700          # "log"
      14000280
      06000200 78000000          # NFTA_LOG_PREFIX "x\\0"
      08000500 00000006          # NFTA_LOG_LEVEL 6`,
  },
  {
    nft: 'log group 2 snaplen 100 queue-threshold 5',
    debug: '[ log group 2 snaplen 100 qthreshold 5 ]',
    expr: { type: 'log', group: 2, snaplen: 100, qthreshold: 5 },
    bytes: `
      28000180
      08000100 6c6f6700
      1c000280
      06000100 00020000          # NFTA_LOG_GROUP be16 2
      08000300 00000064          # NFTA_LOG_SNAPLEN be32 100
      06000400 00050000          # NFTA_LOG_QTHRESHOLD be16 5`,
  },
  {
    nft: 'reject with icmpx type admin-prohibited',
    debug: '[ reject type 2 code 3 ]',
    expr: { type: 'reject', rejectType: C.NFT_REJECT_ICMPX_UNREACH, icmpCode: C.NFT_REJECT_ICMPX_ADMIN_PROHIBITED },
    bytes: `
      24000180
      0b000100 72656a6563740000  # "reject"
      14000280
      08000100 00000002          # NFTA_REJECT_TYPE NFT_REJECT_ICMPX_UNREACH
      05000200 03000000          # NFTA_REJECT_ICMP_CODE u8 3`,
  },
  {
    nft: 'dnat ip to 198.18.0.2:80 (after the address and port loads)',
    debug: '[ nat dnat ip addr_min reg 1 proto_min reg 2 flags 0x2 ]',
    expr: { type: 'nat', natType: 'dnat', family: 2, regAddrMin: 1, regProtoMin: 2, flags: 2 },
    bytes: `
      38000180
      08000100 6e617400          # "nat"
      2c000280
      08000100 00000001          # NFTA_NAT_TYPE NFT_NAT_DNAT
      08000200 00000002          # NFTA_NAT_FAMILY NFPROTO_IPV4
      08000300 00000001          # NFTA_NAT_REG_ADDR_MIN 1
      08000500 00000002          # NFTA_NAT_REG_PROTO_MIN 2
      08000700 00000002          # NFTA_NAT_FLAGS NF_NAT_RANGE_PROTO_SPECIFIED`,
  },
  {
    nft: 'meta mark set numgen inc mod 2 offset 10 (the numgen)',
    debug: '[ numgen reg 1 = inc mod 2 offset 10 ]',
    expr: { type: 'numgen', dreg: 1, modulus: 2, ngType: 'inc', offset: 10 },
    bytes: `
      34000180
      0b000100 6e756d67656e0000  # "numgen"
      24000280
      08000100 00000001          # NFTA_NG_DREG 1
      08000200 00000002          # NFTA_NG_MODULUS 2
      08000300 00000000          # NFTA_NG_TYPE NFT_NG_INCREMENTAL
      08000400 0000000a          # NFTA_NG_OFFSET 10`,
  },
  {
    nft: 'dnat ip to numgen random mod 65536 map @m (the conversion before the interval map lookup)',
    debug: '[ byteorder reg 1 = hton(reg 1, 4, 4) ]',
    expr: { type: 'byteorder', sreg: 1, dreg: 1, op: 'hton', len: 4, size: 4 },
    bytes: `
      40000180
      0e000100 627974656f726465 72000000  # "byteorder"
      2c000280
      08000100 00000001          # NFTA_BYTEORDER_SREG 1
      08000200 00000001          # NFTA_BYTEORDER_DREG 1
      08000300 00000001          # NFTA_BYTEORDER_OP NFT_BYTEORDER_HTON
      08000400 00000004          # NFTA_BYTEORDER_LEN 4
      08000500 00000004          # NFTA_BYTEORDER_SIZE 4`,
  },
  {
    nft: 'meta mark set jhash ip saddr mod 2 seed 0xdeadbeef offset 100 (the hash)',
    debug: '[ hash reg 1 = jhash(reg 2, 4, 0xdeadbeef) % mod 2 offset 100 ]',
    expr: { type: 'hash', hashType: 'jenkins', sreg: 2, dreg: 1, len: 4, modulus: 2, seed: 0xdeadbeef, offset: 100 },
    bytes: `
      4c000180
      09000100 68617368 00000000 # "hash"
      3c000280
      08000100 00000002          # NFTA_HASH_SREG 2
      08000200 00000001          # NFTA_HASH_DREG 1
      08000300 00000004          # NFTA_HASH_LEN 4
      08000400 00000002          # NFTA_HASH_MODULUS 2
      08000500 deadbeef          # NFTA_HASH_SEED
      08000600 00000064          # NFTA_HASH_OFFSET 100
      08000700 00000000          # NFTA_HASH_TYPE NFT_HASH_JENKINS`,
  },
  {
    nft: 'counter name "c1"',
    debug: '[ objref type 1 name c1 ]',
    expr: { type: 'objref', objType: C.NFT_OBJECT_COUNTER, name: 'c1' },
    bytes: `
      24000180
      0b000100 6f626a7265660000  # "objref"
      14000280
      08000100 00000001          # NFTA_OBJREF_IMM_TYPE NFT_OBJECT_COUNTER
      06000200 63310000          # NFTA_OBJREF_IMM_NAME "c1" without NUL, as libnftnl sends it`,
  },
  {
    nft: 'masquerade fully-random',
    debug: '[ masq flags 0x10 ]',
    expr: { type: 'masq', flags: 0x10 },
    bytes: `
      1c000180
      09000100 6d61737100000000  # "masq"
      0c000280
      08000100 00000010          # NFTA_MASQ_FLAGS NF_NAT_RANGE_PROTO_RANDOM_FULLY`,
  },
  {
    nft: 'fib saddr type local (the fib)',
    debug: '[ fib saddr type => reg 1 ]',
    expr: { type: 'fib', dreg: 1, result: C.NFT_FIB_RESULT_ADDRTYPE, flags: C.NFTA_FIB_F_SADDR },
    bytes: `
      28000180
      08000100 66696200          # "fib"
      1c000280
      08000300 00000001          # NFTA_FIB_FLAGS NFTA_FIB_F_SADDR (libnftnl's order)
      08000200 00000003          # NFTA_FIB_RESULT NFT_FIB_RESULT_ADDRTYPE
      08000100 00000001          # NFTA_FIB_DREG 1`,
  },
  {
    nft: 'update @aff { ip saddr } (the dynset)',
    debug: '[ dynset update reg_key 1 set aff ]',
    expr: { type: 'dynset', set: 'aff', op: 'update', sregKey: 1 },
    bytes: `
      2c000180
      0b000100 64796e7365740000  # "dynset"
      1c000280
      08000400 00000001          # NFTA_DYNSET_SREG_KEY 1 (libnftnl's order)
      08000300 00000001          # NFTA_DYNSET_OP NFT_DYNSET_OP_UPDATE
      08000100 61666600          # NFTA_DYNSET_SET_NAME "aff"`,
  },
  {
    nft: 'synproxy mss 1460 (an expression nfkube does not model)',
    debug: '[ synproxy opaque 0600010005b40000 ]',
    expr: { type: 'opaque', name: 'synproxy', data: Buffer.from('0600010005b40000', 'hex') },
    bytes: `
      20000180
      0d000100 73796e70726f787900000000 # "synproxy"
      0c000280
      06000100 05b40000          # NFTA_SYNPROXY_MSS be16 1460, kept as raw bytes`,
  },
];

for (const g of GOLDENS) {
  test(`golden ${g.expr.type}: ${g.nft}`, () => {
    const bytes = golden(g.bytes);
    assert.equal(bytes.readUInt16LE(0), bytes.length, 'golden NFTA_LIST_ELEM length');
    assert.equal(encodeOne(g.expr).toString('hex'), bytes.toString('hex'));
    assert.deepEqual(decodeExpr(payloadOf(bytes)), g.expr);
    assert.equal(describeExpr(g.expr), g.debug);
  });
}

test('an expression list nests NFTA_LIST_ELEMs under the given attribute and decodes back in order', () => {
  const exprs = GOLDENS.map((g) => g.expr);
  const w = new AttrWriter();
  encodeExprList(w, C.NFTA_RULE_EXPRESSIONS, exprs);
  const out = w.finish();
  assert.equal(out.readUInt16LE(2), C.NFTA_RULE_EXPRESSIONS | NLA_F_NESTED);
  assert.equal(out.subarray(4).toString('hex'), Buffer.concat(GOLDENS.map((g) => golden(g.bytes))).toString('hex'));
  assert.deepEqual(decodeExprList(out.subarray(4)), exprs);
  assert.deepEqual(decodeExprList(Buffer.alloc(0)), []);
});

// Every field a distinct multi-byte sentinel, so a swapped byte order or field shows.
const SENTINELS: Expr[] = [
  { type: 'payload', base: 'inner', offset: 0x12345678, len: 0x23456789, dreg: 0x3456789a },
  { type: 'payload', base: 'll', offset: 0x12345678, len: 0x23456789, sreg: 0x3456789a, csumType: 0x456789ab, csumOffset: 0x56789abc, csumFlags: 0x6789abcd },
  { type: 'meta', key: 0x12345678, dreg: 0x23456789 },
  { type: 'meta', key: 0x12345678, sreg: 0x23456789 },
  ...(['eq', 'neq', 'lt', 'lte', 'gt', 'gte'] as const).map((op): Expr => ({ type: 'cmp', sreg: 0x12345678, op, data: Buffer.from('0102030405060708090a', 'hex') })),
  { type: 'cmp', sreg: 1, op: 'eq', data: Buffer.alloc(C.NFT_DATA_VALUE_MAXLEN, 0xab) },
  { type: 'bitwise', sreg: 0x12345678, dreg: 0x23456789, len: 0x3456789a, op: 'bool', mask: Buffer.from('a1b2c3d4e5', 'hex'), xor: Buffer.from('0f1e2d3c4b', 'hex') },
  { type: 'bitwise', sreg: 0x12345678, dreg: 0x23456789, len: 0x3456789a, op: 'rshift', shift: 0x456789ab },
  { type: 'range', sreg: 0x12345678, op: 'eq', from: Buffer.from('0102', 'hex'), to: Buffer.from('0304', 'hex') },
  { type: 'lookup', set: 'set-\u00e9', setId: 0x12345678, sreg: 0x23456789, dreg: 0x3456789a, invert: false },
  { type: 'lookup', set: 's', sreg: 0x23456789, invert: true },
  { type: 'immediate', dreg: 0x12345678, data: Buffer.from('0102030405060708090a0b0c0d0e0f10', 'hex') },
  ...(['accept', 'drop', 'continue', 'return', 'break', 'queue', 'stolen', 'repeat'] as const).map((kind): Expr => ({ type: 'immediate', dreg: 0, verdict: { kind } })),
  { type: 'immediate', dreg: 0, verdict: { kind: 'goto', chain: 'chain-\u00e9' } },
  { type: 'counter', packets: 0x123456789abcdef0n, bytes: 0xfedcba9876543210n },
  { type: 'counter', packets: 7n, bytes: 0n },
  { type: 'ct', key: 0x12345678, dreg: 0x23456789, direction: 0x12 },
  { type: 'ct', key: 0x12345678, sreg: 0x23456789 },
  { type: 'limit', rate: 0x123456789abcdef0n, unit: 0x0fedcba987654321n, burst: 0x12345678, limitType: 'bytes', flags: 0x23456789 },
  { type: 'limit', rate: 1n, unit: 60n, burst: 0, limitType: 'pkts', flags: 0 },
  { type: 'log', prefix: 'pre fix', group: 0x1234, snaplen: 0x12345678, qthreshold: 0x2345, level: 0x3456789a, flags: 0x456789ab },
  { type: 'log' },
  { type: 'reject', rejectType: C.NFT_REJECT_ICMP_UNREACH, icmpCode: 0x12 },
  { type: 'reject', rejectType: C.NFT_REJECT_TCP_RST, icmpCode: 0 },
  { type: 'nat', natType: 'snat', family: 0x12345678, regAddrMin: 0x23456789, regAddrMax: 0x3456789a, regProtoMin: 0x456789ab, regProtoMax: 0x56789abc, flags: 0x6789abcd },
  { type: 'nat', natType: 'dnat', family: 10 },
  { type: 'numgen', dreg: 0x12345678, modulus: 0x23456789, ngType: 'random', offset: 0x3456789a },
  { type: 'numgen', dreg: 1, modulus: 2, ngType: 'inc' },
  { type: 'byteorder', sreg: 0x12345678, dreg: 0x23456789, op: 'ntoh', len: 0x3456789a, size: 0x456789ab },
  { type: 'byteorder', sreg: 1, dreg: 1, op: 'hton', len: 4, size: 4 },
  { type: 'hash', hashType: 'sym', dreg: 0x12345678, modulus: 0x23456789, offset: 0x3456789a },
  { type: 'hash', hashType: 'jenkins', sreg: 0x12345678, dreg: 0x23456789, len: 0x3456789a, modulus: 0x456789ab, seed: 0x56789abc, offset: 0x6789abcd },
  { type: 'objref', objType: 0x12345678, name: 'obj' },
  { type: 'objref', setSreg: 0x12345678, setName: 'map', setId: 0x23456789 },
  { type: 'masq', flags: 0x12345678, regProtoMin: 0x23456789, regProtoMax: 0x3456789a },
  { type: 'masq' },
  { type: 'fib', dreg: 0x12345678, result: 0x23456789, flags: 0x3456789a },
  { type: 'dynset', set: 'set-\u00e9', setId: 0x12345678, op: 'delete', sregKey: 0x23456789, sregData: 0x3456789a, timeoutMs: 0x123456789abcdef0n, flags: 1 },
  { type: 'dynset', set: 's', op: 'add', sregKey: 1 },
  { type: 'opaque', name: 'future', data: Buffer.from('0800010012345678', 'hex') },
];

test('decode(encode(x)) deep-equals x for every kind, sentinel values included', () => {
  const kinds = new Set(SENTINELS.map((e) => e.type));
  assert.equal(kinds.size, 21, 'every kind of Expr, opaque included');
  for (const e of SENTINELS) {
    const bytes = encodeOne(e);
    assert.deepEqual(decodeExpr(payloadOf(bytes)), e, describeExpr(e));
  }
});

test('be32 fields are big-endian on the wire', () => {
  const bytes = encodeOne({ type: 'payload', base: 'network', offset: 0x12345678, len: 4, dreg: 1 });
  assert.ok(bytes.includes(Buffer.from('0800030012345678', 'hex')), bytes.toString('hex'));
});

test('unknown expressions and unknown attributes stay opaque and go back byte for byte', () => {
  const elem = (name: string, data: Buffer) => {
    const w = new AttrWriter();
    w.nest(C.NFTA_LIST_ELEM, (el) => el.str(C.NFTA_EXPR_NAME, name).bytes(C.NFTA_EXPR_DATA | NLA_F_NESTED, data));
    return w.finish();
  };
  const cases: [string, string, string][] = [
    ['an unknown name', 'xt_future', '0800010000000001'],
    ['an unknown name without data', 'notrack', ''],
    ['an attribute payload does not know', 'payload', '080001000000000108000200000000010800030000000000080004000000000408006300deadbeef'],
    ['a newer enum value (cmp op 9)', 'cmp', '08000100000000010800020000000009' + '0c000380' + '0500010006000000'],
    ['a verdict with NFTA_VERDICT_CHAIN_ID', 'immediate', '080001000000000020000280' + '1c000280' + '08000100fffffffd' + '0700020063320000' + '0800030000000007'],
    ['a lookup flag the model has no field for', 'lookup', '08000200000000010600010073000000' + '0800050000000002'],
    ['a bitwise op newer than the model (NFT_BITWISE_AND)', 'bitwise', '080001000000000108000200000000010800060000000003080003000000000' + '4'],
    ['a name that is an Object.prototype member', '__proto__', '0800010000000001'],
    ['another', 'constructor', ''],
    ['a repeated attribute', 'meta', '080002000000000308000100000000010800010000000002'],
  ];
  for (const [what, name, dataHex] of cases) {
    const data = Buffer.from(dataHex, 'hex');
    const bytes = elem(name, data);
    const e = decodeExpr(payloadOf(bytes));
    assert.deepEqual(e, { type: 'opaque', name, data }, what);
    assert.equal(encodeOne(e).toString('hex'), bytes.toString('hex'), what);
  }
});

test('the kernel dump form (nests without NLA_F_NESTED, zero lookup flags) decodes the same', () => {
  // As nf_tables_fill_expr_info writes it: nla_nest_start_noflag for NFTA_EXPR_DATA and nft_data.
  const kernel = golden(`
    0c000100 636d7000 00000000   # "cmp" (some senders pad the name)
    20000200                     # NFTA_EXPR_DATA, no nested flag
    08000100 00000001
    08000200 00000001            # NFT_CMP_NEQ
    0c000300 05000100 06000000   # NFTA_CMP_DATA, no nested flag`);
  assert.deepEqual(decodeExpr(kernel), { type: 'cmp', sreg: 1, op: 'neq', data: Buffer.from([6]) });
  const lookup = golden(`
    0b000100 6c6f6f6b75700000
    1c000200
    06000100 73000000
    08000200 00000001
    08000500 00000000            # NFTA_LOOKUP_FLAGS 0, always dumped`);
  assert.deepEqual(decodeExpr(lookup), { type: 'lookup', set: 's', sreg: 1, invert: false });
  assert.equal(describeExpr(decodeExpr(lookup)), '[ lookup reg 1 set s 0x0 ]');
});

test('malformed expressions throw DecodeError naming what is wrong', () => {
  const data = (name: string, hex: string) => {
    const w = new AttrWriter().str(C.NFTA_EXPR_NAME, name).bytes(C.NFTA_EXPR_DATA | NLA_F_NESTED, Buffer.from(hex, 'hex'));
    return w.finish();
  };
  const cases: [Buffer, RegExp][] = [
    [Buffer.alloc(0), /missing NFTA_EXPR_NAME/],
    [data('cmp', '0800010000000001' + '0800020000000000'), /cmp: missing NFTA_CMP_DATA/],
    [data('cmp', '070001000000000008000200000000000c0003800500010006000000'), /cmp: NFTA_CMP_SREG has 3 bytes, expected 4/],
    [data('cmp', '08000100000000010800020000000000' + '04000380'), /neither NFTA_DATA_VALUE nor NFTA_DATA_VERDICT/],
    [data('cmp', '08000100000000010800020000000000' + '0800038004000100'), /NFTA_DATA_VALUE has 0 bytes/],
    [data('payload', '08000100000000010800050000000001080002000000000108000300000000000800040000000004'), /exactly one of NFTA_PAYLOAD_DREG and NFTA_PAYLOAD_SREG/],
    [data('immediate', '08000100000000000c0002800800028004000100'), /NFTA_VERDICT_CODE has 0 bytes, expected 4/],
    [data('immediate', '08000100000000000c00028008000280'), /bad length|truncated/],
    [data('immediate', '0800010000000000100002800c00028008000100fffffffd'), /jump without NFTA_VERDICT_CHAIN/],
    [data('lookup', '0800020000000001'), /lookup: missing NFTA_LOOKUP_SET/],
    [data('future', '0500'), /truncated attribute header|bad length/],
  ];
  for (const [bytes, message] of cases) {
    assert.throws(() => decodeExpr(bytes), (err: unknown) => err instanceof DecodeError && message.test(err.message), message.source);
  }
  assert.throws(() => decodeExprList(golden('08000200 00000000')), /expected NFTA_LIST_ELEM/);
});

test('encoding refuses values that would wrap or that the kernel rejects, naming the field', () => {
  const cases: [Expr, RegExp][] = [
    [{ type: 'payload', base: 'network', offset: -1, len: 4, dreg: 1 }, /payload\.offset: -1/],
    [{ type: 'cmp', sreg: 2 ** 32, op: 'eq', data: Buffer.from([1]) }, /cmp\.sreg/],
    [{ type: 'cmp', sreg: 1, op: 'eq', data: Buffer.alloc(65) }, /cmp\.data: 65 bytes/],
    [{ type: 'cmp', sreg: 1, op: 'eq', data: Buffer.alloc(0) }, /cmp\.data: 0 bytes/],
    [{ type: 'cmp', sreg: 1, op: 'like' as 'eq', data: Buffer.from([1]) }, /cmp\.op: unknown value "like"/],
    [{ type: 'ct', key: 1, dreg: 1, direction: 256 }, /ct\.direction/],
    [{ type: 'counter', packets: -1n, bytes: 0n }, /counter\.packets/],
    [{ type: 'immediate', dreg: 0 }, /exactly one of data and verdict/],
    [{ type: 'immediate', dreg: 0, verdict: { kind: 'jump', chain: '' } }, /jump needs a chain/],
  ];
  for (const [e, message] of cases) assert.throws(() => encodeOne(e), message, message.source);
});


/** Runs a decoder on untrusted bytes: DecodeError or a value that survives a round trip. */
function probe(decode: () => Expr | Expr[], context: string): 'ok' | 'error' {
  let decoded: Expr | Expr[];
  try {
    decoded = decode();
  } catch (err) {
    if (err instanceof DecodeError) return 'error';
    throw new Error(`${context}: ${String(err)}`);
  }
  const list = Array.isArray(decoded) ? decoded : [decoded];
  const w = new AttrWriter();
  encodeExprList(w, C.NFTA_RULE_EXPRESSIONS, list);
  assert.deepEqual(decodeExprList(w.finish().subarray(4)), list, context);
  for (const e of list) describeExpr(e);
  return 'ok';
}

test('random, truncated and mutated bytes give DecodeError or a valid expression, nothing else', () => {
  const rand = prng(0x5eed);
  const byte = () => Math.floor(rand() * 256);
  const corpus = [...GOLDENS.map((g) => golden(g.bytes)), ...SENTINELS.map(encodeOne)];
  const outcomes = { ok: 0, error: 0 };
  const run = (buf: Buffer, context: string) => {
    outcomes[probe(() => decodeExpr(buf), `decodeExpr ${context} ${buf.toString('hex')}`)]++;
    outcomes[probe(() => decodeExprList(buf), `decodeExprList ${context} ${buf.toString('hex')}`)]++;
  };
  for (const elem of corpus) {
    for (let n = 0; n <= elem.length; n++) run(payloadOf(elem).subarray(0, n), 'truncated');
  }
  for (let i = 0; i < 20000; i++) {
    const src = corpus[Math.floor(rand() * corpus.length)];
    const buf = Buffer.from(rand() < 0.5 ? payloadOf(src) : src);
    const flips = 1 + Math.floor(rand() * 4);
    for (let f = 0; f < flips && buf.length; f++) buf[Math.floor(rand() * buf.length)] = byte();
    run(buf, 'mutated');
  }
  for (let i = 0; i < 5000; i++) {
    run(Buffer.from(Array.from({ length: Math.floor(rand() * 96) }, byte)), 'random');
  }
  // Both outcomes must actually occur, or the corpus is not probing the decoders.
  assert.ok(outcomes.ok > 1000 && outcomes.error > 1000, JSON.stringify(outcomes));
});

test('sameRuleBody agrees with ruleKey equality, defaults and register spellings included', () => {
  const rand = prng(11);
  const variants = (e: Expr): Expr[] => {
    const out: Expr[] = [e, { ...e } as Expr];
    const f = e as unknown as Record<string, unknown>;
    for (const k of Object.keys(f)) {
      if (k === 'type') continue;
      const v = f[k];
      if (typeof v === 'number') out.push({ ...f, [k]: v + 1 } as unknown as Expr);
      if (Buffer.isBuffer(v)) out.push({ ...f, [k]: Buffer.concat([v, Buffer.from([1])]) } as unknown as Expr);
      out.push({ ...f, [k]: undefined } as unknown as Expr);
    }
    out.push({ ...f, invert: false } as unknown as Expr, { ...f, extra: 'x' } as unknown as Expr);
    return out;
  };
  const pool = SENTINELS.flatMap(variants);
  pool.push(
    { type: 'cmp', sreg: C.NFT_REG32_00, op: 'eq', data: Buffer.from([1]) },
    { type: 'cmp', sreg: C.NFT_REG_1, op: 'eq', data: Buffer.from([1]) },
    { type: 'bitwise', sreg: 1, dreg: 1, len: 4, op: 'bool', mask: Buffer.alloc(4), xor: Buffer.alloc(4) } as Expr,
    { type: 'bitwise', sreg: 1, dreg: 1, len: 4, mask: Buffer.alloc(4), xor: Buffer.alloc(4) } as Expr,
    { type: 'immediate', dreg: 0, verdict: { kind: 'jump', chain: 'a' } },
    { type: 'immediate', dreg: 0, verdict: { kind: 'jump', chain: 'b' } },
    { type: 'immediate', dreg: 0, verdict: { kind: 'accept' } },
  );
  let equal = 0;
  for (let i = 0; i < 20000; i++) {
    const n = 1 + Math.floor(rand() * 3);
    const a = { exprs: Array.from({ length: n }, () => pool[Math.floor(rand() * pool.length)]), comment: rand() < 0.2 ? 'c' : undefined };
    const b = rand() < 0.5 ? { exprs: a.exprs.map((e) => ({ ...e }) as Expr), comment: a.comment } : { exprs: Array.from({ length: n }, () => pool[Math.floor(rand() * pool.length)]), comment: a.comment };
    const same = sameRuleBody(a, b);
    assert.equal(same, ruleKey(a) === ruleKey(b), `${ruleKey(a)} vs ${ruleKey(b)}`);
    if (same) equal++;
  }
  assert.ok(equal > 5000 && equal < 15000, `both outcomes exercised (${equal} equal)`);
});

test('a frozen expression is encoded once and its bytes copied after; an unfrozen one is encoded each time', () => {
  const neighbour: Expr = { type: 'counter', bytes: 0n, packets: 0n };
  for (const g of GOLDENS) {
    const shared = Object.freeze({ ...g.expr }) as Expr;
    const w = new AttrWriter(16);
    // Mixed with unfrozen neighbours and at unaligned growth points of the writer's buffer.
    for (let i = 0; i < 3; i++) {
      encodeExpr(w, shared);
      encodeExpr(w, { ...neighbour } as Expr);
    }
    const once = Buffer.concat([golden(g.bytes), encodeOne(neighbour)]);
    assert.deepEqual(w.finish(), Buffer.concat([once, once, once]), g.nft);
  }
  // An expression its maker changes between encodings (allowed unless frozen) is encoded afresh.
  const e: Expr = { type: 'lookup', set: 'a', sreg: C.NFT_REG_1 };
  const first = encodeOne(e);
  (e as { set: string }).set = 'bb';
  const second = encodeOne(e);
  assert.notDeepEqual(first, second);
  assert.deepEqual(decodeExpr(payloadOf(second)), e);
});
