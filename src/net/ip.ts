/** IP addresses and CIDRs as numbers: parsing to bigints, canonical text, and cidr-minus-excepts
 * as inclusive ranges (policy ipBlocks, the proxy's source ranges, IPAM blocks). */

import { formatDottedQuad, formatIPv6Groups, parseDottedQuad, parseIPv6Groups } from './ip-text';

export type IpFamily = 'v4' | 'v6';

export interface ParsedIp {
  family: IpFamily;
  value: bigint;
}

export interface ParsedCidr {
  family: IpFamily;
  /** Network address (host bits cleared). */
  first: bigint;
  last: bigint;
  prefix: number;
}

const BITS: Record<IpFamily, number> = { v4: 32, v6: 128 };

/** 0-999 in decimal without leading zeros (they read as octal elsewhere; Go's net.ParseIP
 * refuses them too). */
const SHORT_DECIMAL = /^(0|[1-9][0-9]{0,2})$/;

function parseV4(text: string): bigint | undefined {
  const n = parseDottedQuad(text);
  return n === undefined ? undefined : BigInt(n);
}

function groupsToBigint(groups: number[]): bigint {
  let value = 0n;
  for (const g of groups) value = (value << 16n) | BigInt(g);
  return value;
}

export function parseIp(text: string): ParsedIp | undefined {
  if (text.includes(':')) {
    const groups = parseIPv6Groups(text);
    return groups === undefined ? undefined : { family: 'v6', value: groupsToBigint(groups) };
  }
  const value = parseV4(text);
  return value === undefined ? undefined : { family: 'v4', value };
}

export function formatIp(family: IpFamily, value: bigint): string {
  if (family === 'v4') return formatDottedQuad(Number(value & 0xffffffffn));
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  return formatIPv6Groups(groups);
}

/** Canonical text and family of an address, or undefined when it is not one. */
export function canonicalIp(text: string): { family: IpFamily; text: string } | undefined {
  const trimmed = text.trim();
  // A dotted quad (leading zeros are refused) is its own canonical text.
  if (parseDottedQuad(trimmed) !== undefined) return { family: 'v4', text: trimmed };
  if (trimmed.includes(':')) {
    const groups = parseIPv6Groups(trimmed);
    return groups && { family: 'v6', text: formatIPv6Groups(groups) };
  }
  return undefined;
}

/** Parses `addr/prefix`. Host bits are cleared (as Go's net.ParseCIDR does). */
export function parseCidr(text: string): ParsedCidr | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const ip = parseIp(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!ip || !SHORT_DECIMAL.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  const bits = BITS[ip.family];
  if (prefix > bits) return undefined;
  const hostMask = (1n << BigInt(bits - prefix)) - 1n;
  const first = ip.value & ~hostMask;
  return { family: ip.family, first, last: first | hostMask, prefix };
}

export function formatCidr(c: ParsedCidr): string {
  return `${formatIp(c.family, c.first)}/${c.prefix}`;
}

/** [first, last] of `cidr` minus every range in `excepts`, sorted and disjoint. */
export function subtractRanges(cidr: ParsedCidr, excepts: ParsedCidr[]): Array<[bigint, bigint]> {
  const cuts = excepts.map((e) => [e.first, e.last] as [bigint, bigint]).sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const out: Array<[bigint, bigint]> = [];
  let next = cidr.first;
  for (const [first, last] of cuts) {
    if (last < next) continue;
    if (first > next) out.push([next, first - 1n]);
    if (last >= cidr.last) return out;
    next = last + 1n;
  }
  out.push([next, cidr.last]);
  return out;
}

export function ipInCidr(ip: ParsedIp, c: ParsedCidr): boolean {
  return ip.family === c.family && ip.value >= c.first && ip.value <= c.last;
}
