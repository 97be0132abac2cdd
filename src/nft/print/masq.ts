/** masq as `masquerade` with its options. */
import * as C from '../constants';
import { ExprPrinter } from './rule-text';

// NF_NAT_RANGE_* as nft prints them after `masquerade`, in its order.
const MASQ_FLAGS: [number, string][] = [
  [C.NF_NAT_RANGE_PROTO_RANDOM, 'random'],
  [C.NF_NAT_RANGE_PROTO_RANDOM_FULLY, 'fully-random'],
  [C.NF_NAT_RANGE_PERSISTENT, 'persistent'],
];

export const masq: ExprPrinter<'masq'> = (e, s) => {
  const flags = e.flags ?? 0;
  s.emit(['masquerade', ...MASQ_FLAGS.filter(([bit]) => flags & bit).map(([, t]) => t)].join(' '));
  return true;
};
