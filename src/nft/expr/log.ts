/** log: log the packet to the kernel log (level) or to an nflog group (nft_log.c). */
import * as C from '../constants';
import { compact, ExprCodec, text, u16, u32 } from './codec';

// NF_LOG_* (linux/netfilter/nf_log.h) in the order libnftnl prints them.
const FLAG_TEXT: [number, string][] = [
  [0x01, 'tcpseq'],
  [0x02, 'tcpopt'],
  [0x04, 'ipopt'],
  [0x08, 'uid'],
  [0x20, 'macdecode'],
];

export const log: ExprCodec<'log'> = {
  attrs: [C.NFTA_LOG_GROUP, C.NFTA_LOG_PREFIX, C.NFTA_LOG_SNAPLEN, C.NFTA_LOG_QTHRESHOLD, C.NFTA_LOG_LEVEL, C.NFTA_LOG_FLAGS],

  encode(w, e) {
    if (e.prefix !== undefined) w.str(C.NFTA_LOG_PREFIX, text(e.prefix, 'log.prefix'));
    if (e.group !== undefined) w.be16(C.NFTA_LOG_GROUP, u16(e.group, 'log.group'));
    if (e.snaplen !== undefined) w.be32(C.NFTA_LOG_SNAPLEN, u32(e.snaplen, 'log.snaplen'));
    if (e.qthreshold !== undefined) w.be16(C.NFTA_LOG_QTHRESHOLD, u16(e.qthreshold, 'log.qthreshold'));
    if (e.level !== undefined) w.be32(C.NFTA_LOG_LEVEL, u32(e.level, 'log.level'));
    if (e.flags !== undefined) w.be32(C.NFTA_LOG_FLAGS, u32(e.flags, 'log.flags'));
  },

  decode(r) {
    return compact({
      type: 'log',
      prefix: r.str(C.NFTA_LOG_PREFIX),
      group: r.be16(C.NFTA_LOG_GROUP),
      snaplen: r.be32(C.NFTA_LOG_SNAPLEN),
      qthreshold: r.be16(C.NFTA_LOG_QTHRESHOLD),
      level: r.be32(C.NFTA_LOG_LEVEL),
      flags: r.be32(C.NFTA_LOG_FLAGS),
    });
  },

  describe(e) {
    let s = e.prefix !== undefined ? `prefix ${e.prefix} ` : '';
    if (e.group !== undefined) return s + `group ${e.group} snaplen ${e.snaplen ?? 0} qthreshold ${e.qthreshold ?? 0} `;
    if (e.level !== undefined) s += `level ${e.level} `;
    if (e.flags !== undefined) for (const [bit, name] of FLAG_TEXT) if (e.flags & bit) s += `${name} `;
    return s;
  },
};
