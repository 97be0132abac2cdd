/** ct: load a conntrack field (NFT_CT_*) into a register, or set one from a register (nft_ct.c). */
import * as C from '../constants';
import { compact, ExprCodec, u32, u8 } from './codec';

// libnftnl's key names (ct.c), indexed by NFT_CT_*.
const KEY_TEXT = [
  'state', 'direction', 'status', 'mark', 'secmark', 'expiration', 'helper', 'l3protocol', 'src', 'dst',
  'protocol', 'proto_src', 'proto_dst', 'label', 'packets', 'bytes', 'avgpkt', 'zone', 'event', 'src_ip',
  'dst_ip', 'src_ip6', 'dst_ip6', 'id',
];
const DIRECTION_TEXT = ['original', 'reply'];

export const ct: ExprCodec<'ct'> = {
  attrs: [C.NFTA_CT_DREG, C.NFTA_CT_KEY, C.NFTA_CT_DIRECTION, C.NFTA_CT_SREG],

  encode(w, e) {
    w.be32(C.NFTA_CT_KEY, u32(e.key, 'ct.key'));
    if (e.dreg !== undefined) w.be32(C.NFTA_CT_DREG, u32(e.dreg, 'ct.dreg'));
    if (e.direction !== undefined) w.u8(C.NFTA_CT_DIRECTION, u8(e.direction, 'ct.direction'));
    if (e.sreg !== undefined) w.be32(C.NFTA_CT_SREG, u32(e.sreg, 'ct.sreg'));
  },

  decode(r) {
    r.oneOf(C.NFTA_CT_DREG, C.NFTA_CT_SREG);
    return compact({
      type: 'ct',
      key: r.required(r.be32(C.NFTA_CT_KEY), C.NFTA_CT_KEY),
      dreg: r.be32(C.NFTA_CT_DREG),
      sreg: r.be32(C.NFTA_CT_SREG),
      direction: r.u8(C.NFTA_CT_DIRECTION),
    });
  },

  describe(e) {
    const key = KEY_TEXT[e.key] ?? 'unknown';
    let s = '';
    if (e.sreg !== undefined) s += `set ${key} with reg ${e.sreg} `;
    if (e.dreg !== undefined) s += `load ${key} => reg ${e.dreg} `;
    if (e.direction !== undefined) s += `, dir ${DIRECTION_TEXT[e.direction] ?? 'unknown'} `;
    return s;
  },
};
