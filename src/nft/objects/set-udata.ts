/** NFTA_SET_USERDATA: the set's `typeof` as nft(8) stores it, so `nft list` prints
 * `typeof numgen random mod 65536 : ip daddr` (a listing `nft -f` loads back) rather than
 * `type 0 : ipv4_addr`. The kernel never reads these bytes; nft and libnftnl do.
 *
 * Format (libnftnl include/udata.h, nftables src/rule.c set_make_key / mnl.c): TLVs of u8 type,
 * u8 length, value; numbers are u32 in host byte order. KEY_TYPEOF and DATA_TYPEOF nest a TLV list
 * of TYPEOF_EXPR (nft's expression id, enum expr_types in include/expression.h) and TYPEOF_DATA
 * (that expression's own udata: numgen_expr_build_udata, payload_expr_build_udata). */
import { hostU32, readHostU32 } from '../values';

/** libnftnl enum nftnl_udata_set_types. */
export const NFTNL_UDATA_SET_KEYBYTEORDER = 0;
export const NFTNL_UDATA_SET_DATABYTEORDER = 1;
export const NFTNL_UDATA_SET_MERGE_ELEMENTS = 2;
export const NFTNL_UDATA_SET_KEY_TYPEOF = 3;
export const NFTNL_UDATA_SET_DATA_TYPEOF = 4;
export const NFTNL_UDATA_SET_EXPR = 5;
export const NFTNL_UDATA_SET_DATA_INTERVAL = 6;
export const NFTNL_UDATA_SET_COMMENT = 7;

/** libnftnl enum nftnl_udata_set_typeof_types. */
export const NFTNL_UDATA_SET_TYPEOF_EXPR = 0;
export const NFTNL_UDATA_SET_TYPEOF_DATA = 1;

/** nftables enum expr_types (include/expression.h), the ids nfkube's typeof expressions use. */
export const EXPR_VERDICT = 1;
export const EXPR_PAYLOAD = 7;
export const EXPR_CONCAT = 13;
export const EXPR_NUMGEN = 23;

/** nftables enum byteorder (include/datatype.h). */
export const BYTEORDER_INVALID = 0;
export const BYTEORDER_HOST_ENDIAN = 1;
export const BYTEORDER_BIG_ENDIAN = 2;

/** nftables numgen_expr_build_udata: NFTNL_UDATA_NUMGEN_{TYPE,MODULUS,OFFSET}. */
const NFTNL_UDATA_NUMGEN_TYPE = 0;
const NFTNL_UDATA_NUMGEN_MODULUS = 1;
const NFTNL_UDATA_NUMGEN_OFFSET = 2;
const NFT_NG_TYPES = ['incremental', 'random'] as const;

/** nftables payload_expr_build_udata: NFTNL_UDATA_SET_KEY_PAYLOAD_{DESC,TYPE}: the protocol
 * description id (enum proto_desc_id) and the field's index in it. */
const NFTNL_UDATA_SET_KEY_PAYLOAD_DESC = 0;
const NFTNL_UDATA_SET_KEY_PAYLOAD_TYPE = 1;
const PROTO_DESC_TH = 11;
const PROTO_DESC_IP = 12;
const PROTO_DESC_IP6 = 13;

/** The payload fields nfkube's sets are typed by: nft text to (proto_desc_id, field index). */
const PAYLOAD_FIELDS: readonly (readonly [string, number, number])[] = [
  ['ip saddr', PROTO_DESC_IP, 11],
  ['ip daddr', PROTO_DESC_IP, 12],
  ['ip6 saddr', PROTO_DESC_IP6, 8],
  ['ip6 daddr', PROTO_DESC_IP6, 9],
  ['th sport', PROTO_DESC_TH, 1],
  ['th dport', PROTO_DESC_TH, 2],
];

/** A set's key (and, for a map, data) as nft expression text. */
export interface SetTypeof {
  key: string;
  data?: string;
}

const MAX_TLV = 255;

interface TypeofExpr {
  id: number;
  byteorder: number;
  /** The expression's own udata (TYPEOF_DATA). */
  own: Buffer;
}

const u32Tlvs = (fields: [number, number][]) => Buffer.concat(fields.map(([t, v]) => tlv(t, hostU32(v))));

