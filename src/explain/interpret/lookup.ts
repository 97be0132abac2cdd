/** lookup: membership in a plain, interval or concatenated set, a verdict map's verdict, or a
 * data map's data into dreg. */
import * as C from '../../nft/constants';
import { ExprEvaluator, Unsupported } from './context';

export const lookup: ExprEvaluator<'lookup'> = (e, cx) => {
  const s = cx.set(e.set);
  if (!s) throw new Unsupported(`set ${e.set} is referenced but not in the table`);
  const found = s.elements.find((el) => {
    const v = cx.regs.read(e.sreg, el.key.length);
    return el.keyEnd ? Buffer.compare(v, el.key) >= 0 && Buffer.compare(v, el.keyEnd) <= 0 : v.equals(el.key);
  });
  if (e.dreg === undefined) return e.invert ? !found : !!found;
  if (!found) return false;
  if (e.dreg === C.NFT_REG_VERDICT) {
    if (!found.verdict) throw new Unsupported(`map ${e.set} has an element without a verdict`);
    return found.verdict;
  }
  if (!found.data) throw new Unsupported(`map ${e.set} has an element without data`);
  cx.regs.store(e.dreg, found.data);
  return true;
};
