/** limit: token-bucket rate limit in packets or bytes per unit (nft_limit.c). */
import * as C from '../constants';
import { LimitExpr } from '../types';
import { EnumMap, ExprCodec, u32, u64 } from './codec';

const LIMIT_TYPES = new EnumMap<LimitExpr['limitType']>('limit.limitType', { pkts: C.NFT_LIMIT_PKTS, bytes: C.NFT_LIMIT_PKT_BYTES });
const UNIT_TEXT = new Map<bigint, string>([
  [1n, 'second'],
  [60n, 'minute'],
  [3600n, 'hour'],
  [86400n, 'day'],
  [604800n, 'week'],
]);

export const limit: ExprCodec<'limit'> = {
  attrs: [C.NFTA_LIMIT_RATE, C.NFTA_LIMIT_UNIT, C.NFTA_LIMIT_BURST, C.NFTA_LIMIT_TYPE, C.NFTA_LIMIT_FLAGS, C.NFTA_LIMIT_PAD],

  encode(w, e) {
    w.be64(C.NFTA_LIMIT_RATE, u64(e.rate, 'limit.rate')).be64(C.NFTA_LIMIT_UNIT, u64(e.unit, 'limit.unit'));
    // The kernel reads an absent burst as 0 (then its own default for packet limits); nft omits it so.
    if (e.burst !== 0) w.be32(C.NFTA_LIMIT_BURST, u32(e.burst, 'limit.burst'));
    w.be32(C.NFTA_LIMIT_TYPE, LIMIT_TYPES.number(e.limitType)).be32(C.NFTA_LIMIT_FLAGS, u32(e.flags, 'limit.flags'));
  },

  // Absent burst, type and flags mean 0, packets and 0 to the kernel (nft_limit.c).
  decode(r) {
    return {
      type: 'limit',
      rate: r.required(r.be64(C.NFTA_LIMIT_RATE), C.NFTA_LIMIT_RATE),
      unit: r.required(r.be64(C.NFTA_LIMIT_UNIT), C.NFTA_LIMIT_UNIT),
      burst: r.be32(C.NFTA_LIMIT_BURST) ?? 0,
      limitType: LIMIT_TYPES.name(r.be32(C.NFTA_LIMIT_TYPE) ?? C.NFT_LIMIT_PKTS),
      flags: r.be32(C.NFTA_LIMIT_FLAGS) ?? 0,
    };
  },

  describe(e) {
    const type = e.limitType === 'bytes' ? 'bytes' : 'packets';
    return `rate ${e.rate}/${UNIT_TEXT.get(e.unit) ?? 'error'} burst ${e.burst} type ${type} flags 0x${e.flags.toString(16)} `;
  },
};
