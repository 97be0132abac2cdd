/** The shape every object codec has (one per kind of nf_tables object a transaction changes),
 * and what they share: message kinds, family numbers, nft's comment user data. */
import { AttrWriter } from '../../netlink/attr';
import { DecodeError } from '../../netlink/errors';
import { NFNL_SUBSYS_NFTABLES, nfMsgType, NLM_F_CREATE, NLM_F_EXCL } from '../../netlink/message';
import { Family, NFPROTO, NftObjectKind, OperationOf, VerbOf } from '../types';

/** The netlink message an operation becomes: its type, its flags besides NLM_F_REQUEST, and
 * whether the kernel is to echo it (new rules, for their handles). */
export interface MessageKind {
  type: number;
  flags: number;
  echo?: boolean;
}

/** The batch an operation is encoded into. Its first message is begun before encode is called
 * and ended after; an operation that needs more (a long element list) calls next() to end the
 * current one and begin another with the same header (type, flags, family; the next sequence
 * number). */
export interface BatchWriter {
  next(): void;
}

/** An object an operation needs to exist, for naming the missing one after a refusal. */
export interface Reference {
  kind: 'table' | 'chain' | 'set';
  family: Family;
  table: string;
  name: string;
  /** How the failing operation uses it. */
  role: string;
}

export interface ObjectCodec<K extends NftObjectKind> {
  /** The netlink message each verb becomes. */
  readonly verbs: Record<VerbOf<K>, MessageKind>;
  family(op: OperationOf<K>): Family;
  /** True when the operation sends no message at all (an empty element list); absent: never. */
  empty?(op: OperationOf<K>): boolean;
  /** A generous guess at the bytes the operation takes in a batch, when more than one object's
   * message (OBJECT_BYTES). */
  sizeHint?(op: OperationOf<K>): number;
  /** Writes the attributes of the operation's message(s) into w; throws, naming the field, for
   * what cannot be encoded. */
  encode(w: AttrWriter, op: OperationOf<K>, batch: BatchWriter): void;
  /** The object the operation changes, e.g. `rule inet nfkube pol_x_in handle 4`. */
  describe(op: OperationOf<K>): string;
  /** The operation as an nft command. */
  format(op: OperationOf<K>): string;
  /** The objects the operation needs to exist before it. */
  references(op: OperationOf<K>): Reference[];
}

/** A generous guess at one object's message: a rule is about 500 bytes. */
export const OBJECT_BYTES = 512;

export const msg = (m: number) => nfMsgType(NFNL_SUBSYS_NFTABLES, m);

/** The verbs every kind of object has: add (created when missing), create (refused when it
 * exists), delete (refused when missing), destroy (not). */
export function objectVerbs(newType: number, delType: number, destroyType: number): Record<'add' | 'create' | 'delete' | 'destroy', MessageKind> {
  return {
    add: { type: msg(newType), flags: NLM_F_CREATE },
    create: { type: msg(newType), flags: NLM_F_CREATE | NLM_F_EXCL },
    delete: { type: msg(delType), flags: 0 },
    destroy: { type: msg(destroyType), flags: 0 },
  };
}

/** objectVerbs plus flush, which deletes what the object holds: a message of `flushType`
 * (NFT_MSG_DELRULE for a table's or chain's rules, NFT_MSG_DELSETELEM for a set's elements). */
export function flushableVerbs(newType: number, delType: number, destroyType: number, flushType: number): Record<'add' | 'create' | 'delete' | 'destroy' | 'flush', MessageKind> {
  return { ...objectVerbs(newType, delType, destroyType), flush: { type: msg(flushType), flags: 0 } };
}

export const isCreation = (verb: string) => verb === 'add' || verb === 'create';
export const isRemoval = (verb: string) => verb === 'delete' || verb === 'destroy';

/** The reference to an object's table. */
export const tableReference = (family: Family, table: string): Reference => ({ kind: 'table', family, table, name: table, role: 'its table' });

const FAMILY_BY_NUMBER = new Map(Object.entries(NFPROTO).map(([k, v]) => [v, k as Family]));

export function familyFromNumber(n: number): Family {
  const f = FAMILY_BY_NUMBER.get(n);
  if (!f) throw new DecodeError(`unknown nfproto family ${n}`);
  return f;
}

// nft's userdata TLVs (libnftnl udata.h NFTNL_UDATA_RULE_COMMENT, NFTNL_UDATA_TABLE_COMMENT):
// type u8, len u8, value.
export const UDATA_RULE_COMMENT = 0;
export const UDATA_TABLE_COMMENT = 0;
/** nfkube's own table TLV, far above libnftnl's (NFTNL_UDATA_TABLE_MAX is 1): the options that
 * shaped the table, split over as many TLVs as its length needs, in order. */
export const UDATA_TABLE_NFKUBE_OPTIONS = 0xa0;
/** A TLV's value is at most 255 bytes. */
const UDATA_VALUE_MAX = 255;

/** `text` as consecutive TLVs of `type`. */
export function textUdata(type: number, text: string): Buffer {
  const bytes = Buffer.from(text);
  const parts: Buffer[] = [];
  for (let at = 0; at < bytes.length; at += UDATA_VALUE_MAX) {
    const chunk = bytes.subarray(at, at + UDATA_VALUE_MAX);
    parts.push(Buffer.from([type, chunk.length]), chunk);
  }
  return Buffer.concat(parts);
}

/** The values of every TLV of `type`, joined; undefined when there is none or the TLVs are cut. */
export function decodeTextUdata(udata: Buffer, type: number): string | undefined {
  const parts: Buffer[] = [];
  for (let pos = 0; pos + 2 <= udata.length; ) {
    const len = udata[pos + 1];
    if (pos + 2 + len > udata.length) return undefined;
    if (udata[pos] === type) parts.push(udata.subarray(pos + 2, pos + 2 + len));
    pos += 2 + len;
  }
  return parts.length ? Buffer.concat(parts).toString('utf8') : undefined;
}

/** One comment TLV: the text and its NUL, at most 255 bytes. */
export function commentUdata(type: number, comment: string, what: string): Buffer {
  const text = Buffer.from(`${comment}\0`);
  if (text.length > 255) throw new Error(`${what} longer than 254 bytes: "${comment.slice(0, 40)}..."`);
  return Buffer.concat([Buffer.from([type, text.length]), text]);
}

export function decodeComment(udata: Buffer, commentType: number): string | undefined {
  for (let pos = 0; pos + 2 <= udata.length; ) {
    const type = udata[pos];
    const len = udata[pos + 1];
    if (pos + 2 + len > udata.length) return undefined;
    if (type === commentType) {
      const v = udata.subarray(pos + 2, pos + 2 + len);
      const nul = v.indexOf(0);
      return v.toString('utf8', 0, nul < 0 ? v.length : nul);
    }
    pos += 2 + len;
  }
  return undefined;
}
