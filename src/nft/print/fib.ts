/** fib as the route lookups nft prints: `fib daddr type local`, `fib saddr . iif oif missing`. */
import * as C from '../constants';
import { FIB_FLAG_TEXT } from '../expr/fib';
import { ExprPrinter } from './rule-text';

// The present flag is not a key: it makes the result whether a route was found.
const KEY_FLAGS = FIB_FLAG_TEXT.filter(([bit]) => bit !== C.NFTA_FIB_F_PRESENT);

export const fib: ExprPrinter<'fib'> = (e, s) => {
  const flags = KEY_FLAGS.filter(([bit]) => e.flags & bit).map(([, t]) => t).join(' . ');
  if (e.result === C.NFT_FIB_RESULT_ADDRTYPE) s.load(e.dreg, { text: `fib ${flags} type`, kind: 'fib_addrtype' });
  else if (e.result === C.NFT_FIB_RESULT_OIF && e.flags & C.NFTA_FIB_F_PRESENT) s.load(e.dreg, { text: `fib ${flags} oif`, kind: 'fib_present' });
  else return false;
  return true;
};
