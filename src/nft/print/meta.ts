/** meta loads as the field they name (`iifname`, `meta l4proto`), and `meta mark set <value>`. */
import { ExprPrinter } from './rule-text';
import { META_KEYS, ValueKind } from './value-text';

export const meta: ExprPrinter<'meta'> = (e, s) => {
  if (e.sreg !== undefined) {
    const src = s.take(e.sreg);
    if (!src) return false;
    const [text] = META_KEYS[e.key] ?? [`meta key ${e.key}`];
    s.emit(`${text} set ${src.text}`);
    return true;
  }
  if (e.dreg === undefined) return false;
  const [text, kind] = META_KEYS[e.key] ?? [`meta key ${e.key}`, 'hex' as ValueKind];
  s.load(e.dreg, { text, kind });
  return true;
};
