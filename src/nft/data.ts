/** nft_data (NFTA_DATA_*): the value-or-verdict payload of cmp/immediate/range and set elements. */
import { AttrMap, AttrWriter } from '../netlink/attr';
import { DecodeError } from '../netlink/errors';
import * as C from './constants';
import { Verdict } from './types';

const VERDICT_CODES: Record<string, number> = {
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
};
const VERDICT_NAMES = new Map(Object.entries(VERDICT_CODES).map(([k, v]) => [v >>> 0, k]));

/** Writes attribute `type` as a nest holding NFTA_DATA_VALUE. */
export function encodeDataValue(w: AttrWriter, type: number, value: Buffer): void {
  w.nest(type, (n) => n.bytes(C.NFTA_DATA_VALUE, value));
}

/** Writes attribute `type` as a nest holding NFTA_DATA_VERDICT. */
export function encodeDataVerdict(w: AttrWriter, type: number, v: Verdict): void {
  w.nest(type, (n) =>
    n.nest(C.NFTA_DATA_VERDICT, (vw) => {
      vw.be32(C.NFTA_VERDICT_CODE, VERDICT_CODES[v.kind]);
      if (v.kind === 'jump' || v.kind === 'goto') vw.str(C.NFTA_VERDICT_CHAIN, v.chain);
    }),
  );
}

export type DataValue = { value: Buffer } | { verdict: Verdict };

/** Reads an nft_data nest (the payload of e.g. NFTA_CMP_DATA). */
export function decodeData(nest: AttrMap, what: string): DataValue {
  const value = nest.bytes(C.NFTA_DATA_VALUE);
  if (value) return { value: Buffer.from(value) };
  const v = nest.nested(C.NFTA_DATA_VERDICT);
  if (!v) throw new DecodeError(`${what}: neither NFTA_DATA_VALUE nor NFTA_DATA_VERDICT`);
  return { verdict: decodeVerdict(v, what) };
}

export function decodeVerdict(v: AttrMap, what: string): Verdict {
  const code = v.required(v.be32(C.NFTA_VERDICT_CODE), 'NFTA_VERDICT_CODE');
  const kind = VERDICT_NAMES.get(code);
  if (!kind) throw new DecodeError(`${what}: unknown verdict code ${code}`);
  if (kind === 'jump' || kind === 'goto') {
    return { kind, chain: v.required(v.str(C.NFTA_VERDICT_CHAIN), 'NFTA_VERDICT_CHAIN') };
  }
  return { kind } as Verdict;
}
