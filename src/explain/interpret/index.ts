/** The interpreter's evaluators, one per expression kind, keyed by kind: a kind without one does
 * not compile. Kinds nfkube's policy table does not use are refused, never guessed. */
import type { ExprKind, ExprOf } from '../../nft/expr/codec';
import type { Expr } from '../../nft/types';
import { bitwise } from './bitwise';
import { cmp } from './cmp';
import { EvalContext, ExprEvaluator, ExprResult, Unsupported } from './context';
import { ct } from './ct';
import { dynset } from './dynset';
import { immediate } from './immediate';
import { lookup } from './lookup';
import { meta } from './meta';
import { payload } from './payload';
import { range } from './range';

export { EvalContext, ExprResult, Registers, RuleVerdict, Unsupported } from './context';
export { packetHeaders } from './packet';

/** Statements that leave the verdict alone: the packet is within any rate limit. */
const passes = () => true;

function refused(e: Expr): never {
  throw new Unsupported(`expression ${e.type}`);
}

const EVALUATORS: { [K in ExprKind]: ExprEvaluator<K> } = {
  payload,
  meta,
  cmp,
  bitwise,
  range,
  lookup,
  immediate,
  counter: passes,
  ct,
  limit: passes,
  log: passes,
  reject: () => ({ kind: 'reject' }),
  nat: refused,
  numgen: refused,
  byteorder: refused,
  hash: refused,
  objref: refused,
  masq: refused,
  fib: refused,
  dynset,
};

export function evaluateExpr(e: Expr, cx: EvalContext): ExprResult {
  if (e.type === 'opaque') refused(e);
  return (EVALUATORS[e.type] as ExprEvaluator<typeof e.type>)(e as ExprOf<typeof e.type>, cx);
}
