/** dynset: adding or updating an element (a per-address counter, an affinity entry) does not
 * change the verdict; a deletion or an inverted match might, and is not evaluated. */
import * as C from '../../nft/constants';
import { ExprEvaluator, Unsupported } from './context';

export const dynset: ExprEvaluator<'dynset'> = (e) => {
  const inverted = ((e.flags ?? 0) & C.NFT_DYNSET_F_INV) !== 0;
  if (e.op !== 'delete' && !inverted) return true;
  throw new Unsupported(`dynset ${e.op}${inverted ? ' (inverted)' : ''}`);
};
