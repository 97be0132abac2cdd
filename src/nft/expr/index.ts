/** nf_tables expressions on the wire: NFTA_LIST_ELEM {NFTA_EXPR_NAME, NFTA_EXPR_DATA} per
 * expression, dispatched by kernel name to one codec per kind. Anything nfkube cannot represent
 * exactly is kept as an opaque expression with its raw NFTA_EXPR_DATA, never dropped. */
import { Attr, AttrMap, AttrWriter, NLA_F_NESTED, parseAttrs } from '../../netlink/attr';
import { DecodeError } from '../../netlink/errors';
import * as C from '../constants';
import { Expr, OpaqueExpr } from '../types';
import { bitwise } from './bitwise';
import { byteorder } from './byteorder';
import { cmp } from './cmp';
import { ExprCodec, ExprKind, ExprOf, ExprReader, UnrepresentableError } from './codec';
import { counter } from './counter';
import { ct } from './ct';
import { dynset } from './dynset';
import { fib } from './fib';
import { hash } from './hash';
import { immediate } from './immediate';
import { limit } from './limit';
import { log } from './log';
import { lookup } from './lookup';
import { masq } from './masq';
import { meta } from './meta';
import { nat } from './nat';
import { numgen } from './numgen';
import { objref } from './objref';
import { payload } from './payload';
import { range } from './range';
import { reject } from './reject';

export { UnrepresentableError } from './codec';

/** Keyed by kind, which is also the kernel's expression name: a kind without a codec does not compile. */
const CODECS: { [K in ExprKind]: ExprCodec<K> } = {
  payload,
  meta,
  cmp,
  bitwise,
  range,
  lookup,
  immediate,
  counter,
  ct,
  limit,
  log,
  reject,
  nat,
  numgen,
  byteorder,
  hash,
  objref,
  masq,
  fib,
  dynset,
};

/** Attribute-name prefix of each kind's NFTA_EXPR_DATA members, for error messages. */
const ATTR_PREFIX: { [K in ExprKind]: string } = {
  payload: 'NFTA_PAYLOAD_',
  meta: 'NFTA_META_',
  cmp: 'NFTA_CMP_',
  bitwise: 'NFTA_BITWISE_',
  range: 'NFTA_RANGE_',
  lookup: 'NFTA_LOOKUP_',
  immediate: 'NFTA_IMMEDIATE_',
  counter: 'NFTA_COUNTER_',
  ct: 'NFTA_CT_',
  limit: 'NFTA_LIMIT_',
  log: 'NFTA_LOG_',
  reject: 'NFTA_REJECT_',
  nat: 'NFTA_NAT_',
  numgen: 'NFTA_NG_',
  byteorder: 'NFTA_BYTEORDER_',
  hash: 'NFTA_HASH_',
  objref: 'NFTA_OBJREF_',
  masq: 'NFTA_MASQ_',
  fib: 'NFTA_FIB_',
  dynset: 'NFTA_DYNSET_',
};

const KINDS = new Set<string>(Object.keys(CODECS));

function isKind(name: string): name is ExprKind {
  return KINDS.has(name);
}

function codecOf<K extends ExprKind>(kind: K): ExprCodec<K> {
  return CODECS[kind] as ExprCodec<K>;
}

/** The NFTA_LIST_ELEM bytes of frozen expressions. A frozen expression is one its maker shares
 * among many rules and never changes (the renderer's address loads, counted accept, port matches,
 * lookups: most of a full sync's expressions), so a batch encodes each once and copies its bytes
 * after. Held weakly: they go with their expression. */
const encodedFrozen = new WeakMap<Expr, Uint8Array>();

/** Writes one expression as an NFTA_LIST_ELEM nest. Every rule of a batch passes here, so nests
 * are opened and closed directly rather than through closures. */
export function encodeExpr(w: AttrWriter, e: Expr): void {
  if (!Object.isFrozen(e)) return encodeExprNest(w, C.NFTA_LIST_ELEM, e);
  const bytes = encodedFrozen.get(e);
  if (bytes) {
    w.raw(bytes);
    return;
  }
  const at = w.length;
  encodeExprNest(w, C.NFTA_LIST_ELEM, e);
  encodedFrozen.set(e, w.since(at));
}

