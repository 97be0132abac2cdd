/** immediate as a verdict, or as the constant a later statement uses: the value of `meta mark
 * set`, the address of `dnat to`. */
import * as C from '../constants';
import { ExprPrinter } from './rule-text';
import { CT_KEYS, formatValue, formatVerdict, META_KEYS } from './value-text';

export const immediate: ExprPrinter<'immediate'> = (e, s) => {
  if (e.dreg === C.NFT_REG_VERDICT && e.verdict) {
    s.emit(formatVerdict(e.verdict));
    return true;
  }
  if (!e.data) return false;
  // A constant a later `meta mark set` / `ct mark set` stores: printed as its value.
  const setter = s.after().find((x) => (x.type === 'meta' || x.type === 'ct') && x.sreg === e.dreg);
  const key = setter?.type === 'meta' ? META_KEYS[setter.key] : setter?.type === 'ct' ? CT_KEYS[setter.key] : undefined;
  if (key) {
    s.load(e.dreg, { text: formatValue(e.data, key[1]), kind: key[1] });
    return true;
  }
  // A constant for a nat statement later in the rule is printed by that statement; any other use
  // keeps the raw form, so nothing is hidden.
  if (s.after().some((x) => x.type === 'nat' && (x.regAddrMin === e.dreg || x.regProtoMin === e.dreg))) {
    s.constants.set(e.dreg, e.data);
    return true;
  }
  return false;
};
