/** Expression builders in nft's vocabulary (`ip saddr @s`, `ct state established,related`), so
 * callers write intent and get exactly the expression lists nft itself would generate. */
import { CT_STATE, CT_STATUS, CtStateName, CtStatusName, IPPROTO, IpProtocolName, NFPROTO_IPV4, NFPROTO_IPV6 } from '../net/protocols';
import { canonicalRegister } from './canonical';
import * as C from './constants';
import { Expr, Verdict } from './types';
import { ipAddr } from '../net/ip-bytes';
import { be16, HOST_LE, hostU32 } from './values';

/** linux/if_arp.h: the interface type of Ethernet devices (bridges and veths among them). */
const ARPHRD_ETHER = 1;

/** Header fields nfkube matches on: [base, offset, length, family]. */
export const FIELDS = {
  'ip saddr': { base: 'network', offset: 12, len: 4, l3: 'ipv4' },
  'ip daddr': { base: 'network', offset: 16, len: 4, l3: 'ipv4' },
  'ip6 saddr': { base: 'network', offset: 8, len: 16, l3: 'ipv6' },
  'ip6 daddr': { base: 'network', offset: 24, len: 16, l3: 'ipv6' },
  'th sport': { base: 'transport', offset: 0, len: 2 },
  'th dport': { base: 'transport', offset: 2, len: 2 },
} as const;
export type Field = keyof typeof FIELDS;

const NFPROTO_VALUE = { ipv4: NFPROTO_IPV4, ipv6: NFPROTO_IPV6 } as const;
export { IPPROTO };
export type L4Proto = IpProtocolName;

const REG = C.NFT_REG_1;

/** `meta nfproto ipv4|ipv6`: the dependency nft adds before an ip/ip6 header match in inet. */
export function nfproto(p: 'ipv4' | 'ipv6'): Expr[] {
  return [
    { type: 'meta', key: C.NFT_META_NFPROTO, dreg: REG },
    { type: 'cmp', sreg: REG, op: 'eq', data: Buffer.from([NFPROTO_VALUE[p]]) },
  ];
}

/** `meta l4proto tcp` */
export function l4proto(p: L4Proto): Expr[] {
  return [
    { type: 'meta', key: C.NFT_META_L4PROTO, dreg: REG },
    { type: 'cmp', sreg: REG, op: 'eq', data: Buffer.from([IPPROTO[p]]) },
  ];
}

export function load(field: Field, dreg: number = REG): Expr {
  const f = FIELDS[field];
  return { type: 'payload', base: f.base, offset: f.offset, len: f.len, dreg };
}

export type AddrField = 'ip saddr' | 'ip daddr' | 'ip6 saddr' | 'ip6 daddr';

/** An address field loaded into register 1, behind its nfproto dependency: the start of every
 * address match. */
export function loadAddr(field: AddrField): Expr[] {
  const exprs = nfproto(FIELDS[field].l3);
  exprs.push(load(field));
  return exprs;
}

/** `ip saddr 198.18.0.1`, with its nfproto dependency. */
export function matchAddr(field: AddrField, addr: string): Expr[] {
  const exprs = loadAddr(field);
  exprs.push({ type: 'cmp', sreg: REG, op: 'eq', data: ipAddr(addr) });
  return exprs;
}

/** `ip saddr @set` (or `!= @set`), with its nfproto dependency. */
export function matchAddrInSet(field: AddrField, set: string, invert = false): Expr[] {
  const exprs = loadAddr(field);
  exprs.push(lookup(set, REG, invert));
  return exprs;
}

/** `tcp dport 80` or `tcp dport 80-90` (with the l4proto dependency). */
export function matchPort(proto: L4Proto, field: 'th sport' | 'th dport', port: number, endPort?: number): Expr[] {
  const exprs = l4proto(proto);
  exprs.push(load(field));
  if (endPort !== undefined && endPort !== port) exprs.push({ type: 'range', sreg: REG, op: 'eq', from: be16(port), to: be16(endPort) });
  else exprs.push({ type: 'cmp', sreg: REG, op: 'eq', data: be16(port) });
  return exprs;
}

/** Loads into consecutive 32-bit registers then looks the concatenation up:
 * `ip saddr . meta l4proto . th dport @set`. Returns the loads; pass them to lookupConcat. */
export function concatLoads(parts: ('meta l4proto' | Field)[]): { exprs: Expr[]; sreg: number } {
  let reg = C.NFT_REG32_00;
  const exprs: Expr[] = [];
  // In the inet family an ip/ip6 header field is only meaningful behind its nfproto check.
  const l3 = parts.map((p) => (p === 'meta l4proto' ? undefined : (FIELDS[p] as { l3?: 'ipv4' | 'ipv6' }).l3)).find(Boolean);
  if (l3) exprs.push(...nfproto(l3));
  for (const p of parts) {
    const dreg = canonicalRegister(reg);
    if (p === 'meta l4proto') {
      exprs.push({ type: 'meta', key: C.NFT_META_L4PROTO, dreg });
      reg += 1;
    } else {
      exprs.push(load(p, dreg));
      reg += Math.ceil(FIELDS[p].len / 4);
    }
  }
  return { exprs, sreg: canonicalRegister(C.NFT_REG32_00) };
}