/** nftables concat_expr_build_udata: per field i, a nest of type i holding the field's expression
 * id and its own udata (NFTNL_UDATA_SET_KEY_CONCAT_SUB_{TYPE,DATA}). */
const NFTNL_UDATA_SET_KEY_CONCAT_SUB_TYPE = 0;
const NFTNL_UDATA_SET_KEY_CONCAT_SUB_DATA = 1;

const NUMGEN_TEXT = /^numgen (incremental|random) mod (\d+)(?: offset (\d+))?$/;

function exprOf(text: string): TypeofExpr {
  // A verdict map's data: `typeof ... : verdict`.
  if (text === 'verdict') return { id: EXPR_VERDICT, byteorder: BYTEORDER_INVALID, own: Buffer.alloc(0) };
  const fields = text.split(' . ');
  if (fields.length > 1) {
    // nft gives a concatenation no byte order of its own (its fields have theirs).
    const own = fields.map((f, i) => {
      const sub = exprOf(f);
      return tlv(i, Buffer.concat([tlv(NFTNL_UDATA_SET_KEY_CONCAT_SUB_TYPE, hostU32(sub.id)), tlv(NFTNL_UDATA_SET_KEY_CONCAT_SUB_DATA, sub.own)]));
    });
    return { id: EXPR_CONCAT, byteorder: BYTEORDER_INVALID, own: Buffer.concat(own) };
  }
  const ng = NUMGEN_TEXT.exec(text);
  if (ng) {
    const mod = Number(ng[2]);
    const offset = ng[3] === undefined ? 0 : Number(ng[3]);
    if (mod < 1 || mod > 0xffffffff || offset > 0xffffffff) throw new RangeError(`typeof "${text}": modulus and offset must be 32-bit, modulus at least 1`);
    return {
      id: EXPR_NUMGEN,
      byteorder: BYTEORDER_HOST_ENDIAN,
      own: u32Tlvs([
        [NFTNL_UDATA_NUMGEN_TYPE, NFT_NG_TYPES.indexOf(ng[1] as (typeof NFT_NG_TYPES)[number])],
        [NFTNL_UDATA_NUMGEN_MODULUS, mod],
        [NFTNL_UDATA_NUMGEN_OFFSET, offset],
      ]),
    };
  }
  const field = PAYLOAD_FIELDS.find(([t]) => t === text);
  if (field) {
    return {
      id: EXPR_PAYLOAD,
      byteorder: BYTEORDER_BIG_ENDIAN,
      own: u32Tlvs([
        [NFTNL_UDATA_SET_KEY_PAYLOAD_DESC, field[1]],
        [NFTNL_UDATA_SET_KEY_PAYLOAD_TYPE, field[2]],
      ]),
    };
  }
  throw new RangeError(`typeof "${text}": nfkube encodes only ${['numgen random|incremental mod N [offset M]', ...PAYLOAD_FIELDS.map(([t]) => t), 'verdict (map data)'].join(', ')}, and concatenations (A . B) of them`);
}

function tlv(type: number, value: Buffer): Buffer {
  if (value.length > MAX_TLV) throw new RangeError(`udata attribute ${type} of ${value.length} bytes exceeds ${MAX_TLV}`);
  return Buffer.concat([Buffer.from([type, value.length]), value]);
}

function typeofTlv(type: number, e: TypeofExpr): Buffer {
  return tlv(type, Buffer.concat([tlv(NFTNL_UDATA_SET_TYPEOF_EXPR, hostU32(e.id)), tlv(NFTNL_UDATA_SET_TYPEOF_DATA, e.own)]));
}

/** The NFTA_SET_USERDATA nft writes for `typeof KEY [: DATA]`, in its order. Throws RangeError for
 * an expression outside the table above. */
export function encodeSetUdata(t: SetTypeof): Buffer {
  const key = exprOf(t.key);
  const data = t.data === undefined ? undefined : exprOf(t.data);
  const parts = [tlv(NFTNL_UDATA_SET_KEYBYTEORDER, hostU32(key.byteorder))];
  if (data) parts.push(tlv(NFTNL_UDATA_SET_DATABYTEORDER, hostU32(data.byteorder)));
  parts.push(typeofTlv(NFTNL_UDATA_SET_KEY_TYPEOF, key));
  if (data) {
    parts.push(typeofTlv(NFTNL_UDATA_SET_DATA_TYPEOF, data));
    // The data of nfkube's maps is a single value, never a range.
    parts.push(tlv(NFTNL_UDATA_SET_DATA_INTERVAL, hostU32(0)));
  }
  return Buffer.concat(parts);
}

