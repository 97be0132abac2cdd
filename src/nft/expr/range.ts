/** range: match a register against an inclusive interval [from, to] (nft_range.c). */
import * as C from '../constants';
import { RangeExpr } from '../types';
import { dataWords, EnumMap, ExprCodec, u32 } from './codec';
import { decodeValue, encodeValue } from './data';

const RANGE_OPS = new EnumMap<RangeExpr['op']>('range.op', { eq: C.NFT_RANGE_EQ, neq: C.NFT_RANGE_NEQ });

export const range: ExprCodec<'range'> = {
  attrs: [C.NFTA_RANGE_SREG, C.NFTA_RANGE_OP, C.NFTA_RANGE_FROM_DATA, C.NFTA_RANGE_TO_DATA],

  encode(w, e) {
    w.be32(C.NFTA_RANGE_SREG, u32(e.sreg, 'range.sreg')).be32(C.NFTA_RANGE_OP, RANGE_OPS.number(e.op));
    encodeValue(w, C.NFTA_RANGE_FROM_DATA, e.from, 'range.from');
    encodeValue(w, C.NFTA_RANGE_TO_DATA, e.to, 'range.to');
  },

  decode(r) {
    return {
      type: 'range',
      sreg: r.required(r.be32(C.NFTA_RANGE_SREG), C.NFTA_RANGE_SREG),
      op: RANGE_OPS.name(r.required(r.be32(C.NFTA_RANGE_OP), C.NFTA_RANGE_OP)),
      from: decodeValue(r.required(r.nested(C.NFTA_RANGE_FROM_DATA), C.NFTA_RANGE_FROM_DATA), 'range NFTA_RANGE_FROM_DATA'),
      to: decodeValue(r.required(r.nested(C.NFTA_RANGE_TO_DATA), C.NFTA_RANGE_TO_DATA), 'range NFTA_RANGE_TO_DATA'),
    };
  },

  describe(e) {
    return `${e.op} reg ${e.sreg} ${dataWords(e.from)}${dataWords(e.to)}`;
  },
};
