/** fib as the route lookups nft prints: `fib daddr type local`, `fib saddr . iif oif missing`. */
import * as C from '../constants';
import { ExprPrinter } from './rule-text';

const FIB_FLAGS: [number, string][] = [
  [C.NFTA_FIB_F_SADDR, 'saddr'],
  [C.NFTA_FIB_F_DADDR, 'daddr'],
  [C.NFTA_FIB_F_MARK, 'mark'],
  [C.NFTA_FIB_F_IIF, 'iif'],
  [C.NFTA_FIB_F_OIF, 'oif'],
];

export const fib: ExprPrinter<'fib'> = (e, s) => {
  const flags = FIB_FLAGS.filter(([bit]) => e.flags & bit).map(([, t]) => t).join(' . ');
  if (e.result === C.NFT_FIB_RESULT_ADDRTYPE) s.load(e.dreg, { text: `fib ${flags} type`, kind: 'fib_addrtype' });
  // The present flag makes the result whether a route was found.
  else if (e.result === C.NFT_FIB_RESULT_OIF && e.flags & C.NFTA_FIB_F_PRESENT) s.load(e.dreg, { text: `fib ${flags} oif`, kind: 'fib_present' });
  else return false;
  return true;
};
