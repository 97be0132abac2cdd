/** range: the register inside (or outside) [from, to]. */
import { ExprEvaluator } from './context';

export const range: ExprEvaluator<'range'> = (e, cx) => {
  const v = cx.regs.read(e.sreg, e.from.length);
  const inside = Buffer.compare(v, e.from) >= 0 && Buffer.compare(v, e.to) <= 0;
  return e.op === 'eq' ? inside : !inside;
};
