/** Typed values as nf_tables carries them: numbers in network byte order, set keys sized per nft
 * data type, concatenation fields padded to 32-bit registers. Addresses are in src/net/ip-bytes.ts. */
import { endianness } from 'node:os';
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
export function keyLength(fields: readonly NftTypeName[]): number {
  if (fields.length === 1) return TYPE_LEN[fields[0]];
  return fields.reduce((n, f) => n + pad4(TYPE_LEN[f]), 0);
}

/** Data length of a map: a single type exact, a concatenation padded per field as keys are. */
export function dataLength(data: NftTypeName | readonly NftTypeName[]): number {
  return typeof data === 'string' ? TYPE_LEN[data] : keyLength(data);
}

/** A key or data type as nft writes it: `ipv4_addr . inet_service`. */
export function typeText(t: NftTypeName | readonly NftTypeName[]): string {
  return typeof t === 'string' ? t : t.join(' . ');
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

/** Whether this host stores numbers little-endian (how the kernel's host-order values are laid out). */
export const HOST_LE = endianness() === 'LE';

/** A 32-bit number in host byte order, as the kernel keeps marks and numgen, hash and fib
 * results, and as nft writes its set udata. */
export function hostU32(n: number): Buffer {
  const b = Buffer.allocUnsafe(4);
  if (HOST_LE) b.writeUInt32LE(n >>> 0);
  else b.writeUInt32BE(n >>> 0);
  return b;
}

/** The host-order 32-bit number at the start of b. */
export function readHostU32(b: Buffer): number {
  return HOST_LE ? b.readUInt32LE(0) : b.readUInt32BE(0);
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
