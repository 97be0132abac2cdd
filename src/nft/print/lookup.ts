/** lookup as a set match (`ip saddr @peers`), a verdict map (`... vmap @m`), or a map whose result
 * a later statement uses (`... map @m`). */
import * as C from '../constants';
import { ExprPrinter } from './rule-text';

export const lookup: ExprPrinter<'lookup'> = (e, s) => {
  // A map lookup leaves its key register alone, so later lookups can read the same key; its
  // result is an operand (of a nat statement), not a field of a concatenation.
  const key = s.peek(e.sreg);
  if (e.dreg !== undefined && e.dreg !== C.NFT_REG_VERDICT && key) {
    s.hold(e.dreg, { text: `${key.text} map @${e.set}`, kind: 'hex', mapResult: true });
    return true;
  }
  const src = s.take(e.sreg);
  if (!src) return false;
  if (e.dreg === C.NFT_REG_VERDICT) s.emit(`${src.text} vmap @${e.set}`);
  else s.emit(`${src.text} ${e.invert ? '!= ' : ''}@${e.set}`);
  return true;
};
