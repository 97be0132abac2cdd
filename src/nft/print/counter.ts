/** counter as nft lists it, with the values read. */
import { ExprPrinter } from './rule-text';

export const counter: ExprPrinter<'counter'> = (e, s) => {
  s.emit(`counter packets ${e.packets} bytes ${e.bytes}`);
  return true;
};