export function lookup(set: string, sreg: number = REG, invert = false): Expr {
  return invert ? { type: 'lookup', set, sreg, invert: true } : { type: 'lookup', set, sreg };
}

/** `update @set { <loaded> }`: finds (or adds) the element and runs its stateful expressions.
 * No timeout: the kernel refuses one for a set without timeouts (it dumps 0 all the same). */
export function updateSet(set: string, sreg: number = REG): Expr {
  return { type: 'dynset', set, op: 'update', sregKey: sreg };
}

/** `<loaded> vmap @map`: the map's verdict decides. */
export function vmap(set: string, sreg: number = REG): Expr {
  return { type: 'lookup', set, sreg, dreg: C.NFT_REG_VERDICT };
}

/** `ct state established,related` */
export function ctState(states: CtStateName[]): Expr[] {
  return ctBits(C.NFT_CT_STATE, states.reduce((m, s) => m | CT_STATE[s], 0));
}

/** `ct status dnat` */
export function ctStatus(bits: CtStatusName[]): Expr[] {
  return ctBits(C.NFT_CT_STATUS, bits.reduce((m, s) => m | CT_STATUS[s], 0));
}

/** Any of the `bits` of the conntrack field `key` is set. */
function ctBits(key: number, bits: number): Expr[] {
  const mask = Buffer.alloc(4);
  mask.writeUInt32LE(bits);
  return [
    { type: 'ct', key, dreg: REG },
    { type: 'bitwise', sreg: REG, dreg: REG, len: 4, op: 'bool', mask, xor: Buffer.alloc(4) },
    { type: 'cmp', sreg: REG, op: 'neq', data: Buffer.alloc(4) },
  ];
}

/** `icmpv6 type nd-router-solicit-nd-neighbor-advert` (133-136): IPv6 neighbor and router
 * discovery, which a host needs to reach anything at all. IPv6 only: in an inet table an IPv4
 * packet can carry protocol 58 too, and must not pass as discovery. */
export function icmpv6NeighborDiscovery(): Expr[] {
  return [
    ...nfproto('ipv6'),
    ...l4proto('ipv6-icmp'),
    { type: 'payload', base: 'transport', offset: 0, len: 1, dreg: REG },
    { type: 'range', sreg: REG, op: 'eq', from: Buffer.from([133]), to: Buffer.from([136]) },
  ];
}

export function counter(): Expr {
  return { type: 'counter', packets: 0n, bytes: 0n };
}

export function verdict(v: Verdict): Expr {
  return { type: 'immediate', dreg: C.NFT_REG_VERDICT, verdict: v };
}

export const accept = (): Expr => verdict({ kind: 'accept' });
export const drop = (): Expr => verdict({ kind: 'drop' });
export const jump = (chain: string): Expr => verdict({ kind: 'jump', chain });
export const goto = (chain: string): Expr => verdict({ kind: 'goto', chain });

/** `reject with icmpx admin-prohibited`: one answer for both families and any transport. */
export function rejectAdminProhibited(): Expr {
  return { type: 'reject', rejectType: C.NFT_REJECT_ICMPX_UNREACH, icmpCode: C.NFT_REJECT_ICMPX_ADMIN_PROHIBITED };
}

/** `limit rate R/second burst B packets`: a token bucket, one per rule, in the kernel; the rule
 * stops matching (and the packet goes on to the next rule) while the bucket is empty. The burst
 * is always explicit: the kernel reads an absent one as its own default and dumps that back. */
export function limit(ratePerSecond: number, burst: number): Expr {
  return { type: 'limit', rate: BigInt(ratePerSecond), unit: 1n, burst, limitType: 'pkts', flags: 0 };
}

/** `log prefix "P" group G`: the packet goes to nfnetlink_log group G, its copy bounded by the
 * listener's copy range. */
export function log(group: number, prefix: string): Expr {
  return { type: 'log', prefix, group };
}

/** IFNAMSIZ: interface names are NUL-padded to 16 bytes in a register. */
const IFNAMSIZ = 16;

function ifnameMatch(key: number, what: string, name: string): Expr[] {
  const wildcard = name.endsWith('*');
  const text = wildcard ? name.slice(0, -1) : name;
  const bytes = Buffer.from(text, 'utf8');
  if (bytes.length >= IFNAMSIZ || text.includes('*') || text.includes('\0') || (!wildcard && text === '')) {
    throw new Error(`${what} "${name}": an interface name is 1-15 bytes, optionally ending in * (a prefix match)`);
  }
  // A prefix match compares only the prefix; an exact one includes the terminating NUL.
  const data = wildcard ? bytes : Buffer.concat([bytes, Buffer.alloc(IFNAMSIZ - bytes.length)]);
  return [
    { type: 'meta', key, dreg: REG },
    { type: 'cmp', sreg: REG, op: 'eq', data },
  ];
}

