/** Spoofed sources: a packet that carries a local pod's source address must come in by the
 * interface the node routes that address to (the pod's host-side veth in a routed topology).
 *
 *   prerouting_source  hook prerouting prio -150 (after conntrack, before any NAT or policy):
 *                      ip saddr @local_src_v4 fib saddr . iif oif missing goto spoofed_source
 *                      ip6 saddr @local_src_v6 fib saddr . iif oif missing goto spoofed_source
 *   spoofed_source:    limit ... log prefix "nfkube spoofed" group G   (with --log-drops)
 *                      counter drop
 *
 * The kernel's own route to each pod address is the binding: nothing is learned or cached, a
 * pod's route changing is followed at once, and IPv6 (which has no rp_filter) is covered. It
 * runs before the forward hook, so explain's model of the forward chains is unchanged. The sets
 * hold every local pod's addresses (isolated or not), one element per address.
 *
 * On a bridge the route to every pod is the bridge itself, so the route does not tell pods on one
 * bridge apart: there each address is also bound to the pod's MAC, the last one the node's
 * neighbour table had for that address (src/policy/neighbour-watch.ts):
 *                      ip saddr @bound_src_v4 ip saddr . ether saddr != @local_mac_v4 goto spoofed_source
 * The binding follows the table (a pod's sandbox recreated with a new veth keeps its address) and
 * outlives its entry's expiry. Moving the entry takes a forged ARP or NDP packet, that is an
 * AF_PACKET socket, which could forge the Ethernet source as well: this stops raw IP sockets.
 * Spoofed packets are always dropped, never rejected (an ICMP error
 * would go to the pod whose address was forged) and never let through by audit mode. */
import * as b from '../../nft/build';
import { Expr, SetElement } from '../../nft/types';
import { PodInfo } from '../../k8s/model';
import { podFacts, podKey } from '../engine/objects';
import type { DesiredModel } from '../../pipeline/desired-model';
import { elementKey, RulesetModel } from '../../ruleset/model';
import { DropLogOptions, SPOOFED_LOG_PREFIX } from './tail';
import { ipv4, ipv6 } from '../../net/ip-bytes';
import { concatKey } from '../../nft/values';

export const SOURCE_CHAIN = 'prerouting_source';
export const SPOOFED_CHAIN = 'spoofed_source';
export const SOURCE_SETS = { v4: 'local_src_v4', v6: 'local_src_v6' } as const;
/** Local pod addresses bound to a MAC (key: the address). */
export const BOUND_SETS = { v4: 'bound_src_v4', v6: 'bound_src_v6' } as const;
/** The bindings themselves (key: address . ether_addr). */
export const MAC_SETS = { v4: 'local_mac_v4', v6: 'local_mac_v6' } as const;

/** The rules of prerouting_source, one per family. */
export function sourceCheckRules(): Expr[][] {
  return [
    [...b.matchAddrInSet('ip saddr', SOURCE_SETS.v4), ...b.sourceRouteMissing(), b.goto(SPOOFED_CHAIN)],
    [...b.matchAddrInSet('ip6 saddr', SOURCE_SETS.v6), ...b.sourceRouteMissing(), b.goto(SPOOFED_CHAIN)],
    [...b.matchAddrInSet('ip saddr', BOUND_SETS.v4), ...b.addrMacNotInSet('ip saddr', MAC_SETS.v4, true), b.goto(SPOOFED_CHAIN)],
    [...b.matchAddrInSet('ip6 saddr', BOUND_SETS.v6), ...b.addrMacNotInSet('ip6 saddr', MAC_SETS.v6, true), b.goto(SPOOFED_CHAIN)],
  ];
}

/** The rules of spoofed_source: its log (with --log-drops), then the counted drop. */
export function spoofedRules(log: DropLogOptions | undefined): Expr[][] {
  const rules: Expr[][] = [];
  if (log) rules.push([...(log.rate > 0 ? [b.limit(log.rate, log.burst)] : []), b.log(log.group, SPOOFED_LOG_PREFIX)]);
  rules.push([b.counter(), b.drop()]);
  return rules;
}

/** The local pods' addresses in the source sets, kept current pod by pod, as elements of the
 * desired model claimed by their pods: two pods may briefly share an address (one leaving, one
 * arriving), and an element stays while one of them claims it. Kept small (50k local pods hold
 * 100k elements): entries are `set key` strings, the claims are on the elements. */
export class LocalSources {
  /** Pod key -> the entries (`set key`) it claims. */
  private readonly byPod = new Map<string, string[]>();
  /** Entry -> the MAC the node's neighbour table has for its address now (any address). */
  private readonly neighbours = new Map<string, NeighbourMac>();
  /** Entry -> the MAC its address is bound to (claimed addresses only). */
  private readonly bound = new Map<string, NeighbourMac>();

  constructor(private readonly nodeName: string) {}

