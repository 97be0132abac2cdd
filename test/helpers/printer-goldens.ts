/** Goldens of the rule printer, one or more per expression kind (src/nft/print/<kind>.ts) and per
 * cross-expression shape the fold carries state for: a load then its match, a mask then its
 * comparison, a protocol dependency nft leaves out, a constant a later statement prints, a map
 * lookup whose result a nat statement uses. A kind nft has no syntax for here is printed in
 * libnftnl's debug notation, an undecodable expression by its name and size only. The sets they
 * look up are declared here too, so nft can load the ones in nft syntax. */
import * as b from '../../src/nft/build';
import * as C from '../../src/nft/constants';
import { Expr, NftSet } from '../../src/nft/types';
import { ipv4, ipv6 } from '../../src/net/ip-bytes';
import { NFPROTO_IPV4, NFPROTO_IPV6 } from '../../src/net/protocols';
import { HOST_LE, hostU32 } from '../../src/nft/values';

const be16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);
/** ARPHRD_ETHER as meta iiftype holds it: a host-order u16. */
const ETHER = HOST_LE ? Buffer.from([1, 0]) : Buffer.from([0, 1]);
const meta = (key: number, dreg = 1): Expr => ({ type: 'meta', key, dreg });
const eq = (data: Buffer, sreg = 1): Expr => ({ type: 'cmp', sreg, op: 'eq', data });
const l4 = (proto: number): Expr[] => [meta(C.NFT_META_L4PROTO), eq(Buffer.from([proto]))];

export interface PrinterGolden {
  kind: Expr['type'];
  exprs: Expr[];
  text: string;
  /** false: the text shows what nft has no syntax for (debug notation, a key nfkube does not
   * name), so nft cannot load it. */
  nftSyntax?: false;
}

