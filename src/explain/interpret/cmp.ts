/** cmp: the register against constant data, byte by byte as the kernel's memcmp. */
import type { CmpOp } from '../../nft/types';
import { ExprEvaluator } from './context';

const HOLDS: Record<CmpOp, (order: number) => boolean> = {
  eq: (c) => c === 0,
  neq: (c) => c !== 0,
  lt: (c) => c < 0,
  lte: (c) => c <= 0,
  gt: (c) => c > 0,
  gte: (c) => c >= 0,
};

export const cmp: ExprEvaluator<'cmp'> = (e, cx) => HOLDS[e.op](Buffer.compare(cx.regs.read(e.sreg, e.data.length), e.data));
