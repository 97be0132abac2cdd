/** Netlink attributes (struct nlattr, linux/netlink.h): a pure writer and a bounds-checked reader. */
import { DecodeError } from './errors';
import { NFGENMSG_LEN, NFNETLINK_V0, NLMSG_HDRLEN } from './message';

export const NLA_HDRLEN = 4;
export const NLA_F_NESTED = 1 << 15;
export const NLA_F_NET_BYTEORDER = 1 << 14;
export const NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;
const MAX_ATTR_LEN = 0xffff;

export function align4(n: number): number {
  return (n + 3) & ~3;
}

/** Copies data into b at `at` and zeroes from its end up to `end` (the pad). Small copies go
 * byte by byte: set() and fill() are calls into C++, and a batch copies thousands of short
 * values and encoded expressions. */
function copyPadded(b: Buffer, at: number, data: Uint8Array, end: number): void {
  if (data.length <= 64) for (let i = 0; i < data.length; i++) b[at + i] = data[i];
  else b.set(data, at);
  for (let i = at + data.length; i < end; i++) b[i] = 0;
}

/** Builds an attribute stream. Nests are closed by the callback form, so they always balance. */
export class AttrWriter {
  private buf: Buffer;
  private len = 0;

  constructor(initialSize = 256) {
    this.buf = Buffer.alloc(initialSize);
  }

  private reserve(n: number): void {
    if (this.len + n <= this.buf.length) return;
    let size = this.buf.length * 2;
    while (size < this.len + n) size *= 2;
    const next = Buffer.alloc(size);
    this.buf.copy(next, 0, 0, this.len);
    this.buf = next;
  }

  // Bytes are stored one by one below: the Buffer write methods validate their arguments on
  // every call, and a large batch writes hundreds of thousands of small fields.
  private header(type: number, payloadLen: number): number {
    const total = NLA_HDRLEN + payloadLen;
    if (total > MAX_ATTR_LEN) throw new RangeError(`attribute ${type & NLA_TYPE_MASK} too long: ${total} bytes`);
    const padded = align4(total);
    this.reserve(padded);
    const b = this.buf;
    const at = this.len;
    b[at] = total & 0xff;
    b[at + 1] = total >>> 8;
    b[at + 2] = type & 0xff;
    b[at + 3] = (type >>> 8) & 0xff;
    for (let i = at + total; i < at + padded; i++) b[i] = 0;
    this.len += padded;
    return at + NLA_HDRLEN;
  }

  // Every writer takes the offset from header() before touching this.buf: header() may reallocate.
  bytes(type: number, data: Uint8Array): this {
    const at = this.header(type, data.length);
    copyPadded(this.buf, at, data, at + data.length);
    return this;
  }

  /** A nest holding one attribute of raw bytes, `type { inner: data }` (nft_data's value form),
   * written in one step: set elements and value matches are the bulk of a large batch. */
  nestedBytes(type: number, inner: number, data: Uint8Array): this {
    const innerTotal = NLA_HDRLEN + data.length;
    const total = NLA_HDRLEN + align4(innerTotal);
    if (total > MAX_ATTR_LEN) throw new RangeError(`attribute ${type & NLA_TYPE_MASK} too long: ${total} bytes`);
    this.reserve(total);
    const b = this.buf;
    const at = this.len;
    const outer = type | NLA_F_NESTED;
    b[at] = total & 0xff;
    b[at + 1] = total >>> 8;
    b[at + 2] = outer & 0xff;
    b[at + 3] = outer >>> 8;
    b[at + 4] = innerTotal & 0xff;
    b[at + 5] = innerTotal >>> 8;
    b[at + 6] = inner & 0xff;
    b[at + 7] = (inner >>> 8) & 0xff;
    copyPadded(b, at + 2 * NLA_HDRLEN, data, at + total);
    this.len += total;
    return this;
  }

