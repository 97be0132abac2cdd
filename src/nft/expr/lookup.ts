/** lookup: match a register against a set, or map it through one into dreg (nft_lookup.c). */
import * as C from '../constants';
import { compact, ExprCodec, text, u32, UnrepresentableError } from './codec';

export const lookup: ExprCodec<'lookup'> = {
  attrs: [C.NFTA_LOOKUP_SET, C.NFTA_LOOKUP_SREG, C.NFTA_LOOKUP_DREG, C.NFTA_LOOKUP_SET_ID, C.NFTA_LOOKUP_FLAGS],

  // invert: undefined sends no NFTA_LOOKUP_FLAGS (as nft does); false sends 0 (as the kernel dumps it).
  encode(w, e) {
    w.be32(C.NFTA_LOOKUP_SREG, u32(e.sreg, 'lookup.sreg'));
    if (e.dreg !== undefined) w.be32(C.NFTA_LOOKUP_DREG, u32(e.dreg, 'lookup.dreg'));
    w.str(C.NFTA_LOOKUP_SET, text(e.set, 'lookup.set'));
    if (e.setId !== undefined) w.be32(C.NFTA_LOOKUP_SET_ID, u32(e.setId, 'lookup.setId'));
    if (e.invert !== undefined) w.be32(C.NFTA_LOOKUP_FLAGS, e.invert ? C.NFT_LOOKUP_F_INV : 0);
  },

  decode(r) {
    const flags = r.be32(C.NFTA_LOOKUP_FLAGS);
    if (flags !== undefined && (flags & ~C.NFT_LOOKUP_F_INV) !== 0) throw new UnrepresentableError(`lookup: unknown flags 0x${flags.toString(16)}`);
    return compact({
      type: 'lookup',
      set: r.required(r.str(C.NFTA_LOOKUP_SET), C.NFTA_LOOKUP_SET),
      setId: r.be32(C.NFTA_LOOKUP_SET_ID),
      sreg: r.required(r.be32(C.NFTA_LOOKUP_SREG), C.NFTA_LOOKUP_SREG),
      dreg: r.be32(C.NFTA_LOOKUP_DREG),
      invert: flags === undefined ? undefined : flags === C.NFT_LOOKUP_F_INV,
    });
  },

  describe(e) {
    let s = `reg ${e.sreg} set ${e.set} `;
    if (e.dreg !== undefined) s += `dreg ${e.dreg} `;
    if (e.invert !== undefined) s += `0x${e.invert ? C.NFT_LOOKUP_F_INV : 0} `;
    return s;
  },
};
