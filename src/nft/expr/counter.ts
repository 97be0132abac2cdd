/** counter: packets and bytes seen by the rule (nft_counter.c). */
import * as C from '../constants';
import { ExprCodec, u64 } from './codec';

export const counter: ExprCodec<'counter'> = {
  // NFTA_COUNTER_PAD only aligns the 64-bit values on some architectures.
  attrs: [C.NFTA_COUNTER_BYTES, C.NFTA_COUNTER_PACKETS, C.NFTA_COUNTER_PAD],

  // An absent value starts the counter at zero, so zero is sent as absence, as nft does.
  encode(w, e) {
    if (e.bytes !== 0n) w.be64(C.NFTA_COUNTER_BYTES, u64(e.bytes, 'counter.bytes'));
    if (e.packets !== 0n) w.be64(C.NFTA_COUNTER_PACKETS, u64(e.packets, 'counter.packets'));
  },

  decode(r) {
    return { type: 'counter', packets: r.be64(C.NFTA_COUNTER_PACKETS) ?? 0n, bytes: r.be64(C.NFTA_COUNTER_BYTES) ?? 0n };
  },

  describe(e) {
    return `pkts ${e.packets} bytes ${e.bytes} `;
  },
};
