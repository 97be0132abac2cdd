/** IP address and CIDR arithmetic for policy compilation: parsing to bigints, canonical text,
 * and cidr-minus-excepts as inclusive ranges. */

import { formatIPv6Groups } from '../net/ipv6-text';

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
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  // A number, not a bigint, until the end: 32 bits are exact in a double, and bigint
  // arithmetic allocates at every step.
  let value = 0;
  for (const part of parts) {
    if (!SHORT_DECIMAL.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    value = value * 256 + n;
  }
  return BigInt(value);
}

/** The eight 16-bit groups of an IPv6 address (numbers, not a bigint: pod addresses are parsed
 * on every pod event and bigint arithmetic is slow; for the same reason the groups are read
 * character by character rather than split and matched). */
function parseV6Groups(text: string): number[] | undefined {
  let end = text.length;
  let tail: number[] | undefined;
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const v4 = parseV4(text.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail = [Number(v4 >> 16n), Number(v4 & 0xffffn)];
    // Keep the '::' when the address ends in it before the embedded IPv4 ("::1.2.3.4").
    end = text[lastColon - 1] === ':' ? lastColon + 1 : lastColon;
  }
  // The groups are text[0, end): at most one '::' there, splitting them into left and right.
  let gap = text.indexOf('::');
  if (gap + 2 > end) gap = -1;
  if (gap >= 0) {
    const second = text.indexOf('::', gap + 2);
    if (second >= 0 && second + 2 <= end) return undefined;
  }
  const left: number[] = [];
  const right: number[] = [];
  if (!readGroups(text, 0, gap >= 0 ? gap : end, left)) return undefined;
  if (gap >= 0 && !readGroups(text, gap + 2, end, right)) return undefined;
  if (tail) right.push(tail[0], tail[1]);
  const missing = 8 - left.length - right.length;
  if (gap >= 0 ? missing < 1 : missing !== 0) return undefined;
  for (let i = 0; i < missing; i++) left.push(0);
  for (const g of right) left.push(g);
  return left;
}

/** Appends the colon-separated groups of text[start, end) (1-4 hex digits each) to `out`;
 * false when one is malformed. An empty range has no groups. */
function readGroups(text: string, start: number, end: number, out: number[]): boolean {
  if (start === end) return true;
  let value = 0;
  let digits = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x3a) {
      if (digits === 0) return false;
      out.push(value);
      value = 0;
      digits = 0;
      continue;
    }
    const d = hexDigit(c);
    if (d < 0 || ++digits > 4) return false;
    value = value * 16 + d;
  }
  if (digits === 0) return false;
  out.push(value);
  return true;
}

function hexDigit(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x61 + 10;
  if (c >= 0x41 && c <= 0x46) return c - 0x41 + 10;
  return -1;
}

function groupsToBigint(groups: number[]): bigint {
  let value = 0n;
  for (const g of groups) value = (value << 16n) | BigInt(g);
  return value;
}

export function parseIp(text: string): ParsedIp | undefined {
  if (text.includes(':')) {
    const groups = parseV6Groups(text);
    return groups === undefined ? undefined : { family: 'v6', value: groupsToBigint(groups) };
  }
  const value = parseV4(text);
  return value === undefined ? undefined : { family: 'v4', value };
}

export function formatIp(family: IpFamily, value: bigint): string {
  if (family === 'v4') {
    const n = Number(value & 0xffffffffn);
    return `${n >>> 24}.${(n >>> 16) & 0xff}.${(n >>> 8) & 0xff}.${n & 0xff}`;
  }
  const groups: number[] = [];
  for (let i = 7; i >= 0; i--) groups.push(Number((value >> BigInt(i * 16)) & 0xffffn));
  return formatIPv6Groups(groups);
}


const V4_CANONICAL = /^(?:(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\.){3}(?:25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$/;

/** Canonical text and family of an address, or undefined when it is not one. */
export function canonicalIp(text: string): { family: IpFamily; text: string } | undefined {
  const trimmed = text.trim();
  // Pod addresses are parsed on every pod event; a canonical IPv4 needs no arithmetic.
  if (V4_CANONICAL.test(trimmed)) return { family: 'v4', text: trimmed };
  if (trimmed.includes(':')) {
    const groups = parseV6Groups(trimmed);
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
