/** cmp as the match it ends: `tcp dport 80`, `ip saddr 198.18.0.0/15` after a mask, `ct state
 * established` after a flag test. A protocol match it makes names the fields after it. */
import { IPPROTO_NAME, NFPROTO_IPV4, NFPROTO_IPV6 } from '../../net/protocols';
import { CmpOp } from '../types';
import { ExprPrinter } from './rule-text';
import { formatValue } from './value-text';

const OPERATORS: Record<CmpOp, string> = { eq: '', neq: '!= ', lt: '< ', lte: '<= ', gt: '> ', gte: '>= ' };

/** The number of one bits of a mask: the prefix length of an address mask. */
function prefixLength(mask: Buffer): number {
  return [...mask].reduce((n, byte) => n + byte.toString(2).replace(/0/g, '').length, 0);
}

export const cmp: ExprPrinter<'cmp'> = (e, s) => {
  const src = s.take(e.sreg);
  if (!src) return false;
  const mask = s.lastMask?.reg === e.sreg ? s.lastMask.mask : undefined;
  s.lastMask = undefined;
  let text: string;
  if ((src.kind === 'ct_state' || src.kind === 'ct_status') && mask && e.op === 'neq' && e.data.length === 4 && e.data.readUInt32LE(0) === 0) {
    text = `${src.text} ${formatValue(mask, src.kind)}`;
  } else if (mask && (src.kind === 'ipv4_addr' || src.kind === 'ipv6_addr')) {
    text = `${src.text} ${OPERATORS[e.op]}${formatValue(e.data, src.kind)}/${prefixLength(mask)}`;
  } else {
    // After arithmetic (`meta mark & 0x4000`) the comparison needs its operator spelled out.
    const op = e.op === 'eq' && / [&|^] /.test(src.text) ? '== ' : OPERATORS[e.op];
    text = `${src.text} ${op}${formatValue(e.data, src.kind)}`;
  }
  if (e.op === 'eq' && src.text === 'meta nfproto') {
    s.l3 = e.data[0] === NFPROTO_IPV4 ? 'ip' : e.data[0] === NFPROTO_IPV6 ? 'ip6' : undefined;
    s.emit(text, 'l3');
  } else if (e.op === 'eq' && src.text === 'meta iiftype' && formatValue(e.data, 'iftype') === 'ether') {
    s.emit(text, 'll');
  } else if (e.op === 'eq' && src.text === 'meta l4proto' && IPPROTO_NAME[e.data[0]]) {
    s.l4 = IPPROTO_NAME[e.data[0]];
    s.emit(text, 'l4');
  } else {
    s.emit(text);
  }
  return true;
};