  /** NUL-terminated string, as NLA_STRING/NLA_NUL_STRING policies expect. */
  str(type: number, s: string): this {
    let ascii = true;
    for (let i = 0; i < s.length && ascii; i++) ascii = s.charCodeAt(i) < 0x80;
    if (!ascii) {
      const n = Buffer.byteLength(s, 'utf8');
      const at = this.header(type, n + 1);
      this.buf.write(s, at, n, 'utf8');
      this.buf[at + n] = 0;
      return this;
    }
    const at = this.header(type, s.length + 1);
    const b = this.buf;
    for (let i = 0; i < s.length; i++) b[at + i] = s.charCodeAt(i);
    b[at + s.length] = 0;
    return this;
  }

  u8(type: number, v: number): this {
    const at = this.header(type, 1);
    this.buf.writeUInt8(v, at);
    return this;
  }

  /** Host byte order (little-endian on every platform nfkube runs on). */
  u16(type: number, v: number): this {
    const at = this.header(type, 2);
    this.buf.writeUInt16LE(v, at);
    return this;
  }

  be16(type: number, v: number): this {
    const at = this.header(type, 2);
    this.buf.writeUInt16BE(v, at);
    return this;
  }

  u32(type: number, v: number): this {
    const at = this.header(type, 4);
    const b = this.buf;
    v >>>= 0;
    b[at] = v & 0xff;
    b[at + 1] = (v >>> 8) & 0xff;
    b[at + 2] = (v >>> 16) & 0xff;
    b[at + 3] = v >>> 24;
    return this;
  }

  be32(type: number, v: number): this {
    const at = this.header(type, 4);
    const b = this.buf;
    v >>>= 0;
    b[at] = v >>> 24;
    b[at + 1] = (v >>> 16) & 0xff;
    b[at + 2] = (v >>> 8) & 0xff;
    b[at + 3] = v & 0xff;
    return this;
  }

  be64(type: number, v: bigint): this {
    const at = this.header(type, 8);
    this.buf.writeBigUInt64BE(BigInt.asUintN(64, v), at);
    return this;
  }

  flag(type: number): this {
    this.header(type, 0);
    return this;
  }

  /** Appends already encoded bytes (a whole message or attribute), padded to 4 bytes. */
  raw(data: Uint8Array): this {
    const padded = align4(data.length);
    this.reserve(padded);
    const b = this.buf;
    const at = this.len;
    copyPadded(b, at, data, at + padded);
    this.len = at + padded;
    return this;
  }

  /** Nested attribute; NLA_F_NESTED is set, as the kernel's strict validation requires. */
  nest(type: number, fill: (w: AttrWriter) => void): this {
    const at = this.beginNest(type);
    fill(this);
    this.endNest(at);
    return this;
  }

  /** Opens a nest for hot loops that cannot afford a closure; close it with endNest. */
  beginNest(type: number): number {
    this.reserve(NLA_HDRLEN);
    const at = this.len;
    const t = type | NLA_F_NESTED;
    this.buf[at + 2] = t & 0xff;
    this.buf[at + 3] = t >>> 8;
    this.len += NLA_HDRLEN;
    return at;
  }

  endNest(at: number): void {
    const total = this.len - at;
    if (total > MAX_ATTR_LEN) throw new RangeError(`nested attribute ${this.buf.readUInt16LE(at + 2) & NLA_TYPE_MASK} too long: ${total} bytes (limit 65535)`);
    this.buf[at] = total & 0xff;
    this.buf[at + 1] = total >>> 8;
  }

