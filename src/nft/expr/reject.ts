/** reject: answer with an ICMP error or a TCP reset, then drop (nft_reject.c). */
import * as C from '../constants';
import { ExprCodec, u32, u8 } from './codec';

export const reject: ExprCodec<'reject'> = {
  attrs: [C.NFTA_REJECT_TYPE, C.NFTA_REJECT_ICMP_CODE],

  encode(w, e) {
    w.be32(C.NFTA_REJECT_TYPE, u32(e.rejectType, 'reject.rejectType')).u8(C.NFTA_REJECT_ICMP_CODE, u8(e.icmpCode, 'reject.icmpCode'));
  },

  // A TCP reset has no ICMP code: the kernel dumps none and ignores one sent (nft sends 0).
  decode(r) {
    const rejectType = r.required(r.be32(C.NFTA_REJECT_TYPE), C.NFTA_REJECT_TYPE);
    const code = r.u8(C.NFTA_REJECT_ICMP_CODE);
    return {
      type: 'reject',
      rejectType,
      icmpCode: rejectType === C.NFT_REJECT_TCP_RST ? (code ?? 0) : r.required(code, C.NFTA_REJECT_ICMP_CODE),
    };
  },

  describe(e) {
    return `type ${e.rejectType} code ${e.icmpCode} `;
  },
};
