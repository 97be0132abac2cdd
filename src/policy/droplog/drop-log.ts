/** One pino line per logged drop: which pod's default deny caught it, in which direction, the
 * source and destination (a pod's `namespace/name` when the address is a pod's, else the
 * address), the protocol and ports (or ICMP type), and the policies that select the pod, none of
 * which allowed it. In audit mode the same line says the packet was let through. */
import type { Logger } from 'pino';
import { PolicyModes, namespaceOf, type DenyAction } from '../modes';
import type { Direction } from '../engine/ir';
import { parseDropLogPrefix, SPOOFED_LOG_PREFIX } from '../render/tail';
import { CLUSTER_POLICY_PREFIX, parseClusterLogPrefix } from '../cluster/labels';
import { DecodeError } from '../../netlink/errors';
import { NflogPacket } from '../../nflog/codec';
import { ClusterView } from './cluster-view';
import { decodeHeaders, PacketHeaders } from '../../nflog/headers';
import { DropLogMetrics } from './metrics';

export interface DropLogOptions {
  view: ClusterView;
  modes: PolicyModes;
  denyAction: DenyAction;
  logger: Logger;
  metrics?: DropLogMetrics;
  /** Keeps the recent records for /drops (a DropRing, which imports this module's DropRecord). */
  ring?: { push(drop: DropRecord): void };
}

/** The fields of one drop line (also what tests and the demo read). */
export interface DropRecord {
  verdict: DenyAction | 'audit';
  direction: Direction;
  /** The pod whose default deny matched. */
  pod: string;
  src: string;
  dst: string;
  srcAddr: string;
  dstAddr: string;
  protocol: string;
  sport?: number;
  dport?: number;
  icmpType?: number;
  icmpCode?: number;
  /** Policies selecting the pod in that direction; none allowed the packet. */
  policies: string[];
  /** Set when a ClusterNetworkPolicy rule denied it (then `policies` is that policy,
   * `clusternetworkpolicy/NAME`): the rule's name, or `#index` in its direction. */
  rule?: string;
  /** Set when the packet was dropped before any policy: it carried the address of `pod` (a local
   * pod) as its source but came in by another interface than the route to `pod`. */
  reason?: 'spoofed source';
  /** With `reason`: the index of the interface it came in on. */
  inIfindex?: number;
}

export class DropLog {
  constructor(private readonly opts: DropLogOptions) {}

  /** Turns one logged packet into a record; 'unknown' when no combination chain of this agent
   * logged it or its address is no local pod's, 'decode' when its headers do not decode. The
   * chain is shared by the pods isolated by the same policies: the pod is the one at the
   * packet's destination (ingress) or source (egress) address. */
  record(p: NflogPacket): DropRecord | 'unknown' | 'decode' {
    const spoofed = p.prefix === SPOOFED_LOG_PREFIX;
    const tier = parseClusterLogPrefix(p.prefix);
    const chain = spoofed ? ({ direction: 'egress' } as const) : (tier ?? parseDropLogPrefix(p.prefix));
    if (!chain) return 'unknown';
    if (!p.payload) return 'decode';
    let h: PacketHeaders;
    try {
      h = decodeHeaders(p.payload);
    } catch (err) {
      if (err instanceof DecodeError) return 'decode';
      throw err;
    }
    const view = this.opts.view;
    const pod = view.localPodAt(chain.direction === 'ingress' ? h.dst : h.src);
    if (!pod) return 'unknown';
    if (spoofed) return { verdict: 'drop', direction: 'egress', pod, src: pod, dst: view.podAt(h.dst) ?? h.dst, srcAddr: h.src, dstAddr: h.dst, protocol: h.transport ?? String(h.protocol), ...ports(h), policies: [], reason: 'spoofed source', inIfindex: p.indev };
    const audit = this.opts.modes.mode(namespaceOf(pod)) === 'audit';
    const r: DropRecord = {
      verdict: audit ? 'audit' : this.opts.denyAction,
      direction: chain.direction,
      pod,
      src: view.podAt(h.src) ?? h.src,
      dst: view.podAt(h.dst) ?? h.dst,
      srcAddr: h.src,
      dstAddr: h.dst,
      protocol: h.transport ?? String(h.protocol),
      policies: view.policiesFor(pod, chain.direction),
      ...ports(h),
    };
    if (tier) {
      const named = view.clusterRule(tier.policyId, tier.direction, tier.index);
      r.policies = [named?.policy ?? `${CLUSTER_POLICY_PREFIX}(unknown ${tier.policyId})`];
      r.rule = named?.rule ?? `#${tier.index}`;
    }
    return r;
  }

  /** Logs and counts one packet from the subscription. */
  handle(p: NflogPacket): void {
    const r = this.record(p);
    if (typeof r === 'string') {
      this.opts.metrics?.countLost(r);
      return;
    }
    const slash = r.pod.indexOf('/');
    this.opts.metrics?.countLogged(r.pod.slice(0, slash), r.pod.slice(slash + 1), r.direction, r.verdict);
    this.opts.ring?.push(r);
    this.opts.logger.info({ drop: r }, r.verdict === 'audit' ? `audit: ${describe(r)} would be denied; allowed` : `denied: ${describe(r)}`);
  }
}

/** The ports or ICMP type and code of a record, as its headers have them. */
function ports(h: PacketHeaders): Pick<DropRecord, 'sport' | 'dport' | 'icmpType' | 'icmpCode'> {
  if (h.sport !== undefined) return { sport: h.sport, dport: h.dport };
  if (h.icmpType !== undefined) return { icmpType: h.icmpType, icmpCode: h.icmpCode };
  return {};
}

/** `tcp x/a:41000 -> y/b:80 (ingress of y/b; policies y/deny-all)`, or for a spoofed source
 * `udp x/a:5000 -> y/b:80 (spoofed source: x/a's address came in on interface #7)` */
export function describe(r: DropRecord): string {
  const port = (who: string, n?: number) => (n === undefined ? who : who.includes(':') ? `[${who}]:${n}` : `${who}:${n}`);
  const what = r.icmpType !== undefined ? `${r.protocol} type ${r.icmpType} code ${r.icmpCode}` : r.protocol;
  if (r.reason) return `${what} ${port(r.src, r.sport)} -> ${port(r.dst, r.dport)} (${r.reason}: ${r.pod}'s address came in on interface #${r.inIfindex ?? 'unknown'})`;
  if (r.rule !== undefined) return `${what} ${port(r.src, r.sport)} -> ${port(r.dst, r.dport)} (${r.direction} of ${r.pod}; denied by ${r.policies.join(', ')} rule ${r.rule})`;
  const policies = r.policies.length > 0 ? r.policies.join(', ') : 'none';
  return `${what} ${port(r.src, r.sport)} -> ${port(r.dst, r.dport)} (${r.direction} of ${r.pod}; selected by ${policies})`;
}
