/** set: a typed set or map that rules look up (NFTA_SET_*). */
import { AttrMap, AttrWriter, parseAttrs } from '../../netlink/attr';
import { DecodeError } from '../../netlink/errors';
import * as C from '../constants';
import { setFlagNames, setType } from '../format';
import { Expr, NFT_TYPE, NftSet, NftTypeName } from '../types';
import { dataLength, keyLength, TYPE_LEN, typeText } from '../values';
import { decodeSetUdata, encodeSetUdata } from './set-udata';
import { decodeExpr, decodeExprListAttr, encodeExprList, encodeExprNest } from '../expr';
import { definition, familyFromNumber, flushableVerbs, isCreation, ObjectCodec, tableReference } from './codec';

// nftables src/datatype.h: concatenated type ids are built 6 bits per field.
const TYPE_BITS = 6;
const TYPE_BY_ID = new Map<number, NftTypeName>(Object.entries(NFT_TYPE).map(([k, v]) => [v, k as NftTypeName]));

function keyTypeId(fields: NftTypeName[]): number {
  return fields.reduce((id, f) => (id * (1 << TYPE_BITS) + NFT_TYPE[f]) >>> 0, 0);
}

/** The fields of a key type id. `fieldCount` comes from NFTA_SET_DESC_CONCAT, which nft sends
 * only for interval concatenations: without it the id is read 6 bits at a time until nothing is
 * left (every type id is non-zero and below 64), and the fields must add up to the key length. */
function keyFieldsFromId(typeId: number, fieldCount: number | undefined, keyLen: number | undefined): NftTypeName[] {
  const fields: NftTypeName[] = [];
  let id = typeId;
  for (let i = 0; fieldCount === undefined ? id > 0 || i === 0 : i < fieldCount; i++) {
    const t = TYPE_BY_ID.get(id & ((1 << TYPE_BITS) - 1));
    if (!t) throw new DecodeError(`set key type ${typeId} has an unknown field type`);
    fields.unshift(t);
    id = Math.floor(id / (1 << TYPE_BITS));
  }
  if (fieldCount === undefined && keyLen !== undefined && fields.length > 1 && keyLength(fields) !== keyLen) {
    throw new DecodeError(`set key type ${typeId} (${fields.join(' . ')}) does not fit its key length ${keyLen}`);
  }
  return fields;
}

/** The stateful expressions of a set or an element: the kernel dumps one as `single` (a nest
 * holding NFTA_EXPR_NAME and NFTA_EXPR_DATA), several as the `list` of NFTA_LIST_ELEM. */
export function decodeStatefulExprs(a: AttrMap, single: number, list: number): Expr[] | undefined {
  const one = a.get(single);
  if (one) return [decodeExpr(one.data)];
  const many = a.get(list);
  return many ? decodeExprListAttr(many) : undefined;
}

export function setFlags(s: NftSet): number {
  let flags = s.flags ?? 0;
  if (s.data) flags |= C.NFT_SET_MAP;
  if (s.key.length > 1) flags |= C.NFT_SET_CONCAT;
  if ((s.exprs?.length ?? 0) > 1) flags |= C.NFT_SET_EXPR;
  return flags;
}

/** `id` (NFTA_SET_ID) defaults to the set's own. */
export function encodeSet(w: AttrWriter, s: NftSet, id = s.id): void {
  w.str(C.NFTA_SET_TABLE, s.table).str(C.NFTA_SET_NAME, s.name);
  w.be32(C.NFTA_SET_FLAGS, setFlags(s));
  w.be32(C.NFTA_SET_KEY_TYPE, keyTypeId(s.key));
  w.be32(C.NFTA_SET_KEY_LEN, keyLength(s.key));
  if (s.data === 'verdict') {
    w.be32(C.NFTA_SET_DATA_TYPE, C.NFT_DATA_VERDICT);
  } else if (s.data) {
    w.be32(C.NFTA_SET_DATA_TYPE, typeof s.data === 'string' ? NFT_TYPE[s.data] : keyTypeId(s.data));
    w.be32(C.NFTA_SET_DATA_LEN, dataLength(s.data));
  }
  if (s.timeout !== undefined) w.be64(C.NFTA_SET_TIMEOUT, s.timeout);
  // No NFTA_SET_DESC_SIZE: the kernel treats it as the set's maximum, and nfkube's sets grow.
  if (s.key.length > 1) {
    const desc = w.beginNest(C.NFTA_SET_DESC);
    const concat = w.beginNest(C.NFTA_SET_DESC_CONCAT);
    for (const f of s.key) {
      const field = w.beginNest(C.NFTA_LIST_ELEM);
      w.be32(C.NFTA_SET_FIELD_LEN, TYPE_LEN[f]);
      w.endNest(field);
    }
    w.endNest(concat);
    w.endNest(desc);
  }
  if (s.typeof) w.bytes(C.NFTA_SET_USERDATA, encodeSetUdata(s.typeof));
  // As nft sends them: one expression as NFTA_SET_EXPR; a list needs the NFT_SET_EXPR flag.
  if (s.exprs?.length === 1) encodeExprNest(w, C.NFTA_SET_EXPR, s.exprs[0]);
  else if (s.exprs?.length) encodeExprList(w, C.NFTA_SET_EXPRESSIONS, s.exprs);
  if (id !== undefined) w.be32(C.NFTA_SET_ID, id);
}

