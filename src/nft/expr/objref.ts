/** objref: use a stateful object (counter, quota, limit...) named directly or looked up in a map
 * keyed by a register (nft_objref.c). */
import * as C from '../constants';
import { compact, ExprCodec, text, u32 } from './codec';

export const objref: ExprCodec<'objref'> = {
  attrs: [C.NFTA_OBJREF_IMM_TYPE, C.NFTA_OBJREF_IMM_NAME, C.NFTA_OBJREF_SET_SREG, C.NFTA_OBJREF_SET_NAME, C.NFTA_OBJREF_SET_ID],

  encode(w, e) {
    // Names without a NUL, as libnftnl's mnl_attr_put_str.
    if (e.objType !== undefined) w.be32(C.NFTA_OBJREF_IMM_TYPE, u32(e.objType, 'objref.objType'));
    if (e.name !== undefined) w.bytes(C.NFTA_OBJREF_IMM_NAME, Buffer.from(text(e.name, 'objref.name'), 'utf8'));
    if (e.setSreg !== undefined) w.be32(C.NFTA_OBJREF_SET_SREG, u32(e.setSreg, 'objref.setSreg'));
    if (e.setName !== undefined) w.bytes(C.NFTA_OBJREF_SET_NAME, Buffer.from(text(e.setName, 'objref.setName'), 'utf8'));
    if (e.setId !== undefined) w.be32(C.NFTA_OBJREF_SET_ID, u32(e.setId, 'objref.setId'));
  },

  decode(r) {
    return compact({
      type: 'objref',
      objType: r.be32(C.NFTA_OBJREF_IMM_TYPE),
      name: r.str(C.NFTA_OBJREF_IMM_NAME),
      setSreg: r.be32(C.NFTA_OBJREF_SET_SREG),
      setName: r.str(C.NFTA_OBJREF_SET_NAME),
      setId: r.be32(C.NFTA_OBJREF_SET_ID),
    });
  },

  describe(e) {
    if (e.setSreg !== undefined) return `sreg ${e.setSreg} set ${e.setName ?? '(null)'} `;
    return `type ${e.objType ?? 0} name ${e.name ?? '(null)'} `;
  },
};
