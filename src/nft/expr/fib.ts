/** fib: a route lookup on the packet's addresses (oif, oifname or address type) into a register
 * (nft_fib.c); `fib saddr type local` is how kube-proxy tells the node's own traffic apart. */
import * as C from '../constants';
import { ExprCodec, u32 } from './codec';

// libnftnl's names (fib.c), by NFT_FIB_RESULT_*; flags by NFTA_FIB_F_*, nft's own names too.
const RESULT_TEXT = ['unspec', 'oif', 'oifname', 'type'];
export const FIB_FLAG_TEXT: [number, string][] = [
  [C.NFTA_FIB_F_SADDR, 'saddr'],
  [C.NFTA_FIB_F_DADDR, 'daddr'],
  [C.NFTA_FIB_F_MARK, 'mark'],
  [C.NFTA_FIB_F_IIF, 'iif'],
  [C.NFTA_FIB_F_OIF, 'oif'],
  [C.NFTA_FIB_F_PRESENT, 'present'],
];

export const fib: ExprCodec<'fib'> = {
  attrs: [C.NFTA_FIB_DREG, C.NFTA_FIB_RESULT, C.NFTA_FIB_FLAGS],

  // In libnftnl's order, so nft's own bytes re-encode exactly.
  encode(w, e) {
    w.be32(C.NFTA_FIB_FLAGS, u32(e.flags, 'fib.flags')).be32(C.NFTA_FIB_RESULT, u32(e.result, 'fib.result')).be32(C.NFTA_FIB_DREG, u32(e.dreg, 'fib.dreg'));
  },

  decode(r) {
    return {
      type: 'fib',
      dreg: r.required(r.be32(C.NFTA_FIB_DREG), C.NFTA_FIB_DREG),
      result: r.required(r.be32(C.NFTA_FIB_RESULT), C.NFTA_FIB_RESULT),
      flags: r.required(r.be32(C.NFTA_FIB_FLAGS), C.NFTA_FIB_FLAGS),
    };
  },

  describe(e) {
    const flags = FIB_FLAG_TEXT.filter(([bit]) => e.flags & bit).map(([, t]) => t);
    return `${flags.join(' . ')} ${RESULT_TEXT[e.result] ?? 'unknown'} => reg ${e.dreg} `;
  },
};
