/** byteorder: nft converts a host-order value that keys a network-order set, and does not print
 * the conversion. */
import { ExprPrinter } from './rule-text';

export const byteorder: ExprPrinter<'byteorder'> = (e, s) => e.sreg === e.dreg && s.peek(e.sreg)?.kind === 'integer';
