/** The shape every expression codec has, and the strict attribute readers and checked writers
 * they share. Sizes follow the kernel's nla_policy for each expression (net/netfilter/nft_*.c). */
import { Attr, AttrMap, AttrWriter } from '../../netlink/attr';
import { DecodeError } from '../../netlink/errors';
import * as C from '../constants';
import { Expr } from '../types';

export type KnownExpr = Exclude<Expr, { type: 'opaque' }>;
export type ExprKind = KnownExpr['type'];
export type ExprOf<K extends ExprKind> = Extract<KnownExpr, { type: K }>;

export interface ExprCodec<K extends ExprKind> {
  /** Attribute types of NFTA_EXPR_DATA this codec understands; any other makes the expression opaque. */
  readonly attrs: readonly number[];
  encode(w: AttrWriter, e: ExprOf<K>): void;
  decode(r: ExprReader): ExprOf<K>;
  /** libnftnl's debug text between "[ name " and "]", trailing space included as libnftnl prints it. */
  describe(e: ExprOf<K>): string;
}

/** Well-formed bytes that the typed model cannot carry exactly (a newer kernel's enum value, an
 * attribute combination the model has no field for). decodeExpr turns it into an opaque expression;
 * other callers see an ordinary DecodeError. */
export class UnrepresentableError extends DecodeError {
  constructor(message: string) {
    super(message);
    this.name = 'UnrepresentableError';
  }
}

/** The kernel name of attribute `type` among the constants starting with `prefix`, for messages. */
export function attrName(prefix: string, type: number): string {
  for (const [k, v] of Object.entries(C)) {
    if (k.startsWith(prefix) && v === type && !k.endsWith('_UNSPEC')) return k;
  }
  return `${prefix}${type}`;
}

/** Reads the NFTA_EXPR_DATA attributes of one expression with exact sizes; every failure is a
 * DecodeError naming the expression and the attribute. */
export class ExprReader {
  constructor(
    readonly map: AttrMap,
    readonly kind: string,
    private readonly prefix: string,
  ) {}

  /** The attribute when its payload is exactly `size` bytes; numbers are read at its .start. */
  private sized(type: number, size: number): Attr | undefined {
    const a = this.map.get(type);
    if (!a) return undefined;
    if (a.length !== size) {
      throw new DecodeError(`${this.kind}: ${attrName(this.prefix, type)} has ${a.length} bytes, expected ${size}`);
    }
    return a;
  }

  has(type: number): boolean {
    return this.map.has(type);
  }

  u8(type: number): number | undefined {
    const a = this.sized(type, 1);
    return a && a.buf.readUInt8(a.start);
  }

  be16(type: number): number | undefined {
    const a = this.sized(type, 2);
    return a && a.buf.readUInt16BE(a.start);
  }

  be32(type: number): number | undefined {
    const a = this.sized(type, 4);
    return a && a.buf.readUInt32BE(a.start);
  }

  be64(type: number): bigint | undefined {
    const a = this.sized(type, 8);
    return a && a.buf.readBigUInt64BE(a.start);
  }

  /** NLA_STRING: up to the first NUL, which the sender may or may not have included. */
  str(type: number): string | undefined {
    return this.map.get(type)?.text();
  }

  /** A nested attribute's members, for nft_data nests. */
  nested(type: number): AttrMap | undefined {
    return this.map.nested(type);
  }

  required<T>(value: T | undefined, type: number): T {
    if (value === undefined) throw new DecodeError(`${this.kind}: missing ${attrName(this.prefix, type)}`);
    return value;
  }

  /** Exactly one of two attributes, as the kernel demands of load/store forms. */
  oneOf(a: number, b: number): void {
    if (this.has(a) === this.has(b)) {
      throw new DecodeError(`${this.kind}: needs exactly one of ${attrName(this.prefix, a)} and ${attrName(this.prefix, b)}`);
    }
  }