  /** Starts a netlink message (nlmsghdr + nfgenmsg, linux/netlink.h and nfnetlink.h) in the same
   * buffer, so a whole batch is written once with no intermediate copies. Close with endMessage. */
  beginMessage(type: number, flags: number, seq: number, family: number, resId = 0): number {
    if (type !== (type & 0xffff) || flags !== (flags & 0xffff) || family !== (family & 0xff) || resId !== (resId & 0xffff)) {
      throw new RangeError(`netlink message header out of range: type ${type}, flags ${flags}, family ${family}, res_id ${resId}`);
    }
    this.reserve(NLMSG_HDRLEN + NFGENMSG_LEN);
    const at = this.len;
    // writeNfHeader's layout, byte by byte: a batch begins one message per object, and the
    // Buffer write methods validate every call. nlmsg_len is set by endMessage.
    const b = this.buf;
    const s = seq >>> 0;
    b[at] = b[at + 1] = b[at + 2] = b[at + 3] = 0;
    b[at + 4] = type & 0xff;
    b[at + 5] = type >>> 8;
    b[at + 6] = flags & 0xff;
    b[at + 7] = flags >>> 8;
    b[at + 8] = s & 0xff;
    b[at + 9] = (s >>> 8) & 0xff;
    b[at + 10] = (s >>> 16) & 0xff;
    b[at + 11] = s >>> 24;
    b[at + 12] = b[at + 13] = b[at + 14] = b[at + 15] = 0;
    b[at + 16] = family;
    b[at + 17] = NFNETLINK_V0;
    b[at + 18] = resId >>> 8;
    b[at + 19] = resId & 0xff;
    this.len += NLMSG_HDRLEN + NFGENMSG_LEN;
    return at;
  }

  endMessage(at: number): void {
    const n = this.len - at;
    const b = this.buf;
    b[at] = n & 0xff;
    b[at + 1] = (n >>> 8) & 0xff;
    b[at + 2] = (n >>> 16) & 0xff;
    b[at + 3] = n >>> 24;
  }

  /** Adds flags to the header of the message started at `at`. */
  addMessageFlags(at: number, flags: number): void {
    this.buf.writeUInt16LE(this.buf.readUInt16LE(at + 6) | flags, at + 6);
  }

  get length(): number {
    return this.len;
  }

  /** A copy of the bytes written since offset `at` (from `length`), to be written again with raw(). */
  since(at: number): Uint8Array {
    // A copy, not Buffer#slice (a view): a cached view would keep the whole batch buffer alive.
    return new Uint8Array(this.buf.subarray(at, this.len));
  }

  finish(): Buffer {
    return Buffer.from(this.buf.subarray(0, this.len));
  }
}

// Names (tables, chains, sets, expression kinds) repeat in every rule of a dump; short ASCII
// strings are interned by their bytes so a dump does not allocate one string per occurrence.
const INTERN_MAX = 32;
const interned = new Map<number, string>();

function readText(buf: Buffer, start: number, end: number): string {
  let nul = start;
  let hash = 0x811c9dc5;
  let ascii = true;
  while (nul < end && buf[nul] !== 0) {
    const c = buf[nul];
    if (c > 0x7f) ascii = false;
    hash = Math.imul(hash ^ c, 0x01000193);
    nul++;
  }
  const len = nul - start;
  if (!ascii || len > INTERN_MAX) return buf.toString('utf8', start, nul);
  hash = (hash ^ len) >>> 0;
  const hit = interned.get(hash);
  if (hit !== undefined && hit.length === len) {
    let same = true;
    for (let i = 0; i < len && same; i++) same = hit.charCodeAt(i) === buf[start + i];
    if (same) return hit;
  }
  const text = buf.toString('latin1', start, nul);
  if (interned.size >= 65536) interned.clear();
  interned.set(hash, text);
  return text;
}

/** One attribute as read: its type without flags, and where its payload lies in the buffer.
 * Payload views are made only on demand: a large dump holds hundreds of thousands of attributes,
 * and most are read as numbers straight from the buffer. */
export class Attr {
  constructor(
    readonly type: number,
    readonly nested: boolean,
    readonly buf: Buffer,
    readonly start: number,
    readonly end: number,
  ) {}

  get length(): number {
    return this.end - this.start;
  }

