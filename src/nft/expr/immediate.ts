/** immediate: load constant data or a verdict into a register (nft_immediate.c). */
import * as C from '../constants';
import { compact, dataWords, ExprCodec, u32 } from './codec';
import { decodeData, describeVerdict, encodeValue, encodeVerdict } from './data';

export const immediate: ExprCodec<'immediate'> = {
  attrs: [C.NFTA_IMMEDIATE_DREG, C.NFTA_IMMEDIATE_DATA],

  encode(w, e) {
    w.be32(C.NFTA_IMMEDIATE_DREG, u32(e.dreg, 'immediate.dreg'));
    if ((e.data === undefined) === (e.verdict === undefined)) throw new TypeError('immediate: needs exactly one of data and verdict');
    if (e.data !== undefined) encodeValue(w, C.NFTA_IMMEDIATE_DATA, e.data, 'immediate.data');
    else encodeVerdict(w, C.NFTA_IMMEDIATE_DATA, e.verdict!, 'immediate.verdict');
  },

  decode(r) {
    const dreg = r.required(r.be32(C.NFTA_IMMEDIATE_DREG), C.NFTA_IMMEDIATE_DREG);
    const d = decodeData(r.required(r.nested(C.NFTA_IMMEDIATE_DATA), C.NFTA_IMMEDIATE_DATA), 'immediate NFTA_IMMEDIATE_DATA');
    return compact({ type: 'immediate', dreg, data: 'value' in d ? d.value : undefined, verdict: 'verdict' in d ? d.verdict : undefined });
  },

  describe(e) {
    return `reg ${e.dreg} ${e.verdict ? describeVerdict(e.verdict) : dataWords(e.data)}`;
  },
};
