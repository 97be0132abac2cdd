/** Rules in nft syntax, as `nft list` prints them: a fold over the rule's expressions, each kind
 * printed by its own printer into the state they share (RuleText). An expression in a shape nft
 * would not print is shown in libnftnl's debug notation, so nothing is hidden. */
import { mergeRanges } from '../canonical';
import { describeExpr } from '../expr';
import { ExprKind, ExprOf } from '../expr/codec';
import { Expr } from '../types';
import { bitwise } from './bitwise';
import { byteorder } from './byteorder';
import { cmp } from './cmp';
import { counter } from './counter';
import { ct } from './ct';
import { dynset } from './dynset';
import { fib } from './fib';
import { immediate } from './immediate';
import { limit } from './limit';
import { log } from './log';
import { lookup } from './lookup';
import { masq } from './masq';
import { meta } from './meta';
import { nat } from './nat';
import { numgen } from './numgen';
import { payload } from './payload';
import { range } from './range';
import { reject } from './reject';
import { ExprPrinter, RuleText } from './rule-text';

export { formatValue, formatVerdict, ValueKind } from './value-text';

/** For kinds nfkube reads back but never prints as nft syntax: the debug notation. */
const debugNotation = () => false;

/** Keyed by kind: a kind without a printer does not compile. */
const PRINTERS: { [K in ExprKind]: ExprPrinter<K> } = {
  payload,
  meta,
  cmp,
  bitwise,
  range,
  lookup,
  immediate,
  counter,
  ct,
  limit,
  log,
  reject,
  nat,
  numgen,
  byteorder,
  hash: debugNotation,
  objref: debugNotation,
  masq,
  fib,
  dynset,
};

function printExpr(e: Expr, s: RuleText): void {
  // An expression nfkube cannot decode: its name and size only, never its bytes as if they meant
  // something.
  if (e.type === 'opaque') return s.emit(`# unknown expression "${e.name}" (${e.data.length} bytes)`);
  if (!(PRINTERS[e.type] as ExprPrinter<typeof e.type>)(e as ExprOf<typeof e.type>, s)) s.emit(describeExpr(e));
}

/** A rule's expressions in nft syntax. */
export function printRuleBody(rule: Expr[]): string {
  // nft writes a range it parsed (`tcp dport 80-90`) as cmp gte + cmp lte: printed as the range.
  const s = new RuleText(mergeRanges(rule));
  for (let e = s.next(); e; e = s.next()) printExpr(e, s);
  return s.result();
}
