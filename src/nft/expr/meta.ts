/** meta: load packet metadata (NFT_META_*) into a register, or set it from one (nft_meta.c). */
import * as C from '../constants';
import { compact, ExprCodec, u32 } from './codec';

// libnftnl's key names (meta.c), indexed by NFT_META_*.
const KEY_TEXT = [
  'len', 'protocol', 'priority', 'mark', 'iif', 'oif', 'iifname', 'oifname', 'iiftype', 'oiftype',
  'skuid', 'skgid', 'nftrace', 'rtclassid', 'secmark', 'nfproto', 'l4proto', 'bri_iifname',
  'bri_oifname', 'pkttype', 'cpu', 'iifgroup', 'oifgroup', 'cgroup', 'prandom', 'secpath', 'iifkind',
  'oifkind', 'bri_iifpvid', 'bri_iifvproto', 'time', 'day', 'hour', 'sdif', 'sdifname',
];

export const meta: ExprCodec<'meta'> = {
  attrs: [C.NFTA_META_DREG, C.NFTA_META_KEY, C.NFTA_META_SREG],

  encode(w, e) {
    w.be32(C.NFTA_META_KEY, u32(e.key, 'meta.key'));
    if (e.dreg !== undefined) w.be32(C.NFTA_META_DREG, u32(e.dreg, 'meta.dreg'));
    if (e.sreg !== undefined) w.be32(C.NFTA_META_SREG, u32(e.sreg, 'meta.sreg'));
  },

  decode(r) {
    r.oneOf(C.NFTA_META_DREG, C.NFTA_META_SREG);
    return compact({
      type: 'meta',
      key: r.required(r.be32(C.NFTA_META_KEY), C.NFTA_META_KEY),
      dreg: r.be32(C.NFTA_META_DREG),
      sreg: r.be32(C.NFTA_META_SREG),
    });
  },

  describe(e) {
    const key = KEY_TEXT[e.key] ?? 'unknown';
    if (e.sreg !== undefined) return `set ${key} with reg ${e.sreg} `;
    if (e.dreg !== undefined) return `load ${key} => reg ${e.dreg} `;
    return '';
  },
};
