/** byteorder: dreg = sreg with each `size`-byte word of its first `len` bytes converted between
 * host and network byte order (nft_byteorder.c). nft puts one after a host-order value (numgen,
 * meta mark) that keys a set it stores in network order. */
import * as C from '../constants';
import { ByteorderExpr } from '../types';
import { EnumMap, ExprCodec, u32 } from './codec';

const BYTEORDER_OPS = new EnumMap<ByteorderExpr['op']>('byteorder.op', { ntoh: C.NFT_BYTEORDER_NTOH, hton: C.NFT_BYTEORDER_HTON });

export const byteorder: ExprCodec<'byteorder'> = {
  attrs: [C.NFTA_BYTEORDER_SREG, C.NFTA_BYTEORDER_DREG, C.NFTA_BYTEORDER_OP, C.NFTA_BYTEORDER_LEN, C.NFTA_BYTEORDER_SIZE],

  encode(w, e) {
    w.be32(C.NFTA_BYTEORDER_SREG, u32(e.sreg, 'byteorder.sreg'))
      .be32(C.NFTA_BYTEORDER_DREG, u32(e.dreg, 'byteorder.dreg'))
      .be32(C.NFTA_BYTEORDER_OP, BYTEORDER_OPS.number(e.op))
      .be32(C.NFTA_BYTEORDER_LEN, u32(e.len, 'byteorder.len'))
      .be32(C.NFTA_BYTEORDER_SIZE, u32(e.size, 'byteorder.size'));
  },

  decode(r) {
    return {
      type: 'byteorder',
      sreg: r.required(r.be32(C.NFTA_BYTEORDER_SREG), C.NFTA_BYTEORDER_SREG),
      dreg: r.required(r.be32(C.NFTA_BYTEORDER_DREG), C.NFTA_BYTEORDER_DREG),
      op: BYTEORDER_OPS.name(r.required(r.be32(C.NFTA_BYTEORDER_OP), C.NFTA_BYTEORDER_OP)),
      len: r.required(r.be32(C.NFTA_BYTEORDER_LEN), C.NFTA_BYTEORDER_LEN),
      size: r.required(r.be32(C.NFTA_BYTEORDER_SIZE), C.NFTA_BYTEORDER_SIZE),
    };
  },

  describe(e) {
    return `reg ${e.dreg} = ${e.op}(reg ${e.sreg}, ${e.size}, ${e.len}) `;
  },
};