  /** For attributes the kernel treats as optional but the typed model requires. */
  modelRequired<T>(value: T | undefined, type: number): T {
    if (value === undefined) throw new UnrepresentableError(`${this.kind}: no ${attrName(this.prefix, type)}`);
    return value;
  }
}

/** Writes NFTA_EXPR_DATA members, refusing values that would silently wrap on the wire. */
export class ExprWriter {
  constructor(
    readonly w: AttrWriter,
    private readonly kind: string,
  ) {}

  private check(field: string, v: number, max: number): number {
    if (!Number.isInteger(v) || v < 0 || v > max) throw new RangeError(`${this.kind}.${field}: ${v} is not an integer in 0..${max}`);
    return v;
  }

  u8(type: number, v: number, field: string): this {
    this.w.u8(type, this.check(field, v, 0xff));
    return this;
  }

  be16(type: number, v: number, field: string): this {
    this.w.be16(type, this.check(field, v, 0xffff));
    return this;
  }

  be32(type: number, v: number, field: string): this {
    this.w.be32(type, this.check(field, v, 0xffffffff));
    return this;
  }

  be64(type: number, v: bigint, field: string): this {
    if (typeof v !== 'bigint' || v < 0n || v > 0xffffffffffffffffn) throw new RangeError(`${this.kind}.${field}: ${v} is not a 64-bit unsigned bigint`);
    this.w.be64(type, v);
    return this;
  }

  /** NUL-terminated, as libnftnl's mnl_attr_put_strz. */
  strz(type: number, s: string, field: string): this {
    if (typeof s !== 'string') throw new TypeError(`${this.kind}.${field}: not a string`);
    this.w.str(type, s);
    return this;
  }

  /** Without NUL, as libnftnl's mnl_attr_put_str (objref); the kernel's NLA_STRING accepts both. */
  str(type: number, s: string, field: string): this {
    if (typeof s !== 'string') throw new TypeError(`${this.kind}.${field}: not a string`);
    this.w.bytes(type, Buffer.from(s, 'utf8'));
    return this;
  }
}

/** A two-way table between a readable name and its kernel number. Unknown numbers are
 * unrepresentable (a newer kernel), unknown names are caller errors. */
export class EnumMap<N extends string> {
  private readonly byName: Record<N, number>;
  private readonly byNumber = new Map<number, N>();

  constructor(
    private readonly what: string,
    byName: Record<N, number>,
  ) {
    this.byName = byName;
    for (const [k, v] of Object.entries(byName) as [N, number][]) this.byNumber.set(v, k);
  }

  number(name: N): number {
    const n = Object.prototype.hasOwnProperty.call(this.byName, name) ? this.byName[name] : undefined;
    if (n === undefined) throw new RangeError(`${this.what}: unknown value ${JSON.stringify(name)}`);
    return n;
  }

  name(n: number): N {
    const name = this.byNumber.get(n);
    if (name === undefined) throw new UnrepresentableError(`${this.what}: unknown value ${n}`);
    return name;
  }
}

/** libnftnl's rendering of a data register: each 32-bit word in host order as 0x%08x, then a space. */
export function dataWords(b: Buffer | undefined): string {
  if (!b) return '';
  let out = '';
  for (let i = 0; i < b.length; i += 4) {
    let word = 0;
    for (let j = 0; j < 4 && i + j < b.length; j++) word |= b[i + j] << (8 * j);
    out += '0x' + (word >>> 0).toString(16).padStart(8, '0') + ' ';
  }
  return out;
}

/** Drops keys whose value is undefined, so a decoded optional field exists exactly when its
 * attribute did (and decode(encode(x)) deep-equals x under strict comparison). */
export function compact<T extends object>(o: T): T {
  // A fresh object rather than `delete`, which would leave V8 a slow dictionary-mode object.
  const out: Partial<T> = {};
  for (const k in o) if (o[k] !== undefined) out[k] = o[k];
  return out as T;
}
