/** nat as `dnat ip to <addr>:<port>`, the address and port either constants or a map lookup's
 * result. */
import { formatIPv4, formatIPv6 } from '../../net/ip-bytes';
import { NFPROTO_IPV4, NFPROTO_IPV6 } from '../../net/protocols';
import { registerOffset } from '../canonical';
import { ExprPrinter } from './rule-text';

export const nat: ExprPrinter<'nat'> = (e, s) => {
  const fam = e.family === NFPROTO_IPV4 ? 'ip' : e.family === NFPROTO_IPV6 ? 'ip6' : undefined;
  // Registers loaded by a map lookup: nft prints their expressions, `to <addr>:<port>`.
  const addrExpr = e.regAddrMin !== undefined && !s.constants.has(e.regAddrMin) ? s.peek(e.regAddrMin) : undefined;
  const portExpr = e.regProtoMin !== undefined && !s.constants.has(e.regProtoMin) ? s.peek(e.regProtoMin) : undefined;
  // One lookup of `address . port` data: the port follows the address in the registers.
  const portInMap = addrExpr?.mapResult === true && e.regProtoMin !== undefined && !portExpr && registerOffset(e.regProtoMin) === registerOffset(e.regAddrMin!) + (fam === 'ip' ? 4 : 16);
  if (fam && addrExpr && (e.regProtoMin === undefined || portExpr || portInMap) && e.regAddrMax === e.regAddrMin && e.regProtoMax === e.regProtoMin) {
    s.emit(`${e.natType} ${fam} to ${addrExpr.text}${portExpr ? `:${portExpr.text}` : ''}`);
    return true;
  }
  const addr = e.regAddrMin !== undefined ? s.constants.get(e.regAddrMin) : undefined;
  const port = e.regProtoMin !== undefined ? s.constants.get(e.regProtoMin) : undefined;
  if (!fam || (e.regAddrMin !== undefined && !addr) || (e.regProtoMin !== undefined && !port)) return false;
  let to = addr ? (fam === 'ip' ? formatIPv4(addr) : `[${formatIPv6(addr)}]`) : '';
  if (port) to += `:${port.readUInt16BE(0)}`;
  s.emit(`${e.natType} ${fam} to ${to}`);
  return true;
};
