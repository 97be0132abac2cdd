/** nat: source or destination NAT to addresses/ports held in registers (nft_nat.c). */
import * as C from '../constants';
import { NatExpr } from '../types';
import { compact, EnumMap, ExprCodec, ExprWriter } from './codec';

const NAT_TYPES = new EnumMap<NatExpr['natType']>('nat.natType', { snat: C.NFT_NAT_SNAT, dnat: C.NFT_NAT_DNAT });
// libnftnl's family names (utils.c), by NFPROTO_*.
const FAMILY_TEXT: Record<number, string> = { 1: 'inet', 2: 'ip', 3: 'arp', 5: 'netdev', 7: 'bridge', 10: 'ip6' };

export const nat: ExprCodec<'nat'> = {
  attrs: [
    C.NFTA_NAT_TYPE,
    C.NFTA_NAT_FAMILY,
    C.NFTA_NAT_REG_ADDR_MIN,
    C.NFTA_NAT_REG_ADDR_MAX,
    C.NFTA_NAT_REG_PROTO_MIN,
    C.NFTA_NAT_REG_PROTO_MAX,
    C.NFTA_NAT_FLAGS,
  ],

  encode(w, e) {
    const o = new ExprWriter(w, 'nat');
    o.be32(C.NFTA_NAT_TYPE, NAT_TYPES.number(e.natType), 'natType').be32(C.NFTA_NAT_FAMILY, e.family, 'family');
    if (e.regAddrMin !== undefined) o.be32(C.NFTA_NAT_REG_ADDR_MIN, e.regAddrMin, 'regAddrMin');
    if (e.regAddrMax !== undefined) o.be32(C.NFTA_NAT_REG_ADDR_MAX, e.regAddrMax, 'regAddrMax');
    if (e.regProtoMin !== undefined) o.be32(C.NFTA_NAT_REG_PROTO_MIN, e.regProtoMin, 'regProtoMin');
    if (e.regProtoMax !== undefined) o.be32(C.NFTA_NAT_REG_PROTO_MAX, e.regProtoMax, 'regProtoMax');
    if (e.flags !== undefined) o.be32(C.NFTA_NAT_FLAGS, e.flags, 'flags');
  },

  decode(r) {
    return compact({
      type: 'nat',
      natType: NAT_TYPES.name(r.required(r.be32(C.NFTA_NAT_TYPE), C.NFTA_NAT_TYPE)),
      family: r.required(r.be32(C.NFTA_NAT_FAMILY), C.NFTA_NAT_FAMILY),
      regAddrMin: r.be32(C.NFTA_NAT_REG_ADDR_MIN),
      regAddrMax: r.be32(C.NFTA_NAT_REG_ADDR_MAX),
      regProtoMin: r.be32(C.NFTA_NAT_REG_PROTO_MIN),
      regProtoMax: r.be32(C.NFTA_NAT_REG_PROTO_MAX),
      flags: r.be32(C.NFTA_NAT_FLAGS),
    });
  },

  describe(e) {
    let s = `${e.natType} ${FAMILY_TEXT[e.family] ?? 'unknown'} `;
    if (e.regAddrMin !== undefined) s += `addr_min reg ${e.regAddrMin} `;
    if (e.regAddrMax !== undefined) s += `addr_max reg ${e.regAddrMax} `;
    if (e.regProtoMin !== undefined) s += `proto_min reg ${e.regProtoMin} `;
    if (e.regProtoMax !== undefined) s += `proto_max reg ${e.regProtoMax} `;
    if (e.flags !== undefined) s += `flags 0x${e.flags.toString(16)} `;
    return s;
  },
};
