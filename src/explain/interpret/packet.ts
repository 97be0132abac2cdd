/** The headers of a flow's first packet, and which of their bytes a flow defines: the protocol
 * (next header) and the addresses of the network header, the ports of the transport header.
 * The rest (TTL 64, length 40, no TCP flags) is made up and must never be matched on. */
import { ipAddr } from '../../net/ip-bytes';
import { IPPROTO } from '../../net/protocols';
import type { FlowPacket } from '../flow';

export interface PacketHeaders {
  network: Buffer;
  transport: Buffer;
}

export function packetHeaders(p: FlowPacket): PacketHeaders {
  const proto = IPPROTO[p.protocol];
  let network: Buffer;
  if (p.family === 'ipv4') {
    network = Buffer.alloc(20);
    network[0] = 0x45;
    network.writeUInt16BE(40, 2);
    network[8] = 64;
    network[9] = proto;
    ipAddr(p.src).copy(network, 12);
    ipAddr(p.dst).copy(network, 16);
  } else {
    network = Buffer.alloc(40);
    network[0] = 0x60;
    network.writeUInt16BE(20, 4);
    network[6] = proto;
    network[7] = 64;
    ipAddr(p.src).copy(network, 8);
    ipAddr(p.dst).copy(network, 24);
  }
  const transport = Buffer.alloc(20);
  transport.writeUInt16BE(p.sport, 0);
  transport.writeUInt16BE(p.dport, 2);
  return { network, transport };
}

/** The header bytes a flow defines, [start, end) per base and family. */
const KNOWN_BYTES: Record<'ipv4' | 'ipv6', Record<'network' | 'transport', [number, number][]>> = {
  ipv4: { network: [[9, 10], [12, 20]], transport: [[0, 4]] },
  ipv6: { network: [[6, 7], [8, 40]], transport: [[0, 4]] },
};

const FIELD_NAMES: Record<string, Record<string, string>> = {
  ipv4: { 0: 'ip version/hdrlength', 1: 'ip dscp/ecn', 2: 'ip length', 4: 'ip id', 6: 'ip frag-off', 8: 'ip ttl', 10: 'ip checksum' },
  ipv6: { 0: 'ip6 version/dscp', 1: 'ip6 flowlabel', 4: 'ip6 length', 7: 'ip6 hoplimit' },
  transport: { 4: 'tcp sequence', 8: 'tcp ackseq', 12: 'tcp doff/flags', 13: 'tcp flags', 14: 'tcp window', 16: 'tcp checksum', 18: 'tcp urgptr' },
};

export function definedByFlow(family: 'ipv4' | 'ipv6', base: 'network' | 'transport', offset: number, len: number): boolean {
  return KNOWN_BYTES[family][base].some(([start, end]) => offset >= start && offset + len <= end);
}

/** The field a payload load reads, for the error: its nft name where it is a common one. */
export function fieldName(family: 'ipv4' | 'ipv6', base: string, offset: number, len: number): string {
  const name = FIELD_NAMES[base === 'network' ? family : 'transport']?.[offset];
  return `${name ? `${name}, ` : ''}${base} header bytes ${offset}-${offset + len - 1}`;
}
