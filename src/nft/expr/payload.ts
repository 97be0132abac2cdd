/** payload: load packet bytes into a register, or write a register into the packet with an
 * optional checksum fixup (net/netfilter/nft_payload.c). */
import * as C from '../constants';
import { PayloadBase } from '../types';
import { compact, EnumMap, ExprCodec, u32 } from './codec';

const BASES = new EnumMap<PayloadBase>('payload.base', {
  ll: C.NFT_PAYLOAD_LL_HEADER,
  network: C.NFT_PAYLOAD_NETWORK_HEADER,
  transport: C.NFT_PAYLOAD_TRANSPORT_HEADER,
  inner: C.NFT_PAYLOAD_INNER_HEADER,
});
const BASE_TEXT: Record<PayloadBase, string> = { ll: 'link', network: 'network', transport: 'transport', inner: 'inner' };

export const payload: ExprCodec<'payload'> = {
  attrs: [
    C.NFTA_PAYLOAD_DREG,
    C.NFTA_PAYLOAD_BASE,
    C.NFTA_PAYLOAD_OFFSET,
    C.NFTA_PAYLOAD_LEN,
    C.NFTA_PAYLOAD_SREG,
    C.NFTA_PAYLOAD_CSUM_TYPE,
    C.NFTA_PAYLOAD_CSUM_OFFSET,
    C.NFTA_PAYLOAD_CSUM_FLAGS,
  ],

  // Attribute order as libnftnl builds it, so nft's own bytes re-encode identically.
  encode(w, e) {
    if (e.sreg !== undefined) w.be32(C.NFTA_PAYLOAD_SREG, u32(e.sreg, 'payload.sreg'));
    if (e.dreg !== undefined) w.be32(C.NFTA_PAYLOAD_DREG, u32(e.dreg, 'payload.dreg'));
    w.be32(C.NFTA_PAYLOAD_BASE, BASES.number(e.base));
    w.be32(C.NFTA_PAYLOAD_OFFSET, u32(e.offset, 'payload.offset'));
    w.be32(C.NFTA_PAYLOAD_LEN, u32(e.len, 'payload.len'));
    if (e.csumType !== undefined) w.be32(C.NFTA_PAYLOAD_CSUM_TYPE, u32(e.csumType, 'payload.csumType'));
    if (e.csumOffset !== undefined) w.be32(C.NFTA_PAYLOAD_CSUM_OFFSET, u32(e.csumOffset, 'payload.csumOffset'));
    if (e.csumFlags !== undefined) w.be32(C.NFTA_PAYLOAD_CSUM_FLAGS, u32(e.csumFlags, 'payload.csumFlags'));
  },

  decode(r) {
    r.oneOf(C.NFTA_PAYLOAD_DREG, C.NFTA_PAYLOAD_SREG);
    return compact({
      type: 'payload',
      base: BASES.name(r.required(r.be32(C.NFTA_PAYLOAD_BASE), C.NFTA_PAYLOAD_BASE)),
      offset: r.required(r.be32(C.NFTA_PAYLOAD_OFFSET), C.NFTA_PAYLOAD_OFFSET),
      len: r.required(r.be32(C.NFTA_PAYLOAD_LEN), C.NFTA_PAYLOAD_LEN),
      dreg: r.be32(C.NFTA_PAYLOAD_DREG),
      sreg: r.be32(C.NFTA_PAYLOAD_SREG),
      csumType: r.be32(C.NFTA_PAYLOAD_CSUM_TYPE),
      csumOffset: r.be32(C.NFTA_PAYLOAD_CSUM_OFFSET),
      csumFlags: r.be32(C.NFTA_PAYLOAD_CSUM_FLAGS),
    });
  },

  describe(e) {
    const base = BASE_TEXT[e.base];
    if (e.sreg) {
      return (
        `write reg ${e.sreg} => ${e.len}b @ ${base} header + ${e.offset} ` +
        `csum_type ${e.csumType ?? 0} csum_off ${e.csumOffset ?? 0} csum_flags 0x${(e.csumFlags ?? 0).toString(16)} `
      );
    }
    return `load ${e.len}b @ ${base} header + ${e.offset} => reg ${e.dreg ?? 0} `;
  },
};
