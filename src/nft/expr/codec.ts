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

// Checked values for NFTA_EXPR_DATA members: encoders write `w.be32(type, u32(e.sreg, 'cmp.sreg'))`
// and a value that would silently wrap on the wire is refused. Plain functions, not a writer object
// per expression: every rule of a batch passes here.

function notUint(v: number, max: number, field: string): RangeError {
  return new RangeError(`${field}: ${v} is not an integer in 0..${max}`);
}

export function u8(v: number, field: string): number {
  if (Number.isInteger(v) && v >= 0 && v <= 0xff) return v;
  throw notUint(v, 0xff, field);
}

export function u16(v: number, field: string): number {
  if (Number.isInteger(v) && v >= 0 && v <= 0xffff) return v;
  throw notUint(v, 0xffff, field);
}

export function u32(v: number, field: string): number {
  if (Number.isInteger(v) && v >= 0 && v <= 0xffffffff) return v;
  throw notUint(v, 0xffffffff, field);
}

export function u64(v: bigint, field: string): bigint {
  if (typeof v !== 'bigint' || v < 0n || v > 0xffffffffffffffffn) throw new RangeError(`${field}: ${v} is not a 64-bit unsigned bigint`);
  return v;
}

/** A string member, written NUL-terminated with `w.str` (libnftnl's mnl_attr_put_strz) or, as objref
 * does, unterminated as bytes (mnl_attr_put_str); the kernel's NLA_STRING accepts both. */
export function text(s: string, field: string): string {
  if (typeof s !== 'string') throw new TypeError(`${field}: not a string`);
  return s;
}

/** A two-way table between a readable name and its kernel number. Unknown numbers are
 * unrepresentable (a newer kernel), unknown names are caller errors. */
export class EnumMap<N extends string> {
  private readonly byName = new Map<N, number>();
  private readonly byNumber = new Map<number, N>();

  constructor(
    private readonly what: string,
    byName: Record<N, number>,
  ) {
    for (const [k, v] of Object.entries(byName) as [N, number][]) {
      this.byName.set(k, v);
      this.byNumber.set(v, k);
    }
  }

  number(name: N): number {
    const n = this.byName.get(name);
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
