/** masq: source NAT to the outgoing interface's address (nft_masq.c). */
import * as C from '../constants';
import { compact, ExprCodec, u32 } from './codec';

export const masq: ExprCodec<'masq'> = {
  attrs: [C.NFTA_MASQ_FLAGS, C.NFTA_MASQ_REG_PROTO_MIN, C.NFTA_MASQ_REG_PROTO_MAX],

  encode(w, e) {
    if (e.flags !== undefined) w.be32(C.NFTA_MASQ_FLAGS, u32(e.flags, 'masq.flags'));
    if (e.regProtoMin !== undefined) w.be32(C.NFTA_MASQ_REG_PROTO_MIN, u32(e.regProtoMin, 'masq.regProtoMin'));
    if (e.regProtoMax !== undefined) w.be32(C.NFTA_MASQ_REG_PROTO_MAX, u32(e.regProtoMax, 'masq.regProtoMax'));
  },

  decode(r) {
    return compact({
      type: 'masq',
      flags: r.be32(C.NFTA_MASQ_FLAGS),
      regProtoMin: r.be32(C.NFTA_MASQ_REG_PROTO_MIN),
      regProtoMax: r.be32(C.NFTA_MASQ_REG_PROTO_MAX),
    });
  },

  describe(e) {
    let s = '';
    if (e.regProtoMin !== undefined) s += `proto_min reg ${e.regProtoMin} `;
    if (e.regProtoMax !== undefined) s += `proto_max reg ${e.regProtoMax} `;
    if (e.flags !== undefined) s += `flags 0x${e.flags.toString(16)} `;
    return s;
  },
};