  /** A view of the payload (not a copy). */
  get data(): Buffer {
    return this.buf.subarray(this.start, this.end);
  }

  /** The payload up to its first NUL, as NLA_STRING attributes are read. */
  text(): string {
    return readText(this.buf, this.start, this.end);
  }

  /** The payload as an attribute stream. */
  attrs(what: string): AttrMap {
    return AttrMap.parse(this.buf, what, this.start, this.end);
  }
}

/** Splits an attribute stream; throws DecodeError on any length that does not fit. */
export function parseAttrs(buf: Buffer, start = 0, end = buf.length): Attr[] {
  const out: Attr[] = [];
  let pos = start;
  while (pos < end) {
    if (end - pos < NLA_HDRLEN) throw new DecodeError(`truncated attribute header at offset ${pos}`);
    const len = buf[pos] | (buf[pos + 1] << 8);
    const rawType = buf[pos + 2] | (buf[pos + 3] << 8);
    if (len < NLA_HDRLEN || pos + len > end) {
      throw new DecodeError(`attribute ${rawType & NLA_TYPE_MASK} at offset ${pos} has bad length ${len}`);
    }
    out.push(new Attr(rawType & NLA_TYPE_MASK, (rawType & NLA_F_NESTED) !== 0, buf, pos + NLA_HDRLEN, pos + len));
    pos += align4(len);
  }
  return out;
}

/** Attributes keyed by type, with typed accessors that fail with DecodeError, never crash. */
export class AttrMap {
  /** The last attribute of each type (as the kernel's nla_parse keeps), indexed by type: attribute
   * types are small numbers. */
  private readonly byType: (Attr | undefined)[];
  readonly list: Attr[];

  constructor(
    attrs: Attr[],
    private readonly what: string,
  ) {
    this.list = attrs;
    this.byType = [];
    for (const a of attrs) this.byType[a.type] = a;
  }

  static parse(buf: Buffer, what: string, start = 0, end = buf.length): AttrMap {
    return new AttrMap(parseAttrs(buf, start, end), what);
  }

  has(type: number): boolean {
    return this.byType[type] !== undefined;
  }

  get(type: number): Attr | undefined {
    return this.byType[type];
  }

  /** The attribute of `type` when its payload holds at least `size` bytes; read numbers at .start. */
  private need(type: number, size: number): Attr | undefined {
    const a = this.byType[type];
    if (!a) return undefined;
    if (a.end - a.start < size) throw new DecodeError(`${this.what}: attribute ${type} has ${a.length} bytes, expected ${size}`);
    return a;
  }

  str(type: number): string | undefined {
    return this.byType[type]?.text();
  }

  u8(type: number): number | undefined {
    const a = this.need(type, 1);
    return a && a.buf[a.start];
  }

  u16(type: number): number | undefined {
    const a = this.need(type, 2);
    return a && a.buf.readUInt16LE(a.start);
  }

  be16(type: number): number | undefined {
    const a = this.need(type, 2);
    return a && a.buf.readUInt16BE(a.start);
  }

  u32(type: number): number | undefined {
    const a = this.need(type, 4);
    return a && a.buf.readUInt32LE(a.start);
  }

  be32(type: number): number | undefined {
    const a = this.need(type, 4);
    return a && a.buf.readUInt32BE(a.start);
  }

  be64(type: number): bigint | undefined {
    const a = this.need(type, 8);
    return a && a.buf.readBigUInt64BE(a.start);
  }

  bytes(type: number): Buffer | undefined {
    return this.byType[type]?.data;
  }

  nested(type: number): AttrMap | undefined {
    const a = this.byType[type];
    return a ? AttrMap.parse(a.buf, `${this.what}/${type}`, a.start, a.end) : undefined;
  }

  /** Like the accessors above but absence is an error naming the attribute. */
  required<T>(value: T | undefined, name: string): T {
    if (value === undefined) throw new DecodeError(`${this.what}: missing ${name}`);
    return value;
  }
}
