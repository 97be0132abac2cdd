/** reject as `reject with tcp reset`, `reject with icmpx admin-prohibited`, or an ICMP code. */
import * as C from '../constants';
import { ExprPrinter } from './rule-text';

// NFT_REJECT_ICMPX_* by code, as nft names them.
const ICMPX_CODES = ['no-route', 'port-unreachable', 'host-unreachable', 'admin-prohibited'];

export const reject: ExprPrinter<'reject'> = (e, s) => {
  if (e.rejectType === C.NFT_REJECT_TCP_RST) s.emit('reject with tcp reset');
  else if (e.rejectType === C.NFT_REJECT_ICMPX_UNREACH) s.emit(`reject with icmpx ${ICMPX_CODES[e.icmpCode] ?? e.icmpCode}`);
  else s.emit(`reject with icmp ${e.icmpCode}`);
  return true;
};
