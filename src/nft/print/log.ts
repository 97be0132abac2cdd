/** log as `log prefix "..." group N`. */
import { ExprPrinter } from './rule-text';

export const log: ExprPrinter<'log'> = (e, s) => {
  const parts = ['log'];
  if (e.prefix !== undefined) parts.push(`prefix "${e.prefix}"`);
  if (e.group !== undefined) parts.push(`group ${e.group}`);
  s.emit(parts.join(' '));
  return true;
};
