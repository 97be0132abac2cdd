/** dynset as `update @affinity { ip saddr timeout 10800000ms }`. */
import { ExprPrinter } from './rule-text';

// An element with data (a map update) has no form nfkube prints.
export const dynset: ExprPrinter<'dynset'> = (e, s) => {
  const src = s.take(e.sregKey);
  if (!src || e.sregData !== undefined) return false;
  s.emit(`${e.op} @${e.set} { ${src.text}${e.timeoutMs ? ` timeout ${e.timeoutMs}ms` : ''} }`);
  return true;
};
