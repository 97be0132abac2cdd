/** limit as `limit rate [over] N/unit burst M packets`. */
import * as C from '../constants';
import { ExprPrinter } from './rule-text';

export const limit: ExprPrinter<'limit'> = (e, s) => {
  const unit = e.unit === 1n ? 'second' : e.unit === 60n ? 'minute' : `${e.unit}s`;
  const bytes = e.limitType === 'bytes';
  s.emit(`limit rate ${e.flags & C.NFT_LIMIT_F_INV ? 'over ' : ''}${e.rate}/${unit}${bytes ? ' bytes' : ''} burst ${e.burst}${bytes ? '' : ' packets'}`);
  return true;
};
