/** hash: jhash of a register (or the symmetric flow hash) modulo n, plus offset (nft_hash.c). */
import * as C from '../constants';
import { HashExpr } from '../types';
import { compact, EnumMap, ExprCodec, ExprWriter } from './codec';

const HASH_TYPES = new EnumMap<HashExpr['hashType']>('hash.hashType', { jenkins: C.NFT_HASH_JENKINS, sym: C.NFT_HASH_SYM });

export const hash: ExprCodec<'hash'> = {
  attrs: [C.NFTA_HASH_SREG, C.NFTA_HASH_DREG, C.NFTA_HASH_LEN, C.NFTA_HASH_MODULUS, C.NFTA_HASH_SEED, C.NFTA_HASH_OFFSET, C.NFTA_HASH_TYPE],

  encode(w, e) {
    const o = new ExprWriter(w, 'hash');
    if (e.sreg !== undefined) o.be32(C.NFTA_HASH_SREG, e.sreg, 'sreg');
    o.be32(C.NFTA_HASH_DREG, e.dreg, 'dreg');
    if (e.len !== undefined) o.be32(C.NFTA_HASH_LEN, e.len, 'len');
    o.be32(C.NFTA_HASH_MODULUS, e.modulus, 'modulus');
    if (e.seed !== undefined) o.be32(C.NFTA_HASH_SEED, e.seed, 'seed');
    if (e.offset !== undefined) o.be32(C.NFTA_HASH_OFFSET, e.offset, 'offset');
    o.be32(C.NFTA_HASH_TYPE, HASH_TYPES.number(e.hashType), 'hashType');
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