export function encodeSetRef(w: AttrWriter, s: { table: string; name: string }): void {
  w.str(C.NFTA_SET_TABLE, s.table).str(C.NFTA_SET_NAME, s.name);
}

export function decodeSet(family: number, payload: Buffer): NftSet {
  const a = AttrMap.parse(payload, 'set');
  let fieldCount: number | undefined;
  const desc = a.nested(C.NFTA_SET_DESC);
  const concat = desc?.get(C.NFTA_SET_DESC_CONCAT);
  if (concat) fieldCount = parseAttrs(concat.buf, concat.start, concat.end).length;
  const rawFlags = a.be32(C.NFTA_SET_FLAGS) ?? 0;
  const set: NftSet = {
    family: familyFromNumber(family),
    table: a.required(a.str(C.NFTA_SET_TABLE), 'NFTA_SET_TABLE'),
    name: a.required(a.str(C.NFTA_SET_NAME), 'NFTA_SET_NAME'),
    handle: a.be64(C.NFTA_SET_HANDLE),
    key: keyFieldsFromId(a.required(a.be32(C.NFTA_SET_KEY_TYPE), 'NFTA_SET_KEY_TYPE'), fieldCount, a.be32(C.NFTA_SET_KEY_LEN)),
    flags: rawFlags & ~(C.NFT_SET_MAP | C.NFT_SET_CONCAT | C.NFT_SET_EXPR),
  };
  // The kernel stores a key length and a type id it never interprets: a length that does not fit
  // the types would make every key read as something it is not.
  const keyLen = a.be32(C.NFTA_SET_KEY_LEN);
  if (keyLen !== undefined && keyLength(set.key) !== keyLen) {
    throw new DecodeError(`set ${set.name}: key length ${keyLen} does not fit its key type ${set.key.join(' . ')} (${keyLength(set.key)} bytes)`);
  }
  const dataType = a.be32(C.NFTA_SET_DATA_TYPE);
  if (dataType !== undefined) {
    const dataLen = a.be32(C.NFTA_SET_DATA_LEN);
    // A concatenation's type id is its fields' ids, 6 bits each (nft's concat_type_alloc).
    const data = dataType === C.NFT_DATA_VERDICT ? 'verdict' : (TYPE_BY_ID.get(dataType) ?? (dataType >> TYPE_BITS > 0 ? keyFieldsFromId(dataType, undefined, dataLen) : undefined));
    if (!data) throw new DecodeError(`set ${set.name}: unknown data type ${dataType}`);
    if (data !== 'verdict' && dataLen !== undefined && dataLen !== dataLength(data)) {
      throw new DecodeError(`set ${set.name}: data length ${dataLen} does not fit its data type ${typeText(data)} (${dataLength(data)} bytes)`);
    }
    set.data = data;
  }
  const timeout = a.be64(C.NFTA_SET_TIMEOUT);
  if (timeout !== undefined) set.timeout = timeout;
  const udata = a.get(C.NFTA_SET_USERDATA);
  const typeofText = udata && decodeSetUdata(udata.buf.subarray(udata.start, udata.end));
  if (typeofText) set.typeof = typeofText;
  const exprs = decodeStatefulExprs(a, C.NFTA_SET_EXPR, C.NFTA_SET_EXPRESSIONS);
  if (exprs) set.exprs = exprs;
  return set;
}

// The kernel requires NFTA_SET_ID on every new set. Never reset, so an id cannot be mistaken for
// one of an earlier transaction.
let lastSetId = 0;
const nextSetId = () => (lastSetId = (lastSetId + 1) % 0x7fffffff || 1);

export const set: ObjectCodec<'set'> = {
  // Flushing a set deletes its elements.
  verbs: flushableVerbs(C.NFT_MSG_NEWSET, C.NFT_MSG_DELSET, C.NFT_MSG_DESTROYSET, C.NFT_MSG_DELSETELEM),

  family: (op) => op.set.family,

  encode(w, op) {
    const s = op.set;
    if (isCreation(op.verb)) encodeSet(w, s, s.id ?? nextSetId());
    else if (op.verb === 'flush') w.str(C.NFTA_SET_ELEM_LIST_TABLE, s.table).str(C.NFTA_SET_ELEM_LIST_SET, s.name);
    else encodeSetRef(w, s);
  },

  describe: (op) => `set ${op.set.family} ${op.set.table} ${op.set.name}`,

  format(op) {
    const s = op.set;
    const ref = `${s.family} ${s.table} ${s.name}`;
    if (isCreation(op.verb)) {
      const flags = setFlagNames(s);
      return `${op.verb} ${s.data ? 'map' : 'set'} ${ref} { ${setType(s)};${flags.length ? ` flags ${flags.join(',')};` : ''} }`;
    }
    return `${op.verb} ${s.data ? 'map' : 'set'} ${ref}`;
  },

  references(op) {
    const s = op.set;
    const self = isCreation(op.verb) ? [] : [{ kind: 'set' as const, family: s.family, table: s.table, name: s.name, role: 'the set' }];
    return [tableReference(s.family, s.table), ...self];
  },

  defines(op) {
    const d = definition(op.verb, { kind: 'set', family: op.set.family, table: op.set.table, name: op.set.name });
    return d?.exists ? { ...d, set: op.set } : d;
  },
};
