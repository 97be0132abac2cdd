/** numgen: an incrementing or random number modulo n, plus offset, into a register (nft_numgen.c). */
import * as C from '../constants';
import { NumgenExpr } from '../types';
import { compact, EnumMap, ExprCodec, u32 } from './codec';

const NG_TYPES = new EnumMap<NumgenExpr['ngType']>('numgen.ngType', { inc: C.NFT_NG_INCREMENTAL, random: C.NFT_NG_RANDOM });

export const numgen: ExprCodec<'numgen'> = {
  attrs: [C.NFTA_NG_DREG, C.NFTA_NG_MODULUS, C.NFTA_NG_TYPE, C.NFTA_NG_OFFSET],

  encode(w, e) {
    w.be32(C.NFTA_NG_DREG, u32(e.dreg, 'numgen.dreg')).be32(C.NFTA_NG_MODULUS, u32(e.modulus, 'numgen.modulus')).be32(C.NFTA_NG_TYPE, NG_TYPES.number(e.ngType));
    if (e.offset !== undefined) w.be32(C.NFTA_NG_OFFSET, u32(e.offset, 'numgen.offset'));
  },

  decode(r) {
    return compact({
      type: 'numgen',
      dreg: r.required(r.be32(C.NFTA_NG_DREG), C.NFTA_NG_DREG),
      modulus: r.required(r.be32(C.NFTA_NG_MODULUS), C.NFTA_NG_MODULUS),
      ngType: NG_TYPES.name(r.required(r.be32(C.NFTA_NG_TYPE), C.NFTA_NG_TYPE)),
      offset: r.be32(C.NFTA_NG_OFFSET),
    });
  },

  describe(e) {
    return `reg ${e.dreg} = ${e.ngType} mod ${e.modulus} ` + (e.offset ? `offset ${e.offset} ` : '');
  },
};
