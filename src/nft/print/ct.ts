/** ct loads as the field they name (`ct state`), and `ct mark set <value>`. */
import { ExprPrinter } from './rule-text';
import { CT_KEYS, ValueKind } from './value-text';

export const ct: ExprPrinter<'ct'> = (e, s) => {
  const [text, kind] = CT_KEYS[e.key] ?? [`ct key ${e.key}`, 'hex' as ValueKind];
  if (e.sreg !== undefined) {
    // The source is consumed even when the key has no setter nfkube names.
    const src = s.take(e.sreg);
    if (!src || !CT_KEYS[e.key]) return false;
    s.emit(`${text} set ${src.text}`);
    return true;
  }
  if (e.dreg === undefined) return false;
  s.load(e.dreg, { text, kind });
  return true;
};