/** TLVs of a udata buffer; undefined when one runs past the end (bytes nfkube cannot trust). */
function parseTlvs(b: Buffer): Map<number, Buffer> | undefined {
  const out = new Map<number, Buffer>();
  let pos = 0;
  while (pos < b.length) {
    if (pos + 2 > b.length) return undefined;
    const len = b[pos + 1];
    if (pos + 2 + len > b.length) return undefined;
    if (!out.has(b[pos])) out.set(b[pos], b.subarray(pos + 2, pos + 2 + len));
    pos += 2 + len;
  }
  return out;
}

function readU32(b: Buffer | undefined): number | undefined {
  if (!b || b.length !== 4) return undefined;
  return readHostU32(b);
}

function typeofText(b: Buffer | undefined): string | undefined {
  const outer = b && parseTlvs(b);
  return exprText(readU32(outer?.get(NFTNL_UDATA_SET_TYPEOF_EXPR)), outer?.get(NFTNL_UDATA_SET_TYPEOF_DATA));
}

/** An expression's text from its id and own udata; undefined when nfkube cannot name it. */
function exprText(id: number | undefined, own: Buffer | undefined, depth = 0): string | undefined {
  const fields = own && parseTlvs(own);
  if (id === undefined || !fields) return undefined;
  if (id === EXPR_VERDICT) return 'verdict';
  if (id === EXPR_CONCAT && depth === 0) {
    const parts: string[] = [];
    for (let i = 0; fields.has(i); i++) {
      const sub = parseTlvs(fields.get(i)!);
      const text = sub && exprText(readU32(sub.get(NFTNL_UDATA_SET_KEY_CONCAT_SUB_TYPE)), sub.get(NFTNL_UDATA_SET_KEY_CONCAT_SUB_DATA), depth + 1);
      if (text === undefined || text === 'verdict') return undefined;
      parts.push(text);
    }
    return parts.length > 1 && parts.length === fields.size ? parts.join(' . ') : undefined;
  }
  if (id === EXPR_NUMGEN) {
    const type = NFT_NG_TYPES[readU32(fields.get(NFTNL_UDATA_NUMGEN_TYPE)) ?? -1];
    const mod = readU32(fields.get(NFTNL_UDATA_NUMGEN_MODULUS));
    const offset = readU32(fields.get(NFTNL_UDATA_NUMGEN_OFFSET)) ?? 0;
    if (!type || !mod) return undefined;
    return `numgen ${type} mod ${mod}${offset ? ` offset ${offset}` : ''}`;
  }
  if (id === EXPR_PAYLOAD) {
    const desc = readU32(fields.get(NFTNL_UDATA_SET_KEY_PAYLOAD_DESC));
    const index = readU32(fields.get(NFTNL_UDATA_SET_KEY_PAYLOAD_TYPE));
    return PAYLOAD_FIELDS.find(([, d, i]) => d === desc && i === index)?.[0];
  }
  return undefined;
}

/** The typeof a set's userdata describes, or undefined when it has none nfkube can name (another
 * tool's expression, a plain `type` set, malformed bytes). Never throws. */
export function decodeSetUdata(b: Buffer): SetTypeof | undefined {
  const tlvs = parseTlvs(b);
  if (!tlvs) return undefined;
  const key = typeofText(tlvs.get(NFTNL_UDATA_SET_KEY_TYPEOF));
  if (key === undefined) return undefined;
  if (!tlvs.has(NFTNL_UDATA_SET_DATA_TYPEOF)) return { key };
  const data = typeofText(tlvs.get(NFTNL_UDATA_SET_DATA_TYPEOF));
  return data === undefined ? undefined : { key, data };
}

/** Whether two typeofs describe the same set type (absent equals absent). */
export function sameTypeof(a: SetTypeof | undefined, b: SetTypeof | undefined): boolean {
  return a?.key === b?.key && a?.data === b?.data;
}
