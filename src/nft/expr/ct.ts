/** ct: load a conntrack field (NFT_CT_*) into a register, or set one from a register (nft_ct.c). */
import * as C from '../constants';
import { compact, ExprCodec, ExprWriter } from './codec';

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
    const o = new ExprWriter(w, 'ct');
    o.be32(C.NFTA_CT_KEY, e.key, 'key');
    if (e.dreg !== undefined) o.be32(C.NFTA_CT_DREG, e.dreg, 'dreg');
    if (e.direction !== undefined) o.u8(C.NFTA_CT_DIRECTION, e.direction, 'direction');
    if (e.sreg !== undefined) o.be32(C.NFTA_CT_SREG, e.sreg, 'sreg');
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
