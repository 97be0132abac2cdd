/** nat: source or destination NAT to addresses/ports held in registers (nft_nat.c). */
import * as C from '../constants';
import { NatExpr, NFPROTO } from '../types';
import { compact, EnumMap, ExprCodec, u32 } from './codec';

const NAT_TYPES = new EnumMap<NatExpr['natType']>('nat.natType', { snat: C.NFT_NAT_SNAT, dnat: C.NFT_NAT_DNAT });
// libnftnl's family names (utils.c), by NFPROTO_*: nft's own.
const FAMILY_TEXT: Record<number, string> = Object.fromEntries(Object.entries(NFPROTO).map(([name, n]) => [n, name]));

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
    w.be32(C.NFTA_NAT_TYPE, NAT_TYPES.number(e.natType)).be32(C.NFTA_NAT_FAMILY, u32(e.family, 'nat.family'));
    if (e.regAddrMin !== undefined) w.be32(C.NFTA_NAT_REG_ADDR_MIN, u32(e.regAddrMin, 'nat.regAddrMin'));
    if (e.regAddrMax !== undefined) w.be32(C.NFTA_NAT_REG_ADDR_MAX, u32(e.regAddrMax, 'nat.regAddrMax'));
    if (e.regProtoMin !== undefined) w.be32(C.NFTA_NAT_REG_PROTO_MIN, u32(e.regProtoMin, 'nat.regProtoMin'));
    if (e.regProtoMax !== undefined) w.be32(C.NFTA_NAT_REG_PROTO_MAX, u32(e.regProtoMax, 'nat.regProtoMax'));
    if (e.flags !== undefined) w.be32(C.NFTA_NAT_FLAGS, u32(e.flags, 'nat.flags'));
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
