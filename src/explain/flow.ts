/** The flow `nfkube explain` is asked about: one packet opening a connection (ct state new) from
 * SRC to DST, per address family both ends have. */
import { canonicalIp } from '../net/ip';
import type { PodInfo } from '../k8s/model';

export type FlowProtocol = 'tcp' | 'udp' | 'sctp';

export interface FlowPacket {
  family: 'ipv4' | 'ipv6';
  src: string;
  dst: string;
  protocol: FlowProtocol;
  /** Destination port; 0 when none was given (only port-independent rules can allow it). */
  dport: number;
  sport: number;
}

/** SRC or DST as given: a pod (`namespace/name`) or an address. */
export interface Endpoint {
  text: string;
  pod?: string;
  v4: string[];
  v6: string[];
}

export function resolveEndpoint(text: string, pods: ReadonlyMap<string, Readonly<PodInfo>>): Endpoint {
  const ip = canonicalIp(text);
  if (ip) return { text, v4: ip.family === 'v4' ? [ip.text] : [], v6: ip.family === 'v6' ? [ip.text] : [] };
  const pod = pods.get(text);
  if (!pod) throw new Error(`"${text}" is neither an address nor a known pod (namespace/name)`);
  const v4: string[] = [];
  const v6: string[] = [];
  for (const a of pod.ips) {
    const c = canonicalIp(a);
    if (c) (c.family === 'v4' ? v4 : v6).push(c.text);
  }
  if (v4.length + v6.length === 0) throw new Error(`pod ${text} has no address (status.podIPs)`);
  return { text, pod: text, v4, v6 };
}

/** One packet per family both endpoints have. */
export function flowPackets(src: Endpoint, dst: Endpoint, protocol: FlowProtocol, dport: number): FlowPacket[] {
  const out: FlowPacket[] = [];
  if (src.v4.length > 0 && dst.v4.length > 0) out.push({ family: 'ipv4', src: src.v4[0], dst: dst.v4[0], protocol, dport, sport: 40000 });
  if (src.v6.length > 0 && dst.v6.length > 0) out.push({ family: 'ipv6', src: src.v6[0], dst: dst.v6[0], protocol, dport, sport: 40000 });
  if (out.length === 0) throw new Error(`${src.text} and ${dst.text} share no address family`);
  return out;
}