  /** A pod was added or changed: its elements in the desired sets (recorded in its current
   * scope); returns whether they changed. */
  upsert(pod: PodInfo, desired: DesiredModel): boolean {
    const facts = podFacts(pod, this.nodeName);
    const now: SetElement[] = facts.local ? [...facts.v4.map((a) => ({ key: ipv4(a) })), ...facts.v6.map((a) => ({ key: ipv6(a) }))] : [];
    return this.put(facts.key, now, desired);
  }

  /** A pod was deleted; returns whether the sets changed. */
  delete(pod: { namespace: string; name: string }, desired: DesiredModel): boolean {
    return this.put(podKey(pod), [], desired);
  }

  /** The node's neighbour table has `mac` for `address` now (undefined: no usable entry). Binds a
   * claimed address to it (an entry gone keeps the last binding); returns whether the sets changed. */
  neighbour(address: string, mac: Buffer | undefined, desired: DesiredModel): boolean {
    const bytes = address.includes(':') ? ipv6(address) : ipv4(address);
    const set = bytes.length === 4 ? SOURCE_SETS.v4 : SOURCE_SETS.v6;
    const key = elementKey({ key: bytes });
    const entry = `${set} ${key}`;
    if (!mac) {
      this.neighbours.delete(entry);
      return false;
    }
    this.neighbours.set(entry, { address: bytes, mac });
    if (desired.holderOf(set, key) === undefined || this.bound.get(entry)?.mac.equals(mac)) return false;
    this.unbind(entry, desired);
    return this.bind(entry, desired);
  }

  /** Binds a claimed entry not bound yet to its neighbour's MAC, when one is known. */
  private bind(entry: string, desired: DesiredModel): boolean {
    const seen = this.neighbours.get(entry);
    if (!seen || this.bound.has(entry)) return false;
    this.bound.set(entry, seen);
    for (const [set, element] of bindingElements(seen)) desired.putElement(set, elementKey(element), element);
    return true;
  }

  /** Drops an entry's binding (no pod claims it any more, or its MAC moved). */
  private unbind(entry: string, desired: DesiredModel): void {
    const was = this.bound.get(entry);
    if (!was) return;
    this.bound.delete(entry);
    for (const [set, element] of bindingElements(was)) desired.deleteElement(set, elementKey(element));
  }

  private put(pod: string, now: SetElement[], desired: DesiredModel): boolean {
    const before = this.byPod.get(pod) ?? [];
    const entries = now.map((e) => `${e.key.length === 4 ? SOURCE_SETS.v4 : SOURCE_SETS.v6} ${elementKey(e)}`);
    let changed = false;
    for (const entry of before) {
      if (entries.includes(entry)) continue;
      const [set, key] = entry.split(' ');
      if (!desired.releaseElement(set, key, pod, () => ({ key: Buffer.from(key, 'hex') }))) continue;
      this.unbind(entry, desired);
      changed = true;
    }
    for (let i = 0; i < now.length; i++) {
      const entry = entries[i];
      if (before.includes(entry)) continue;
      const [set, key] = entry.split(' ');
      if (!desired.claimElement(set, key, pod, now[i])) continue;
      this.bind(entry, desired);
      changed = true;
    }
    if (entries.length) this.byPod.set(pod, entries);
    else this.byPod.delete(pod);
    return changed;
  }
}

/** An address and the MAC the neighbour table has for it. */
interface NeighbourMac {
  address: Buffer;
  mac: Buffer;
}

/** A binding's elements: the address in its bound set, address . MAC in its MAC set. */
function bindingElements(n: NeighbourMac): [string, SetElement][] {
  const fam = n.address.length === 4 ? 'v4' : 'v6';
  return [
    [BOUND_SETS[fam], { key: n.address }],
    [MAC_SETS[fam], { key: concatKey([n.address, n.mac]) }],
  ];
}

/** verify and status build the desired table from the cluster alone, but the MAC bindings are
 * the agent's record of what the node's neighbour table showed: the kernel's bindings are taken
 * as desired where they bind a local pod's address once, in both sets. Any other (a deleted
 * pod's, a second MAC for one address) stays a difference. */
export function adoptBindings(desired: RulesetModel, kernel: RulesetModel): void {
  for (const fam of ['v4', 'v6'] as const) {
    const local = desired.sets.get(SOURCE_SETS[fam]);
    const bound = desired.sets.get(BOUND_SETS[fam]);
    const macs = desired.sets.get(MAC_SETS[fam]);
    const kernelBound = kernel.sets.get(BOUND_SETS[fam]);
    const kernelMacs = kernel.sets.get(MAC_SETS[fam]);
    if (!local || !bound || !macs || !kernelBound || !kernelMacs) continue;
    const addrLen = fam === 'v4' ? 4 : 16;
    for (const e of kernelMacs.elements.values()) {
      const addr = elementKey({ key: e.key.subarray(0, addrLen) });
      const boundElement = kernelBound.elements.get(addr);
      if (!boundElement || !local.elements.has(addr) || bound.elements.has(addr)) continue;
      bound.elements.set(addr, boundElement);
      macs.elements.set(elementKey(e), e);
    }
  }
}
