/** ct: the state of a connection the packet opens (new). */
import * as C from '../../nft/constants';
import { CT_STATE } from '../../net/protocols';
import { ExprEvaluator, Unsupported } from './context';

export const ct: ExprEvaluator<'ct'> = (e, cx) => {
  if (e.key !== C.NFT_CT_STATE || e.dreg === undefined) throw new Unsupported(`ct key ${e.key}`);
  const state = Buffer.alloc(4);
  state.writeUInt32LE(CT_STATE.new);
  cx.regs.store(e.dreg, state);
  return true;
};
