/** nft_data as expressions carry it: a nest holding NFTA_DATA_VALUE (raw bytes, at most
 * NFT_DATA_VALUE_MAXLEN) or NFTA_DATA_VERDICT {NFTA_VERDICT_CODE be32, NFTA_VERDICT_CHAIN}. */
import { AttrMap, AttrWriter } from '../../netlink/attr';
import { DecodeError } from '../../netlink/errors';
import * as C from '../constants';
import { Verdict } from '../types';
import { EnumMap, UnrepresentableError } from './codec';

type VerdictKind = Verdict['kind'];

// Kernel codes are signed (NFT_JUMP = -3); on the wire they are their be32 two's complement.
const VERDICT_CODES = new EnumMap<VerdictKind>('verdict code', {
  drop: C.NF_DROP,
  accept: C.NF_ACCEPT,
  stolen: C.NF_STOLEN,
  queue: C.NF_QUEUE,
  repeat: C.NF_REPEAT,
  continue: C.NFT_CONTINUE,
  break: C.NFT_BREAK,
  jump: C.NFT_JUMP,
  goto: C.NFT_GOTO,
  return: C.NFT_RETURN,
});

function checkValue(value: Buffer, field: string): Buffer {
  if (!Buffer.isBuffer(value)) throw new TypeError(`${field}: not a Buffer`);
  if (value.length === 0 || value.length > C.NFT_DATA_VALUE_MAXLEN) {
    throw new RangeError(`${field}: ${value.length} bytes, the kernel takes 1..${C.NFT_DATA_VALUE_MAXLEN}`);
  }
  return value;
}

// Values and verdicts are in most expressions and every set element: nests are opened and closed
// directly rather than through closures.

export function encodeValue(w: AttrWriter, type: number, value: Buffer, field: string): void {
  w.nestedBytes(type, C.NFTA_DATA_VALUE, checkValue(value, field));
}

export function encodeVerdict(w: AttrWriter, type: number, v: Verdict, field: string): void {
  const code = VERDICT_CODES.number(v.kind);
  const nest = w.beginNest(type);
  const verdict = w.beginNest(C.NFTA_DATA_VERDICT);
  w.be32(C.NFTA_VERDICT_CODE, code);
  if (v.kind === 'jump' || v.kind === 'goto') {
    if (typeof v.chain !== 'string' || v.chain === '') throw new TypeError(`${field}: ${v.kind} needs a chain name`);
    w.str(C.NFTA_VERDICT_CHAIN, v.chain);
  }
  w.endNest(verdict);
  w.endNest(nest);
}

export type DataOrVerdict = { value: Buffer } | { verdict: Verdict };

const DATA_ATTRS = [C.NFTA_DATA_VALUE, C.NFTA_DATA_VERDICT];
const VERDICT_ATTRS = [C.NFTA_VERDICT_CODE, C.NFTA_VERDICT_CHAIN];

function onlyKnown(m: AttrMap, known: number[], what: string): void {
  for (const a of m.list) {
    if (!known.includes(a.type)) throw new UnrepresentableError(`${what}: unknown attribute ${a.type}`);
  }
}

/** The members of an nft_data nest. */
export function decodeData(nest: AttrMap, what: string): DataOrVerdict {
  onlyKnown(nest, DATA_ATTRS, what);
  const value = nest.get(C.NFTA_DATA_VALUE);
  const verdict = nest.get(C.NFTA_DATA_VERDICT);
  if (value && verdict) throw new UnrepresentableError(`${what}: both NFTA_DATA_VALUE and NFTA_DATA_VERDICT`);
  if (value) {
    if (value.length === 0 || value.length > C.NFT_DATA_VALUE_MAXLEN) {
      throw new DecodeError(`${what}: NFTA_DATA_VALUE has ${value.length} bytes, expected 1..${C.NFT_DATA_VALUE_MAXLEN}`);
    }
    // A copy, so the value does not pin the whole receive buffer.
    const copy = Buffer.allocUnsafe(value.length);
    value.buf.copy(copy, 0, value.start, value.end);
    return { value: copy };
  }
  if (verdict) return { verdict: decodeVerdict(nest.nested(C.NFTA_DATA_VERDICT)!, what) };
  throw new DecodeError(`${what}: neither NFTA_DATA_VALUE nor NFTA_DATA_VERDICT`);
}

export function decodeValue(nest: AttrMap, what: string): Buffer {
  const d = decodeData(nest, what);
  if (!('value' in d)) throw new DecodeError(`${what}: a verdict where a value belongs`);
  return d.value;
}

/** The members of NFTA_DATA_VERDICT. */
export function decodeVerdict(v: AttrMap, what: string): Verdict {
  onlyKnown(v, VERDICT_ATTRS, `${what} verdict`);
  const codeAttr = v.get(C.NFTA_VERDICT_CODE);
  if (!codeAttr) throw new DecodeError(`${what}: missing NFTA_VERDICT_CODE`);
  if (codeAttr.length !== 4) throw new DecodeError(`${what}: NFTA_VERDICT_CODE has ${codeAttr.length} bytes, expected 4`);
  const kind = VERDICT_CODES.name(codeAttr.buf.readInt32BE(codeAttr.start));
  const chain = v.str(C.NFTA_VERDICT_CHAIN);
  if (kind === 'jump' || kind === 'goto') {
    if (chain === undefined || chain === '') throw new DecodeError(`${what}: ${kind} without NFTA_VERDICT_CHAIN`);
    return { kind, chain };
  }
  if (chain !== undefined) throw new UnrepresentableError(`${what}: ${kind} with a chain`);
  return { kind };
}

/** libnftnl's rendering of a verdict: "accept ", "jump -> c ". */
export function describeVerdict(v: Verdict): string {
  return v.kind === 'jump' || v.kind === 'goto' ? `${v.kind} -> ${v.chain} ` : `${v.kind} `;
}
