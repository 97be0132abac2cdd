/** immediate: the rule's verdict, or constant data into a register. */
import * as C from '../../nft/constants';
import { ExprEvaluator } from './context';

export const immediate: ExprEvaluator<'immediate'> = (e, cx) => {
  if (e.dreg === C.NFT_REG_VERDICT && e.verdict) return e.verdict;
  if (e.data) cx.regs.store(e.dreg, e.data);
  return true;
};
