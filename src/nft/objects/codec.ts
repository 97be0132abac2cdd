/** The shape every object codec has (one per kind of nf_tables object a transaction changes),
 * and what they share: message kinds, family numbers, nft's comment user data. */
import { AttrWriter } from '../../netlink/attr';
import { DecodeError } from '../../netlink/errors';
import { NFNL_SUBSYS_NFTABLES, nfMsgType, NLM_F_CREATE, NLM_F_EXCL } from '../../netlink/message';
import { Family, NFPROTO, ObjectKind, OperationOf, VerbOf } from '../types';

/** The netlink message an operation becomes: its type, its flags besides NLM_F_REQUEST, and
 * whether the kernel is to echo it (new rules, for their handles). */
export interface MessageKind {
  type: number;
  flags: number;
  echo?: boolean;
}

/** Where an operation's codec writes: the batch's one buffer, and the framing of each message.
 * begin() writes the header for the operation's verb (type, flags, next sequence number,
 * family); most operations are one message, an element list may be several. */
export interface BatchWriter {
  readonly w: AttrWriter;
  begin(): void;
  end(): void;
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

export interface ObjectCodec<K extends ObjectKind> {
  /** The netlink message each verb becomes. */
  readonly verbs: Record<VerbOf<K>, MessageKind>;
  family(op: OperationOf<K>): Family;
  /** A generous guess at the bytes the operation takes in a batch. */
  sizeHint(op: OperationOf<K>): number;
  /** Writes the operation's message(s); throws, naming the field, for what cannot be encoded. */
  encode(out: BatchWriter, op: OperationOf<K>): void;
  /** The object the operation changes, e.g. `rule inet nfkube pod_x_in handle 4`. */
  describe(op: OperationOf<K>): string;
  /** The operation as an nft command. */
  format(op: OperationOf<K>): string;
  /** The objects the operation needs to exist before it. */
  references(op: OperationOf<K>): Reference[];
}

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
