/** cmp: compare a register with constant data (nft_cmp.c). */
import * as C from '../constants';
import { CmpOp } from '../types';
import { dataWords, EnumMap, ExprCodec, u32 } from './codec';
import { decodeValue, encodeValue } from './data';

const CMP_OPS = new EnumMap<CmpOp>('cmp.op', {
  eq: C.NFT_CMP_EQ,
  neq: C.NFT_CMP_NEQ,
  lt: C.NFT_CMP_LT,
  lte: C.NFT_CMP_LTE,
  gt: C.NFT_CMP_GT,
  gte: C.NFT_CMP_GTE,
});

export const cmp: ExprCodec<'cmp'> = {
  attrs: [C.NFTA_CMP_SREG, C.NFTA_CMP_OP, C.NFTA_CMP_DATA],

  encode(w, e) {
    w.be32(C.NFTA_CMP_SREG, u32(e.sreg, 'cmp.sreg')).be32(C.NFTA_CMP_OP, CMP_OPS.number(e.op));
    encodeValue(w, C.NFTA_CMP_DATA, e.data, 'cmp.data');
  },

  decode(r) {
    return {
      type: 'cmp',
      sreg: r.required(r.be32(C.NFTA_CMP_SREG), C.NFTA_CMP_SREG),
      op: CMP_OPS.name(r.required(r.be32(C.NFTA_CMP_OP), C.NFTA_CMP_OP)),
      data: decodeValue(r.required(r.nested(C.NFTA_CMP_DATA), C.NFTA_CMP_DATA), 'cmp NFTA_CMP_DATA'),
    };
  },

  describe(e) {
    return `${e.op} reg ${e.sreg} ${dataWords(e.data)}`;
  },
};
