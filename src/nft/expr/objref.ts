/** objref: use a stateful object (counter, quota, limit...) named directly or looked up in a map
 * keyed by a register (nft_objref.c). */
import * as C from '../constants';
import { compact, ExprCodec, ExprWriter } from './codec';

export const objref: ExprCodec<'objref'> = {
  attrs: [C.NFTA_OBJREF_IMM_TYPE, C.NFTA_OBJREF_IMM_NAME, C.NFTA_OBJREF_SET_SREG, C.NFTA_OBJREF_SET_NAME, C.NFTA_OBJREF_SET_ID],

  encode(w, e) {
    const o = new ExprWriter(w, 'objref');
    if (e.objType !== undefined) o.be32(C.NFTA_OBJREF_IMM_TYPE, e.objType, 'objType');
    if (e.name !== undefined) o.str(C.NFTA_OBJREF_IMM_NAME, e.name, 'name');
    if (e.setSreg !== undefined) o.be32(C.NFTA_OBJREF_SET_SREG, e.setSreg, 'setSreg');
    if (e.setName !== undefined) o.str(C.NFTA_OBJREF_SET_NAME, e.setName, 'setName');
    if (e.setId !== undefined) o.be32(C.NFTA_OBJREF_SET_ID, e.setId, 'setId');
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
