/** The headers of a logged packet: IPv4 or IPv6 (through its extension headers), then TCP, UDP
 * or SCTP ports, or the ICMP type and code. The copy is a prefix of the packet and comes from
 * the kernel unasked: a network header that does not fit is a DecodeError; a transport header
 * cut off by the copy range, or behind a non-first fragment, is simply absent. */
import { DecodeError } from '../netlink/errors';
import { formatIPv4, formatIPv6 } from '../net/ip-bytes';
import { IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_SCTP, IPPROTO_TCP, IPPROTO_UDP } from '../net/protocols';

export type TransportName = 'tcp' | 'udp' | 'sctp' | 'icmp' | 'icmpv6';

export interface PacketHeaders {
  family: 'ipv4' | 'ipv6';
  src: string;
  dst: string;
  /** IP protocol number of the transport header (after IPv6 extension headers). */
  protocol: number;
  /** Its name, when nfkube decodes it. */
  transport?: TransportName;
  sport?: number;
  dport?: number;
  icmpType?: number;
  icmpCode?: number;
  /** Total packet length as the IP header says. */
  length: number;
  /** A non-first fragment: no transport header in it. */
  fragment?: boolean;
}

const PROTOCOLS: Record<number, TransportName> = { [IPPROTO_ICMP]: 'icmp', [IPPROTO_TCP]: 'tcp', [IPPROTO_UDP]: 'udp', [IPPROTO_ICMPV6]: 'icmpv6', [IPPROTO_SCTP]: 'sctp' };

// IPv6 extension headers walked to the transport header (RFC 8200 4.1, AH is RFC 4302).
const IPV6_HOPOPTS = 0;
const IPV6_ROUTING = 43;
const IPV6_FRAGMENT = 44;
const IPV6_AH = 51;
const IPV6_DSTOPTS = 60;
/** More headers than this is hostile, not IPv6 any host sends. */
const MAX_EXTENSION_HEADERS = 16;

export function decodeHeaders(b: Buffer): PacketHeaders {
  if (b.length < 1) throw new DecodeError('logged packet is empty');
  const version = b[0] >> 4;
  if (version === 4) return decodeIPv4(b);
  if (version === 6) return decodeIPv6(b);
  throw new DecodeError(`logged packet has IP version ${version}`);
}

function decodeIPv4(b: Buffer): PacketHeaders {
  if (b.length < 20) throw new DecodeError(`IPv4 header truncated: ${b.length} bytes`);
  const ihl = (b[0] & 0x0f) * 4;
  if (ihl < 20) throw new DecodeError(`IPv4 header length ${ihl} is below 20`);
  const h: PacketHeaders = {
    family: 'ipv4',
    src: formatIPv4(b.subarray(12, 16)),
    dst: formatIPv4(b.subarray(16, 20)),
    protocol: b[9],
    length: b.readUInt16BE(2),
  };
  if (PROTOCOLS[h.protocol]) h.transport = PROTOCOLS[h.protocol];
  if ((b.readUInt16BE(6) & 0x1fff) !== 0) h.fragment = true;
  else if (ihl <= b.length) transport(b.subarray(ihl), h);
  return h;
}

function decodeIPv6(b: Buffer): PacketHeaders {
  if (b.length < 40) throw new DecodeError(`IPv6 header truncated: ${b.length} bytes`);
  const h: PacketHeaders = {
    family: 'ipv6',
    src: formatIPv6(b.subarray(8, 24)),
    dst: formatIPv6(b.subarray(24, 40)),
    protocol: b[6],
    length: 40 + b.readUInt16BE(4),
  };
  let at = 40;
  for (let n = 0; ; n++) {
    const next = h.protocol;
    if (next !== IPV6_HOPOPTS && next !== IPV6_ROUTING && next !== IPV6_FRAGMENT && next !== IPV6_AH && next !== IPV6_DSTOPTS) break;
    if (n >= MAX_EXTENSION_HEADERS) throw new DecodeError(`IPv6 packet has more than ${MAX_EXTENSION_HEADERS} extension headers`);
    // The copy ends inside the extension headers: protocol stays the header it ends in.
    if (at + 8 > b.length) return h;
    h.protocol = b[at];
    if (next === IPV6_FRAGMENT) {
      if ((b.readUInt16BE(at + 2) & 0xfff8) !== 0) h.fragment = true;
      at += 8;
    } else if (next === IPV6_AH) at += (b[at + 1] + 2) * 4;
    else at += (b[at + 1] + 1) * 8;
  }
  if (PROTOCOLS[h.protocol]) h.transport = PROTOCOLS[h.protocol];
  if (!h.fragment && at <= b.length) transport(b.subarray(at), h);
  return h;
}

/** Ports or ICMP type/code, when the copy holds them. */
function transport(t: Buffer, h: PacketHeaders): void {
  switch (h.transport) {
    case 'tcp':
    case 'udp':
    case 'sctp':
      if (t.length < 4) return;
      h.sport = t.readUInt16BE(0);
      h.dport = t.readUInt16BE(2);
      return;
    case 'icmp':
    case 'icmpv6':
      if (t.length < 2) return;
      h.icmpType = t[0];
      h.icmpCode = t[1];
      return;
  }
}
