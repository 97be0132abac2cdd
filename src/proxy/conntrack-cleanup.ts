/** Which conntrack entries a change of UDP endpoints leaves stale, and deleting them: kube-proxy's
 * conntrack cleanup (pkg/proxy/conntrack), over ctnetlink. UDP has no connection to end: a client
 * that keeps its source port (a resolver) keeps riding the entry that DNATs it to an endpoint
 * that is gone, or the un-NATed entry made while the service had no endpoint, until the entry
 * times out. */
import type { Logger } from 'pino';
import { ConntrackClient } from '../conntrack/client';
import type { CtEntry } from '../conntrack/codec';
import { IPPROTO_UDP } from '../net/protocols';
import type { IpFamily } from '../net/ip';

/** One UDP service port of one family as programmed: its destinations and endpoints. */
export interface UdpServicePort {
  fam: IpFamily;
  /** `ip port`: the cluster IP, external IPs and load-balancer IPs with the service port. */
  dsts: string[];
  nodePort?: number;
  /** `ip port` of the endpoints this node DNATs to. */
  endpoints: string[];
  /** Addresses of the serving endpoints anywhere (whatever the traffic policies and topology):
   * a flow DNATed to one of them is left alone by the reconcile, as by kube-proxy's. */
  serving: string[];
}

/** A selection of entries: UDP, original destination one of `dsts` (or the node port), and
 * either replied by `replySrc` (DNATed to it) or not DNATed at all. */
export interface StaleFlows {
  fam: IpFamily;
  dsts: string[];
  nodePort?: number;
  replySrc?: string;
  unNATed?: boolean;
}

export function staleFlows(old: UdpServicePort | undefined, now: UdpServicePort | undefined): StaleFlows[] {
  if (!old && !now) return [];
  const out: StaleFlows[] = [];
  if (old) {
    const kept = new Set(now?.endpoints ?? []);
    for (const ep of old.endpoints) if (!kept.has(ep)) out.push({ fam: old.fam, dsts: old.dsts, nodePort: old.nodePort, replySrc: ep });
    // Destinations the service no longer has: whatever flows they carry are stale.
    const still = new Set(now?.dsts ?? []);
    const gone = old.dsts.filter((d) => !still.has(d));
    if (gone.length > 0) for (const ep of old.endpoints) if (kept.has(ep)) out.push({ fam: old.fam, dsts: gone, replySrc: ep });
  }
  // A service that gains its first endpoint: entries made while it had none were never DNATed.
  if (now && now.endpoints.length > 0 && (!old || old.endpoints.length === 0)) out.push({ fam: now.fam, dsts: now.dsts, nodePort: now.nodePort, unNATed: true });
  return out;
}

export function isStale(e: CtEntry, s: StaleFlows): boolean {
  if (e.family !== s.fam || e.orig.proto !== IPPROTO_UDP) return false;
  const dst = `${e.orig.dst} ${e.orig.dstPort}`;
  const toService = s.dsts.includes(dst) || (s.nodePort !== undefined && e.orig.dstPort === s.nodePort);
  if (!toService) return false;
  const replied = `${e.reply.src} ${e.reply.srcPort}`;
  if (s.unNATed) return e.reply.src === e.orig.dst && e.reply.srcPort === e.orig.dstPort;
  return replied === s.replySrc;
}

/** Deletes the entries the selections name: one dump per family involved, one batch of deletes.
 * Selections are indexed by destination, so the cost is one lookup per entry dumped. */
export async function cleanStaleFlows(client: ConntrackClient, selections: StaleFlows[], logger?: Logger): Promise<number> {
  if (selections.length === 0) return 0;
  let deleted = 0;
  for (const fam of ['v4', 'v6'] as const) {
    const byDst = new Map<string, StaleFlows[]>();
    const byNodePort = new Map<number, StaleFlows[]>();
    const add = <K>(m: Map<K, StaleFlows[]>, k: K, s: StaleFlows) => (m.get(k) ?? m.set(k, []).get(k)!).push(s);
    for (const s of selections) {
      if (s.fam !== fam) continue;
      for (const d of s.dsts) add(byDst, d, s);
      if (s.nodePort !== undefined) add(byNodePort, s.nodePort, s);
    }
    if (byDst.size === 0 && byNodePort.size === 0) continue;
    const entries = await client.dump(fam);
    const stale = entries.filter((e) => {
      if (e.orig.proto !== IPPROTO_UDP) return false;
      return anyStale(e, byDst.get(`${e.orig.dst} ${e.orig.dstPort}`)) || (e.orig.dstPort !== undefined && anyStale(e, byNodePort.get(e.orig.dstPort)));
    });
    deleted += await deleteEntries(client, stale, logger);
  }
  return deleted;
}

async function deleteEntries(client: ConntrackClient, entries: CtEntry[], logger?: Logger): Promise<number> {
  const r = await client.delete(entries);
  if (r.failed.length > 0) logger?.warn({ failed: r.failed.length, code: r.failed[0].code }, 'some stale conntrack entries could not be deleted');
  return r.deleted;
}

function anyStale(e: CtEntry, selections: StaleFlows[] | undefined): boolean {
  return selections !== undefined && selections.some((s) => isStale(e, s));
}

/** Which UDP entries the whole table of service ports leaves stale, whatever happened before this
 * process (kube-proxy's conntrack reconciler, pkg/proxy/conntrack/cleanup.go): an entry to a
 * service address and port, or to a node port, whose reply source is not a serving endpoint of a
 * service port that has one. A service port without serving endpoints leaves its entries alone. */
export function reconcileStale(entries: readonly CtEntry[], ports: Iterable<UdpServicePort>, fam: IpFamily): CtEntry[] {
  const byDst = new Map<string, Set<string>>();
  const byNodePort = new Map<number, Set<string>>();
  for (const p of ports) {
    if (p.fam !== fam || p.serving.length === 0) continue;
    const serving = new Set(p.serving);
    for (const d of p.dsts) byDst.set(d, serving);
    if (p.nodePort !== undefined) byNodePort.set(p.nodePort, serving);
  }
  return entries.filter((e) => {
    if (e.family !== fam || e.orig.proto !== IPPROTO_UDP || e.orig.dstPort === undefined) return false;
    const toService = byDst.get(`${e.orig.dst} ${e.orig.dstPort}`);
    if (toService && !toService.has(e.reply.src)) return true;
    const toNodePort = byNodePort.get(e.orig.dstPort);
    return toNodePort !== undefined && !toNodePort.has(e.reply.src);
  });
}

/** Dumps each family's entries and deletes what reconcileStale finds. */
export async function reconcileConntrack(client: ConntrackClient, ports: readonly UdpServicePort[], logger?: Logger): Promise<number> {
  let deleted = 0;
  for (const fam of ['v4', 'v6'] as const) {
    if (!ports.some((p) => p.fam === fam && p.serving.length > 0)) continue;
    deleted += await deleteEntries(client, reconcileStale(await client.dump(fam), ports, fam), logger);
  }
  return deleted;
}