/** `iifname "eth0"`, or `iifname "veth*"` for every name starting with veth. */
export function iifname(name: string): Expr[] {
  return ifnameMatch(C.NFT_META_IIFNAME, 'iifname', name);
}

/** `oifname "eth0"`, or `oifname "veth*"` for every name starting with veth. */
export function oifname(name: string): Expr[] {
  return ifnameMatch(C.NFT_META_OIFNAME, 'oifname', name);
}

/** A 32-bit mark in host byte order, as the kernel keeps skb->mark and ct->mark. */
function mark32(value: number, what: string): Buffer {
  if (!Number.isInteger(value) || value < 0 || value > 0xffffffff) throw new Error(`${what}: ${value} is not a 32-bit unsigned integer`);
  return hostU32(value);
}

function markMatch(load: Expr, what: string, value: number, mask?: number, op: 'eq' | 'neq' = 'eq'): Expr[] {
  const exprs: Expr[] = [load];
  if (mask !== undefined && mask !== 0xffffffff) {
    exprs.push({ type: 'bitwise', sreg: REG, dreg: REG, len: 4, op: 'bool', mask: mark32(mask, `${what} mask`), xor: Buffer.alloc(4) });
  }
  exprs.push({ type: 'cmp', sreg: REG, op, data: mark32(value, what) });
  return exprs;
}

/** `meta mark 0x10`, `meta mark & 0xff00 == 0x100`, or with op 'neq' `meta mark != 0x10`. */
export function matchMark(value: number, mask?: number, op: 'eq' | 'neq' = 'eq'): Expr[] {
  return markMatch({ type: 'meta', key: C.NFT_META_MARK, dreg: REG }, 'meta mark', value, mask, op);
}

/** `meta mark set 0x10` */
export function setMark(value: number): Expr[] {
  return [
    { type: 'immediate', dreg: REG, data: mark32(value, 'meta mark set') },
    { type: 'meta', key: C.NFT_META_MARK, sreg: REG },
  ];
}

/** `ct mark 0x10`, `ct mark & 0xff00 == 0x100`, or with op 'neq' `ct mark != 0x10`. */
export function matchCtMark(value: number, mask?: number, op: 'eq' | 'neq' = 'eq'): Expr[] {
  return markMatch({ type: 'ct', key: C.NFT_CT_MARK, dreg: REG }, 'ct mark', value, mask, op);
}

/** `ct mark set 0x10` */
export function setCtMark(value: number): Expr[] {
  return [
    { type: 'immediate', dreg: REG, data: mark32(value, 'ct mark set') },
    { type: 'ct', key: C.NFT_CT_MARK, sreg: REG },
  ];
}

/** `ip saddr . ether saddr != @set` (ip6 likewise): the packet's source address is not bound
 * to its source MAC in the set. `meta iiftype ether` before the link-layer load, as nft adds it:
 * only an Ethernet interface gives a link-layer header to read. `l3Checked`: the rule already
 * matched the address family before this, so the nfproto check is left out, as nft leaves it. */
export function addrMacNotInSet(field: 'ip saddr' | 'ip6 saddr', set: string, l3Checked = false): Expr[] {
  const f = FIELDS[field];
  const addrRegs = f.len / 4;
  const macReg = canonicalRegister(C.NFT_REG32_00 + addrRegs);
  const iiftypeEther = Buffer.alloc(2);
  if (HOST_LE) iiftypeEther.writeUInt16LE(ARPHRD_ETHER);
  else iiftypeEther.writeUInt16BE(ARPHRD_ETHER);
  return [
    ...(l3Checked ? [] : nfproto(f.l3)),
    { type: 'meta', key: C.NFT_META_IIFTYPE, dreg: REG },
    { type: 'cmp', sreg: REG, op: 'eq', data: iiftypeEther },
    load(field, canonicalRegister(C.NFT_REG32_00)),
    { type: 'payload', base: 'll', offset: 6, len: 6, dreg: macReg },
    lookup(set, canonicalRegister(C.NFT_REG32_00), true),
  ];
}

/** `fib saddr . iif oif missing`: the route back to the packet's source does not leave by the
 * interface the packet came in on (strict reverse path, as rp_filter=1, for IPv6 too). As nft
 * encodes it: the present flag makes the result a boolean. */
export function sourceRouteMissing(): Expr[] {
  return [
    { type: 'fib', dreg: REG, result: C.NFT_FIB_RESULT_OIF, flags: C.NFTA_FIB_F_SADDR | C.NFTA_FIB_F_IIF | C.NFTA_FIB_F_PRESENT },
    { type: 'cmp', sreg: REG, op: 'eq', data: Buffer.alloc(4) },
  ];
}
