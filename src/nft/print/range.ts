/** range as an interval match: `tcp dport 8000-8100`. */
import { ExprPrinter } from './rule-text';
import { formatValue } from './value-text';

export const range: ExprPrinter<'range'> = (e, s) => {
  const src = s.take(e.sreg);
  if (!src) return false;
  s.emit(`${src.text} ${e.op === 'neq' ? '!= ' : ''}${formatValue(e.from, src.kind)}-${formatValue(e.to, src.kind)}`);
  return true;
};
