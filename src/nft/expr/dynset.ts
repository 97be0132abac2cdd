/** dynset: add or update a set element from the packet path (nft_dynset.c), e.g. kube-proxy's
 * `update @affinity { ip saddr }` for ClientIP session affinity. */
import * as C from '../constants';
import { compact, EnumMap, ExprCodec, text, u32, u64, UnrepresentableError } from './codec';

const OPS = new EnumMap<'add' | 'update' | 'delete'>('dynset.op', { add: C.NFT_DYNSET_OP_ADD, update: C.NFT_DYNSET_OP_UPDATE, delete: C.NFT_DYNSET_OP_DELETE });

export const dynset: ExprCodec<'dynset'> = {
  // NFTA_DYNSET_PAD only aligns the 64-bit timeout on some architectures; it carries nothing.
  attrs: [C.NFTA_DYNSET_SET_NAME, C.NFTA_DYNSET_SET_ID, C.NFTA_DYNSET_OP, C.NFTA_DYNSET_SREG_KEY, C.NFTA_DYNSET_SREG_DATA, C.NFTA_DYNSET_TIMEOUT, C.NFTA_DYNSET_FLAGS, C.NFTA_DYNSET_PAD],

  // In libnftnl's order, so nft's own bytes re-encode exactly.
  encode(w, e) {
    w.be32(C.NFTA_DYNSET_SREG_KEY, u32(e.sregKey, 'dynset.sregKey'));
    if (e.sregData !== undefined) w.be32(C.NFTA_DYNSET_SREG_DATA, u32(e.sregData, 'dynset.sregData'));
    w.be32(C.NFTA_DYNSET_OP, OPS.number(e.op));
    if (e.timeoutMs !== undefined) w.be64(C.NFTA_DYNSET_TIMEOUT, u64(e.timeoutMs, 'dynset.timeoutMs'));
    w.str(C.NFTA_DYNSET_SET_NAME, text(e.set, 'dynset.set'));
    if (e.setId !== undefined) w.be32(C.NFTA_DYNSET_SET_ID, u32(e.setId, 'dynset.setId'));
    if (e.flags !== undefined) w.be32(C.NFTA_DYNSET_FLAGS, u32(e.flags, 'dynset.flags'));
  },

  decode(r) {
    // Attached expressions (NFT_DYNSET_F_EXPR) are not modelled; such a rule stays opaque.
    const flags = r.be32(C.NFTA_DYNSET_FLAGS);
    if (flags !== undefined && (flags & ~C.NFT_DYNSET_F_INV) !== 0) throw new UnrepresentableError(`dynset: flags 0x${flags.toString(16)}`);
    return compact({
      type: 'dynset',
      set: r.required(r.str(C.NFTA_DYNSET_SET_NAME), C.NFTA_DYNSET_SET_NAME),
      setId: r.be32(C.NFTA_DYNSET_SET_ID),
      op: OPS.name(r.required(r.be32(C.NFTA_DYNSET_OP), C.NFTA_DYNSET_OP)),
      sregKey: r.required(r.be32(C.NFTA_DYNSET_SREG_KEY), C.NFTA_DYNSET_SREG_KEY),
      sregData: r.be32(C.NFTA_DYNSET_SREG_DATA),
      timeoutMs: r.be64(C.NFTA_DYNSET_TIMEOUT),
      flags,
    });
  },

  describe(e) {
    let s = `${e.op} reg_key ${e.sregKey} set ${e.set} `;
    if (e.sregData !== undefined) s += `sreg_data ${e.sregData} `;
    if (e.timeoutMs !== undefined) s += `timeout ${e.timeoutMs}ms `;
    return s;
  },
};
