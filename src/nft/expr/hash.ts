/** hash: jhash of a register (or the symmetric flow hash) modulo n, plus offset (nft_hash.c). */
import * as C from '../constants';
import { HashExpr } from '../types';
import { compact, EnumMap, ExprCodec, u32 } from './codec';

const HASH_TYPES = new EnumMap<HashExpr['hashType']>('hash.hashType', { jenkins: C.NFT_HASH_JENKINS, sym: C.NFT_HASH_SYM });

export const hash: ExprCodec<'hash'> = {
  attrs: [C.NFTA_HASH_SREG, C.NFTA_HASH_DREG, C.NFTA_HASH_LEN, C.NFTA_HASH_MODULUS, C.NFTA_HASH_SEED, C.NFTA_HASH_OFFSET, C.NFTA_HASH_TYPE],

  encode(w, e) {
    if (e.sreg !== undefined) w.be32(C.NFTA_HASH_SREG, u32(e.sreg, 'hash.sreg'));
    w.be32(C.NFTA_HASH_DREG, u32(e.dreg, 'hash.dreg'));
    if (e.len !== undefined) w.be32(C.NFTA_HASH_LEN, u32(e.len, 'hash.len'));
    w.be32(C.NFTA_HASH_MODULUS, u32(e.modulus, 'hash.modulus'));
    if (e.seed !== undefined) w.be32(C.NFTA_HASH_SEED, u32(e.seed, 'hash.seed'));
    if (e.offset !== undefined) w.be32(C.NFTA_HASH_OFFSET, u32(e.offset, 'hash.offset'));
    w.be32(C.NFTA_HASH_TYPE, HASH_TYPES.number(e.hashType));
  },

  // NFTA_HASH_TYPE is optional for the kernel (jhash when absent) but the model always has one.
  decode(r) {
    return compact({
      type: 'hash',
      hashType: HASH_TYPES.name(r.modelRequired(r.be32(C.NFTA_HASH_TYPE), C.NFTA_HASH_TYPE)),
      sreg: r.be32(C.NFTA_HASH_SREG),
      dreg: r.required(r.be32(C.NFTA_HASH_DREG), C.NFTA_HASH_DREG),
      len: r.be32(C.NFTA_HASH_LEN),
      modulus: r.required(r.be32(C.NFTA_HASH_MODULUS), C.NFTA_HASH_MODULUS),
      seed: r.be32(C.NFTA_HASH_SEED),
      offset: r.be32(C.NFTA_HASH_OFFSET),
    });
  },

  describe(e) {
    const head =
      e.hashType === 'sym'
        ? `reg ${e.dreg} = symhash() % mod ${e.modulus} `
        : `reg ${e.dreg} = jhash(reg ${e.sreg ?? 0}, ${e.len ?? 0}, 0x${(e.seed ?? 0).toString(16)}) % mod ${e.modulus} `;
    return head + (e.offset ? `offset ${e.offset} ` : '');
  },
};
