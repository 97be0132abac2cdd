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

function parseV4(text: string): bigint | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  let value = 0n;
  for (const part of parts) {
    // Leading zeros are refused, as Go's net.ParseIP does (they read as octal elsewhere).
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    value = (value << 8n) | BigInt(n);
  }
  return value;
}

/** The eight 16-bit groups of an IPv6 address (numbers, not a bigint: pod addresses are parsed
 * on every pod event and bigint arithmetic is slow). */
function parseV6Groups(text: string): number[] | undefined {
  let head = text;
  let tail: number[] = [];
  const lastColon = text.lastIndexOf(':');
  if (text.includes('.', lastColon)) {
    const v4 = parseV4(text.slice(lastColon + 1));
    if (v4 === undefined) return undefined;
    tail = [Number(v4 >> 16n), Number(v4 & 0xffffn)];
    // Keep the '::' when the address ends in it before the embedded IPv4 ("::1.2.3.4").
    head = text.slice(0, text[lastColon - 1] === ':' ? lastColon + 1 : lastColon);
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const parse = (s: string): number[] | undefined => {
    if (s === '') return [];
    const out: number[] = [];
    for (const g of s.split(':')) {
      if (!/^[0-9a-fA-F]{1,4}$/.test(g)) return undefined;
      out.push(parseInt(g, 16));
    }
    return out;
  };
  const left = parse(halves[0]);
  const right = halves.length === 2 ? parse(halves[1]) : [];
  if (!left || !right) return undefined;
  right.push(...tail);
  const missing = 8 - left.length - right.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  return [...left, ...Array<number>(missing).fill(0), ...right];
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
    return [24n, 16n, 8n, 0n].map((s) => String((value >> s) & 0xffn)).join('.');
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
  if (!ip || !/^(0|[1-9][0-9]{0,2})$/.test(prefixText)) return undefined;
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
