/** numgen as the value it loads: `numgen random mod 3`. */
import { ExprPrinter } from './rule-text';

export const numgen: ExprPrinter<'numgen'> = (e, s) => {
  s.load(e.dreg, { text: `numgen ${e.ngType} mod ${e.modulus}${e.offset ? ` offset ${e.offset}` : ''}`, kind: 'integer' });
  return true;
};
