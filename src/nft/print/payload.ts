/** payload loads as the header fields nft names: addresses, ports, the ICMPv6 type; any other
 * load as its raw form, `@th,16,16`. */
import { PayloadExpr } from '../types';
import { ExprPrinter, Loaded } from './rule-text';

const RAW_BASE = { ll: 'll', network: 'nh', transport: 'th', inner: 'ih' } as const;

function field(e: PayloadExpr, l3: 'ip' | 'ip6' | undefined, l4: string | undefined): Loaded | undefined {
  if (e.base === 'network') {
    if ((l3 ?? (e.len === 4 ? 'ip' : undefined)) === 'ip' && e.len === 4 && (e.offset === 12 || e.offset === 16)) {
      return { text: `ip ${e.offset === 12 ? 'saddr' : 'daddr'}`, kind: 'ipv4_addr' };
    }
    if ((l3 ?? (e.len === 16 ? 'ip6' : undefined)) === 'ip6' && e.len === 16 && (e.offset === 8 || e.offset === 24)) {
      return { text: `ip6 ${e.offset === 8 ? 'saddr' : 'daddr'}`, kind: 'ipv6_addr' };
    }
  }
  if (e.base === 'll' && e.len === 6 && (e.offset === 0 || e.offset === 6)) {
    return { text: `ether ${e.offset === 0 ? 'daddr' : 'saddr'}`, kind: 'ether_addr' };
  }
  if (e.base === 'transport' && e.len === 1 && e.offset === 0 && l4 === 'ipv6-icmp') {
    return { text: 'icmpv6 type', kind: 'integer' };
  }
  if (e.base === 'transport' && e.len === 2 && (e.offset === 0 || e.offset === 2)) {
    return { text: `${l4 ?? 'th'} ${e.offset === 0 ? 'sport' : 'dport'}`, kind: 'inet_service' };
  }
  return undefined;
}

// A payload store (a checksum-fixing write) has no nft form nfkube prints.
export const payload: ExprPrinter<'payload'> = (e, s) => {
  if (e.dreg === undefined) return false;
  s.load(e.dreg, field(e, s.l3, s.l4) ?? { text: `@${RAW_BASE[e.base]},${e.offset * 8},${e.len * 8}`, kind: 'hex' });
  return true;
};
