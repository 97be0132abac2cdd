/** Addresses as the kernel carries them (nf_tables values, ctnetlink tuples, rtnetlink
 * attributes): 4 or 16 bytes in network byte order, and back to text. */
import { isIPv4, isIPv6 } from 'node:net';
import { parseCidr, parseIp } from './ip';
import { formatIPv6Groups, parseDottedQuad, parseIPv6Groups } from './ip-text';

/** Dotted-quad to its number (leading zeros refused, see parseDottedQuad), for a caller that
 * writes it straight into a buffer of its own. */
export function ipv4Number(addr: string): number {
  const n = parseDottedQuad(addr);
  if (n === undefined) throw new Error(`invalid IPv4 address "${addr}"`);
  return n;
}

/** Dotted-quad to 4 bytes. */
export function ipv4(addr: string): Buffer {
  const n = ipv4Number(addr);
  const out = Buffer.allocUnsafe(4);
  // Byte by byte: writeUInt32BE validates its arguments, and a full sync makes one per element.
  out[0] = n >>> 24;
  out[1] = (n >>> 16) & 0xff;
  out[2] = (n >>> 8) & 0xff;
  out[3] = n & 0xff;
  return out;
}

/** The 16 bytes of IPv6 text, or undefined when it is not an address (a zone is not read). */
export function parseIPv6Bytes(addr: string): Buffer | undefined {
  const groups = parseIPv6Groups(addr);
  if (!groups) return undefined;
  const out = Buffer.allocUnsafe(16);
  for (let g = 0; g < 8; g++) {
    out[2 * g] = groups[g] >>> 8;
    out[2 * g + 1] = groups[g] & 0xff;
  }
  return out;
}

/** IPv6 text to 16 bytes. Well-formed text is parsed by hand (this runs once per set element on
 * large syncs); anything else (a zone) takes the general path. */
export function ipv6(addr: string): Buffer {
  return parseIPv6Bytes(addr) ?? ipv6General(addr);
}

function ipv6General(addr: string): Buffer {
  if (!isIPv6(addr)) throw new Error(`invalid IPv6 address "${addr}"`);
  let a = addr;
  const v4tail = /(\d+\.\d+\.\d+\.\d+)$/.exec(a);
  let tail: number[] = [];
  if (v4tail) {
    tail = [...ipv4(v4tail[1])];
    a = a.slice(0, -v4tail[1].length) + '0:0';
  }
  const [head, rest] = a.split('::');
  const h = head ? head.split(':') : [];
  const r = rest !== undefined && rest !== '' ? rest.split(':') : [];
  const groups = rest === undefined ? h : [...h, ...Array(8 - h.length - r.length).fill('0'), ...r];
  const b = Buffer.alloc(16);
  groups.forEach((g, i) => b.writeUInt16BE(parseInt(g, 16), i * 2));
  if (tail.length) b.set(tail, 12);
  return b;
}

/** Address bytes of either family. */
export function ipAddr(addr: string): Buffer {
  return isIPv4(addr) ? ipv4(addr) : ipv6(addr);
}

export function formatIPv4(b: Buffer): string {
  return [...b.subarray(0, 4)].join('.');
}

export function formatIPv6(b: Buffer): string {
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(b.readUInt16BE(i));
  return formatIPv6Groups(groups);
}

function bigintBytes(value: bigint, length: number): Buffer {
  const out = Buffer.alloc(length);
  let v = value;
  for (let i = length - 1; i >= 0; i--) {
    out[i] = Number(v & 0xffn);
    v >>= 8n;
  }
  return out;
}

/** Parses "a.b.c.d/n" or "x::/n" (a bare address is its own /32 or /128) to the inclusive
 * [first, last] address range. */
export function cidrRange(cidr: string): { family: 4 | 6; first: Buffer; last: Buffer; prefix: number } {
  const slash = cidr.indexOf('/');
  const addr = slash < 0 ? cidr : cidr.slice(0, slash);
  const ip = parseIp(addr);
  if (!ip) throw new Error(`invalid CIDR "${cidr}": bad address`);
  const bits = ip.family === 'v4' ? 32 : 128;
  const parsed = parseCidr(`${addr}/${slash < 0 ? bits : cidr.slice(slash + 1)}`);
  if (!parsed) throw new Error(`invalid CIDR "${cidr}": bad prefix length`);
  const len = bits / 8;
  return { family: ip.family === 'v4' ? 4 : 6, first: bigintBytes(parsed.first, len), last: bigintBytes(parsed.last, len), prefix: parsed.prefix };
}
