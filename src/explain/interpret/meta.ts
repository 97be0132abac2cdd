/** meta: the packet's family and transport protocol; other keys are not part of a flow. */
import * as C from '../../nft/constants';
import { IPPROTO, NFPROTO_IPV4, NFPROTO_IPV6 } from '../../net/protocols';
import { ExprEvaluator, Unsupported } from './context';

export const meta: ExprEvaluator<'meta'> = (e, cx) => {
  if (e.dreg === undefined) throw new Unsupported('meta set');
  if (e.key === C.NFT_META_NFPROTO) cx.regs.store(e.dreg, Buffer.from([cx.packet.family === 'ipv4' ? NFPROTO_IPV4 : NFPROTO_IPV6]));
  else if (e.key === C.NFT_META_L4PROTO) cx.regs.store(e.dreg, Buffer.from([IPPROTO[cx.packet.protocol]]));
  else throw new Unsupported(`meta key ${e.key}`);
  return true;
};
