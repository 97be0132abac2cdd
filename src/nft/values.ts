/** Typed values as nf_tables carries them: addresses and ports in network byte order, set keys
 * sized per nft data type, concatenation fields padded to 32-bit registers. */
import { isIPv4, isIPv6 } from 'node:net';
import { formatIPv6Groups, parseIPv6Groups } from '../net/ip-text';
import { NftTypeName } from './types';

/** Byte length of one value of each type, before register padding. */
export const TYPE_LEN: Record<NftTypeName, number> = {
  verdict: 4,
  integer: 4,
  ipv4_addr: 4,
  ipv6_addr: 16,
  ether_addr: 6,
  inet_proto: 1,
  inet_service: 2,
  mark: 4,
  ifname: 16,
};

const pad4 = (n: number) => (n + 3) & ~3;

/** Key length of a set: one field is exact, a concatenation pads each field to 4 bytes. */
export function keyLength(fields: NftTypeName[]): number {
  if (fields.length === 1) return TYPE_LEN[fields[0]];
  return fields.reduce((n, f) => n + pad4(TYPE_LEN[f]), 0);
}

/** Dotted-quad to 4 bytes. Hand-parsed: this runs once per set element on large syncs. */
export function ipv4(addr: string): Buffer {
  const out = Buffer.allocUnsafe(4);
  let part = 0;
  let value = 0;
  let digits = 0;
  for (let i = 0; i <= addr.length; i++) {
    const c = i < addr.length ? addr.charCodeAt(i) : 46;
    if (c >= 48 && c <= 57 && digits < 3 && !(digits > 0 && value === 0)) {
      value = value * 10 + (c - 48);
      digits++;
    } else if (c === 46 && digits > 0 && value <= 255 && part < 4) {
      out[part++] = value;
      value = 0;
      digits = 0;
    } else {
      throw new Error(`invalid IPv4 address "${addr}"`);
    }
  }
  if (part !== 4) throw new Error(`invalid IPv4 address "${addr}"`);
  return out;
}

/** IPv6 text to 16 bytes. Well-formed text is parsed by hand (this runs once per set element on
 * large syncs); anything else (a zone) takes the general path. */
export function ipv6(addr: string): Buffer {
  const groups = parseIPv6Groups(addr);
  if (!groups) return ipv6General(addr);
  const out = Buffer.allocUnsafe(16);
  for (let g = 0; g < 8; g++) {
    out[2 * g] = groups[g] >>> 8;
    out[2 * g + 1] = groups[g] & 0xff;
  }
  return out;
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

// Small values come from Buffer's shared pool (allocUnsafe, every byte then written): a render
// makes tens of thousands, and Buffer.alloc gives each its own ArrayBuffer.

export function be16(n: number): Buffer {
  const b = Buffer.allocUnsafe(2);
  b.writeUInt16BE(n);
  return b;
}

export function be32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  b.writeUInt32BE(n >>> 0);
  return b;
}

/** One field of a concatenated key, zero-padded to its register width. */
export function padField(b: Buffer): Buffer {
  const out = Buffer.alloc(pad4(b.length));
  b.copy(out);
  return out;
}

/** Concatenated key from its fields (a single field is not padded). */
export function concatKey(fields: Buffer[]): Buffer {
  return fields.length === 1 ? fields[0] : Buffer.concat(fields.map(padField));
}

/** Parses "a.b.c.d/n" or "x::/n" to the inclusive [first, last] address range. */
export function cidrRange(cidr: string): { family: 4 | 6; first: Buffer; last: Buffer; prefix: number } {
  const slash = cidr.indexOf('/');
  const addr = slash < 0 ? cidr : cidr.slice(0, slash);
  const family = isIPv4(addr) ? 4 : isIPv6(addr) ? 6 : 0;
  if (family === 0) throw new Error(`invalid CIDR "${cidr}": bad address`);
  const bits = family === 4 ? 32 : 128;
  const prefixText = slash < 0 ? String(bits) : cidr.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText) || Number(prefixText) > bits) throw new Error(`invalid CIDR "${cidr}": bad prefix length`);
  const prefix = Number(prefixText);
  const first = ipAddr(addr);
  const last = Buffer.from(first);
  for (let bit = prefix; bit < bits; bit++) {
    const byte = bit >> 3;
    const mask = 0x80 >> (bit & 7);
    first[byte] &= ~mask;
    last[byte] |= mask;
  }
  return { family, first, last, prefix };
}

/** A copy of a key. Keys are a few bytes, and every interval element of a sync needs one: a plain
 * loop is cheaper than Buffer.from's general path. */
function copyKey(b: Buffer): Buffer {
  const out = Buffer.allocUnsafe(b.length);
  for (let i = 0; i < b.length; i++) out[i] = b[i];
  return out;
}

/** b + 1 as a big-endian number of the same width; undefined on overflow. */
export function increment(b: Buffer): Buffer | undefined {
  const out = copyKey(b);
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i] === 0xff) {
      out[i] = 0;
      continue;
    }
    out[i]++;
    return out;
  }
  return undefined;
}

/** b - 1 as a big-endian number of the same width; undefined below zero. */
export function decrement(b: Buffer): Buffer | undefined {
  const out = copyKey(b);
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i] === 0) {
      out[i] = 0xff;
      continue;
    }
    out[i]--;
    return out;
  }
  return undefined;
}