/** Writes one expression (NFTA_EXPR_NAME, NFTA_EXPR_DATA) as the nest `attrType`, e.g. a set's
 * NFTA_SET_EXPR. */
export function encodeExprNest(w: AttrWriter, attrType: number, e: Expr): void {
  const elem = w.beginNest(attrType);
  if (e.type === 'opaque') {
    w.str(C.NFTA_EXPR_NAME, e.name);
    // A nest header around the raw bytes, so they go back exactly as they came.
    w.bytes(C.NFTA_EXPR_DATA | NLA_F_NESTED, e.data);
  } else {
    w.str(C.NFTA_EXPR_NAME, e.type);
    const data = w.beginNest(C.NFTA_EXPR_DATA);
    codecOf(e.type).encode(w, e as ExprOf<typeof e.type>);
    w.endNest(data);
  }
  w.endNest(elem);
}

/** Writes `exprs` as the nested list attribute `attrType` (e.g. NFTA_RULE_EXPRESSIONS). */
export function encodeExprList(w: AttrWriter, attrType: number, exprs: Expr[]): void {
  const list = w.beginNest(attrType);
  for (let i = 0; i < exprs.length; i++) encodeExpr(w, exprs[i]);
  w.endNest(list);
}

function decodeKnown<K extends ExprKind>(kind: K, data: Attr | undefined): ExprOf<K> | undefined {
  const map = data ? data.attrs(kind) : new AttrMap([], kind);
  const codec = codecOf(kind);
  const seen: number[] = [];
  for (const a of map.list) {
    // An attribute this codec does not know, or one repeated, cannot be re-encoded faithfully.
    if (!codec.attrs.includes(a.type) || seen.includes(a.type)) return undefined;
    seen.push(a.type);
  }
  try {
    return codec.decode(new ExprReader(map, kind, ATTR_PREFIX[kind]));
  } catch (err) {
    if (err instanceof UnrepresentableError) return undefined;
    throw err;
  }
}

/** Decodes the payload of one NFTA_LIST_ELEM. Throws DecodeError on malformed bytes. */
export function decodeExpr(listElemPayload: Buffer): Expr {
  return decodeExprAttr(new Attr(C.NFTA_LIST_ELEM, true, listElemPayload, 0, listElemPayload.length));
}

function decodeExprAttr(listElem: Attr): Expr {
  const elem = listElem.attrs('expression');
  const name = elem.str(C.NFTA_EXPR_NAME);
  if (!name) throw new DecodeError('expression: missing NFTA_EXPR_NAME');
  const data = elem.get(C.NFTA_EXPR_DATA);
  if (isKind(name)) {
    const known = decodeKnown(name, data);
    if (known) return known;
  } else if (data) {
    // Even unknown expressions must be a well-formed attribute stream.
    parseAttrs(data.buf, data.start, data.end);
  }
  // A copy, so the expression does not pin or alias the whole receive buffer.
  const opaque: OpaqueExpr = { type: 'opaque', name, data: Buffer.from(data ? data.data : Buffer.alloc(0)) };
  return opaque;
}

/** Decodes the payload of a nested expression list (e.g. NFTA_RULE_EXPRESSIONS). */
export function decodeExprList(nestPayload: Buffer): Expr[] {
  return decodeExprListAttr(new Attr(C.NFTA_RULE_EXPRESSIONS, true, nestPayload, 0, nestPayload.length));
}

/** decodeExprList over an attribute read in place. */
export function decodeExprListAttr(list: Attr): Expr[] {
  return parseAttrs(list.buf, list.start, list.end).map((a, i) => {
    if (a.type !== C.NFTA_LIST_ELEM) throw new DecodeError(`expression list: member ${i} has type ${a.type}, expected NFTA_LIST_ELEM`);
    return decodeExprAttr(a);
  });
}

/** libnftnl's debug notation, as `nft --debug=netlink` prints it: `[ cmp eq reg 1 0x0100a8c0 ]`. */
export function describeExpr(e: Expr): string {
  if (e.type === 'opaque') return `[ ${e.name} opaque ${e.data.toString('hex') || '-'} ]`;
  return `[ ${e.type} ${codecOf(e.type).describe(e as ExprOf<typeof e.type>)}]`;
}
