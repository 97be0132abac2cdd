/** Peer sets: for each, the pods its selectors match and their addresses. A set is filed per
 * namespace it applies to, by its pod selector, so a pod event tests only the selectors that can
 * match it, and a namespace relabel only the namespaceSelector sets and that namespace's pods. */

import type { SetLedger } from '../delta-recorder';
import { sameLabels } from '../equality';
import type { PeerSet } from '../ir';
import { namespaceLabels } from '../objects';
import type { PeerSetSpec } from '../rules';
import { SelectorIndex, matches } from '../../../k8s/selector';
import { isV6 } from '../../../net/ip-text';
import { CountedSet } from './collections';
import type { HeldPod, PodIndex } from './pods';
import { ReferencedSets } from './referenced-sets';

interface PeerSetState {
  spec: PeerSetSpec;
  /** Policies referencing the set. */
  refs: number;
  members: Set<HeldPod>;
  ips: CountedSet;
  /** Namespaces whose index this set is filed in. */
  namespaces: Set<string>;
  /** The set as last reported (delta or state), until its addresses change: the initial load
   * reports every set twice, in the batch's delta and in `state()`, and sorting is its cost. */
  contents: PeerSet | undefined;
}

export class PeerSetIndex extends ReferencedSets<PeerSetState, PeerSet> {
  /** Per namespace: the sets whose pod selector applies there, by pod labels. */
  private readonly byNamespace = new Map<string, SelectorIndex<string>>();
  private readonly namespaceSelectorSets = new Set<string>();
  /** Namespace labels as last given; a namespace not known has only its name label. */
  private readonly namespaceLabelsByName = new Map<string, Record<string, string>>();
  /** Namespaces whose namespaceSelector matches have been evaluated (those that had pods). */
  private readonly activeNamespaces = new Set<string>();

  constructor(
    private readonly pods: PodIndex,
    ledger: SetLedger,
  ) {
    super(ledger);
  }

  // ---- pods and namespaces -----------------------------------------------------------------

  /** An eligible pod was filed: it joins the sets that match it. */
  podArrived(held: HeldPod): void {
    const pod = held.facts;
    this.activateNamespace(pod.namespace);
    for (const id of this.byNamespace.get(pod.namespace)?.candidates(pod.labels) ?? []) {
      const state = this.sets.get(id)!;
      if (matches(state.spec.podSelector, pod.labels)) this.addMember(state, held);
    }
  }

  /** An eligible pod is leaving: it leaves every set it is in. */
  podLeft(held: HeldPod): void {
    for (const id of held.peerSets) this.removeMember(this.sets.get(id)!, held);
  }

  relabelNamespace(ns: string, labels: Record<string, string>): void {
    if (sameLabels(this.labelsOf(ns), labels)) return;
    this.namespaceLabelsByName.set(ns, labels);
    if (!this.activeNamespaces.has(ns)) return;
    for (const id of this.namespaceSelectorSets) {
      const state = this.sets.get(id)!;
      const was = state.namespaces.has(ns);
      const now = matches(state.spec.namespaceSelector!, labels);
      if (was === now) continue;
      if (now) {
        this.file(state, ns);
        this.addMatchingPods(state, ns);
      } else {
        this.byNamespace.get(ns)!.remove(id);
        state.namespaces.delete(ns);
        for (const held of this.pods.inNamespace(ns)) this.removeMember(state, held);
      }
    }
  }

  private labelsOf(ns: string): Record<string, string> {
    return this.namespaceLabelsByName.get(ns) ?? namespaceLabels(ns);
  }

  /** Evaluates every namespaceSelector set against a namespace the first time it has pods. */
  private activateNamespace(ns: string): void {
    if (this.activeNamespaces.has(ns)) return;
    this.activeNamespaces.add(ns);
    const labels = this.labelsOf(ns);
    for (const id of this.namespaceSelectorSets) {
      const state = this.sets.get(id)!;
      if (matches(state.spec.namespaceSelector!, labels)) this.file(state, ns);
    }
  }

  // ---- references --------------------------------------------------------------------------

  /** A policy references the set: the first reference creates it with its members. */
  ref(spec: PeerSetSpec): void {
    if (this.counted(spec.id)) return;
    const state: PeerSetState = { spec, refs: 1, members: new Set(), ips: new CountedSet(), namespaces: new Set(), contents: undefined };
    this.sets.set(spec.id, state);
    const scope: Iterable<string> = spec.namespace !== null ? [spec.namespace] : this.activeNamespaces;
    if (spec.namespaceSelector) this.namespaceSelectorSets.add(spec.id);
    for (const ns of scope) {
      if (spec.namespaceSelector && !matches(spec.namespaceSelector, this.labelsOf(ns))) continue;
      this.file(state, ns);
      this.addMatchingPods(state, ns);
    }
  }

  protected override dropped(id: string, state: PeerSetState): void {
    for (const ns of state.namespaces) this.byNamespace.get(ns)?.remove(id);
    for (const held of state.members) held.peerSets = held.peerSets.filter((member) => member !== id);
    this.namespaceSelectorSets.delete(id);
  }

  contents(id: string): PeerSet {
    const s = this.sets.get(id)!;
    if (s.contents) return s.contents;
    const v4: string[] = [];
    const v6: string[] = [];
    for (const ip of s.ips.counts.keys()) (isV6(ip) ? v6 : v4).push(ip);
    return (s.contents = { id: s.spec.id, describe: s.spec.describe, v4: v4.sort(), v6: v6.sort() });
  }

  // ---- members -----------------------------------------------------------------------------

  private file(state: PeerSetState, ns: string): void {
    let index = this.byNamespace.get(ns);
    if (!index) this.byNamespace.set(ns, (index = new SelectorIndex()));
    index.add(state.spec.id, state.spec.podSelector);
    state.namespaces.add(ns);
  }

  /** Adds the pods of `ns` the set's pod selector matches. */
  private addMatchingPods(state: PeerSetState, ns: string): void {
    const selector = state.spec.podSelector;
    for (const held of this.pods.inNamespace(ns)) if (matches(selector, held.facts.labels)) this.addMember(state, held);
  }

  private addMember(state: PeerSetState, held: HeldPod): void {
    if (state.members.has(held)) return;
    const id = state.spec.id;
    const report = this.ledger.touch(id, true);
    state.members.add(held);
    held.peerSets = held.peerSets.concat(id);
    for (const ip of held.facts.v4) this.addIp(state, ip, report);
    for (const ip of held.facts.v6) this.addIp(state, ip, report);
  }

  private addIp(state: PeerSetState, ip: string, report: boolean): void {
    if (!state.ips.add(ip)) return;
    state.contents = undefined;
    if (report) this.ledger.changed(state.spec.id, ip, +1);
  }

  private removeMember(state: PeerSetState, held: HeldPod): void {
    if (!state.members.delete(held)) return;
    const id = state.spec.id;
    const report = this.ledger.touch(id, true);
    held.peerSets = held.peerSets.filter((member) => member !== id);
    for (const ip of held.facts.v4) this.removeIp(state, ip, report);
    for (const ip of held.facts.v6) this.removeIp(state, ip, report);
  }

  private removeIp(state: PeerSetState, ip: string, report: boolean): void {
    if (!state.ips.remove(ip)) return;
    state.contents = undefined;
    if (report) this.ledger.changed(state.spec.id, ip, -1);
  }
}