export const PRINTER_GOLDENS: PrinterGolden[] = [
  // payload
  { kind: 'payload', exprs: [...b.matchAddr('ip saddr', '198.18.0.1'), b.accept()], text: 'ip saddr 198.18.0.1 accept' },
  { kind: 'payload', exprs: [...b.matchAddr('ip6 daddr', '2001:db8::1')], text: 'ip6 daddr 2001:db8::1' },
  { kind: 'payload', exprs: [...b.addrMacNotInSet('ip saddr', 'bound')], text: 'ip saddr . ether saddr != @bound' },
  { kind: 'payload', exprs: [meta(C.NFT_META_IIFTYPE), eq(ETHER), { type: 'payload', base: 'll', offset: 6, len: 6, dreg: 1 }, eq(Buffer.from([2, 0, 0, 0, 0, 0x1f]))], text: 'ether saddr 02:00:00:00:00:1f' },
  { kind: 'payload', exprs: [...b.nfproto('ipv6'), ...l4(58), { type: 'payload', base: 'transport', offset: 0, len: 1, dreg: 1 }, eq(Buffer.from([135]))], text: 'meta nfproto ipv6 icmpv6 type 135' },
  { kind: 'payload', exprs: [{ type: 'payload', base: 'transport', offset: 4, len: 4, dreg: 1 }, eq(Buffer.from([0, 0, 0, 1]))], text: '@th,32,32 0x00000001' },
  { kind: 'payload', exprs: [{ type: 'payload', base: 'network', offset: 10, len: 2, sreg: 1, csumType: 1, csumOffset: 10, csumFlags: 0 }], text: '[ payload write reg 1 => 2b @ network header + 10 csum_type 1 csum_off 10 csum_flags 0x0 ]', nftSyntax: false },
  // meta
  { kind: 'meta', exprs: [...b.iifname('veth*'), ...b.oifname('eth0')], text: 'iifname "veth*" oifname "eth0"' },
  { kind: 'meta', exprs: [...b.setMark(0x4000)], text: 'meta mark set 0x00004000' },
  { kind: 'meta', exprs: [...b.nfproto('ipv6'), b.drop()], text: 'meta nfproto ipv6 drop' },
  { kind: 'meta', exprs: [meta(C.NFT_META_IIFTYPE), eq(ETHER)], text: 'meta iiftype ether' },
  { kind: 'meta', exprs: [meta(C.NFT_META_CPU), eq(hostU32(1))], text: 'meta key 20 0x01000000', nftSyntax: false },
  // ct
  { kind: 'ct', exprs: [...b.ctState(['established', 'related']), b.accept()], text: 'ct state established,related accept' },
  { kind: 'ct', exprs: [...b.ctStatus(['dnat'])], text: 'ct status dnat' },
  { kind: 'ct', exprs: [...b.setCtMark(1)], text: 'ct mark set 0x00000001' },
  { kind: 'ct', exprs: [{ type: 'immediate', dreg: 1, data: hostU32(1) }, { type: 'ct', key: C.NFT_CT_ZONE, sreg: 1 }], text: '[ immediate reg 1 0x00000001 ] [ ct set zone with reg 1 ]', nftSyntax: false },
  // bitwise
  { kind: 'bitwise', exprs: [...b.matchMark(0x100, 0xff00)], text: 'meta mark & 0x0000ff00 == 0x00000100' },
  { kind: 'bitwise', exprs: [meta(C.NFT_META_MARK), { type: 'bitwise', sreg: 1, dreg: 1, len: 4, mask: hostU32(0xffffbfff), xor: hostU32(0x4000) }, { type: 'meta', key: C.NFT_META_MARK, sreg: 1 }], text: 'meta mark set meta mark | 0x00004000' },
  { kind: 'bitwise', exprs: [...b.nfproto('ipv4'), { type: 'payload', base: 'network', offset: 12, len: 4, dreg: 1 }, { type: 'bitwise', sreg: 1, dreg: 1, len: 4, mask: Buffer.from([255, 254, 0, 0]), xor: Buffer.alloc(4) }, eq(ipv4('198.18.0.0'))], text: 'ip saddr 198.18.0.0/15' },
  { kind: 'bitwise', exprs: [{ type: 'numgen', dreg: 1, modulus: 4, ngType: 'inc', offset: 0 }, { type: 'bitwise', sreg: 1, dreg: 1, len: 4, op: 'lshift', shift: 8 }, { type: 'meta', key: C.NFT_META_MARK, sreg: 1 }], text: 'meta mark set numgen inc mod 4 << 8' },
  // cmp
  { kind: 'cmp', exprs: [...b.matchPort('tcp', 'th dport', 22).slice(0, -1), { type: 'cmp', sreg: 1, op: 'neq', data: be16(22) }], text: 'tcp dport != 22' },
  { kind: 'cmp', exprs: [...l4(17), b.accept()], text: 'meta l4proto udp accept' },
  { kind: 'cmp', exprs: [eq(hostU32(1))], text: '[ cmp eq reg 1 0x00000001 ]', nftSyntax: false },
  // range
  { kind: 'range', exprs: [...b.matchPort('udp', 'th dport', 8000, 8100)], text: 'udp dport 8000-8100' },
  { kind: 'range', exprs: [...l4(6), { type: 'payload', base: 'transport', offset: 0, len: 2, dreg: 1 }, { type: 'range', sreg: 1, op: 'neq', from: be16(1), to: be16(1023) }], text: 'tcp sport != 1-1023' },
  // lookup
  { kind: 'lookup', exprs: [...b.matchAddrInSet('ip saddr', 'peers'), b.accept()], text: 'ip saddr @peers accept' },
  { kind: 'lookup', exprs: [...b.matchAddrInSet('ip6 daddr', 'peers6', true)], text: 'ip6 daddr != @peers6' },
  { kind: 'lookup', exprs: [...b.concatLoads(['ip daddr', 'meta l4proto', 'th dport']).exprs, b.vmap('services')], text: 'ip daddr . meta l4proto . th dport vmap @services' },
  // immediate
  { kind: 'immediate', exprs: [b.jump('target')], text: 'jump target' },
  { kind: 'immediate', exprs: [b.goto('target')], text: 'goto target' },
  { kind: 'immediate', exprs: [b.verdict({ kind: 'return' })], text: 'return' },
  { kind: 'immediate', exprs: [{ type: 'immediate', dreg: 1, data: hostU32(7) }], text: '[ immediate reg 1 0x00000007 ]', nftSyntax: false },
  // counter, limit, log, reject
  { kind: 'counter', exprs: [b.counter(), b.accept()], text: 'counter packets 0 bytes 0 accept' },
  { kind: 'counter', exprs: [{ type: 'counter', packets: 3n, bytes: 180n }], text: 'counter packets 3 bytes 180' },
  { kind: 'limit', exprs: [b.limit(10, 5)], text: 'limit rate 10/second burst 5 packets' },
  { kind: 'limit', exprs: [{ type: 'limit', rate: 10n, unit: 60n, burst: 2, limitType: 'pkts', flags: C.NFT_LIMIT_F_INV }], text: 'limit rate over 10/minute burst 2 packets' },
  { kind: 'log', exprs: [b.log(2, 'nfk-deny ')], text: 'log prefix "nfk-deny " group 2' },
  { kind: 'log', exprs: [{ type: 'log', level: 4 }], text: 'log' },
  { kind: 'reject', exprs: [b.rejectAdminProhibited()], text: 'reject with icmpx admin-prohibited' },
  { kind: 'reject', exprs: [...l4(6), { type: 'reject', rejectType: C.NFT_REJECT_TCP_RST, icmpCode: 0 }], text: 'meta l4proto tcp reject with tcp reset' },
  { kind: 'reject', exprs: [...b.nfproto('ipv4'), { type: 'reject', rejectType: C.NFT_REJECT_ICMP_UNREACH, icmpCode: 3 }], text: 'meta nfproto ipv4 reject with icmp 3' },
  // nat, with constants and with a map's result
  {
    kind: 'nat',
    exprs: [...l4(6), { type: 'immediate', dreg: 1, data: ipv4('198.18.1.3') }, { type: 'immediate', dreg: 2, data: be16(8081) }, { type: 'nat', natType: 'dnat', family: NFPROTO_IPV4, regAddrMin: 1, regAddrMax: 1, regProtoMin: 2, regProtoMax: 2, flags: 3 }],
    text: 'meta l4proto tcp dnat ip to 198.18.1.3:8081',
  },
  {
    kind: 'nat',
    exprs: [{ type: 'immediate', dreg: 1, data: ipv6('2001:db8::3') }, { type: 'nat', natType: 'snat', family: NFPROTO_IPV6, regAddrMin: 1, regAddrMax: 1, flags: 1 }],
    text: 'snat ip6 to [2001:db8::3]',
  },
  {
    kind: 'nat',
    exprs: [...l4(6), { type: 'numgen', dreg: 1, modulus: 2, ngType: 'random', offset: 0 }, { type: 'lookup', set: 'endpoint-draws', sreg: 1, dreg: 1 }, { type: 'nat', natType: 'dnat', family: NFPROTO_IPV4, regAddrMin: 1, regAddrMax: 1, regProtoMin: 9, regProtoMax: 9, flags: 3 }],
    text: 'meta l4proto tcp dnat ip to numgen random mod 2 map @endpoint-draws',
  },
  // numgen, byteorder (which nft does not print after a host-order value)
  { kind: 'numgen', exprs: [{ type: 'numgen', dreg: 1, modulus: 3, ngType: 'random', offset: 5 }, b.vmap('endpoints')], text: 'numgen random mod 3 offset 5 vmap @endpoints' },
  { kind: 'byteorder', exprs: [{ type: 'numgen', dreg: 1, modulus: 3, ngType: 'random', offset: 0 }, { type: 'byteorder', sreg: 1, dreg: 1, op: 'hton', len: 4, size: 4 }, b.lookup('draws')], text: 'numgen random mod 3 @draws' },
  { kind: 'byteorder', exprs: [{ type: 'byteorder', sreg: 1, dreg: 2, op: 'ntoh', len: 4, size: 4 }], text: '[ byteorder reg 2 = ntoh(reg 1, 4, 4) ]', nftSyntax: false },
  // kinds with no nft form printed here
  { kind: 'hash', exprs: [{ type: 'hash', hashType: 'jenkins', sreg: 1, dreg: 1, len: 4, modulus: 5, seed: 0x10 }], text: '[ hash reg 1 = jhash(reg 1, 4, 0x10) % mod 5 ]', nftSyntax: false },
  { kind: 'objref', exprs: [{ type: 'objref', objType: 1, name: 'c' }], text: '[ objref type 1 name c ]', nftSyntax: false },
  // masq, fib, dynset
  { kind: 'masq', exprs: [{ type: 'masq' }], text: 'masquerade' },
  { kind: 'masq', exprs: [{ type: 'masq', flags: C.NF_NAT_RANGE_PROTO_RANDOM_FULLY }], text: 'masquerade fully-random' },
  { kind: 'fib', exprs: [{ type: 'fib', dreg: 1, result: C.NFT_FIB_RESULT_ADDRTYPE, flags: C.NFTA_FIB_F_DADDR }, eq(hostU32(2)), b.accept()], text: 'fib daddr type local accept' },
  { kind: 'fib', exprs: [...b.sourceRouteMissing()], text: 'fib saddr . iif oif missing' },
  { kind: 'fib', exprs: [{ type: 'fib', dreg: 1, result: 2, flags: C.NFTA_FIB_F_DADDR }], text: '[ fib daddr oifname => reg 1 ]', nftSyntax: false },
  { kind: 'dynset', exprs: [...b.loadAddr('ip saddr'), b.updateSet('affinity')], text: 'update @affinity { ip saddr }' },
  { kind: 'dynset', exprs: [...b.loadAddr('ip saddr'), { type: 'dynset', set: 'seen', op: 'add', sregKey: 1, timeoutMs: 10_800_000n }], text: 'add @seen { ip saddr timeout 10800000ms }' },
  // an expression nfkube could not decode
  { kind: 'opaque', exprs: [{ type: 'opaque', name: 'xt', data: Buffer.alloc(12) }, b.drop()], text: '# unknown expression "xt" (12 bytes) drop', nftSyntax: false },
];


const set = (name: string, key: NftSet['key'], more: Partial<NftSet> = {}): NftSet => ({ family: 'inet', table: 'golden', name, key, flags: 0, ...more });

/** The sets the goldens look up, for loading them with nft. */
export const PRINTER_GOLDEN_SETS: NftSet[] = [
  set('bound', ['ipv4_addr', 'ether_addr']),
  set('peers', ['ipv4_addr']),
  set('peers6', ['ipv6_addr']),
  set('services', ['ipv4_addr', 'inet_proto', 'inet_service'], { data: 'verdict' }),
  set('endpoint-draws', ['integer'], { data: ['ipv4_addr', 'inet_service'], typeof: { key: 'numgen random mod 2', data: 'ip daddr . th dport' } }),
  set('endpoints', ['integer'], { data: 'verdict', typeof: { key: 'numgen random mod 3', data: 'verdict' } }),
  set('draws', ['integer'], { flags: C.NFT_SET_INTERVAL, typeof: { key: 'numgen random mod 3' } }),
  set('affinity', ['ipv4_addr'], { flags: C.NFT_SET_TIMEOUT, timeout: 10_800_000n }),
  set('seen', ['ipv4_addr'], { flags: C.NFT_SET_TIMEOUT }),
];
