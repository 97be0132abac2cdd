/** bitwise: dreg = (sreg & mask) ^ xor; shifts are not in nfkube's table. */
import { ExprEvaluator, Unsupported } from './context';

export const bitwise: ExprEvaluator<'bitwise'> = (e, cx) => {
  if ((e.op ?? 'bool') !== 'bool' || !e.mask || !e.xor) throw new Unsupported(`bitwise ${e.op}`);
  const v = Buffer.from(cx.regs.read(e.sreg, e.len));
  for (let i = 0; i < e.len; i++) v[i] = (v[i] & e.mask[i]) ^ e.xor[i];
  cx.regs.store(e.dreg, v);
  return true;
};
