/** The incremental policy engine: keeps the compiled intent for one node up to date, event by
 * event, and answers each event with the net change to that intent (a PolicyDelta).
 *
 * Work per event is proportional to what the event touches: a pod event tests only the
 * selectors filed under its namespace and labels (SelectorIndex), a namespace relabel only the
 * namespaceSelector peers and that namespace's pods, a policy change only that policy's targets
 * and newly needed sets. Nothing iterates the cluster. `state()` equals `compileFull` of the same
 * objects (the property tests hold it to that). */

import type { NamespaceInfo, NetworkPolicyInfo, PodInfo } from '../k8s/model';
import {
  emptyDelta,
  type CompiledPolicy,
  type IpBlockSet,
  type NamedPortSet,
  type PeerSet,
  type PolicyDelta,
  type PolicyIR,
  type PortTriple,
  type Target,
} from './ir';
import {
  compareTriples,
  namespaceLabels,
  podFacts,
  podKey,
  podTriples,
  shortId,
  tripleFromKey,
  tripleKey,
  type PodFacts,
} from './objects';
import { compilePolicy, type NamedPortSetSpec, type PeerSetSpec, type PolicyPlan } from './rules';
import { SelectorIndex, matches } from './selector';

/** Multiset of strings: an element is in the set while its count is positive (two pods may
 * briefly share an address; removing one must not remove the address). */
class CountedSet {
  readonly counts = new Map<string, number>();
  /** True when the element became present. */
  add(key: string): boolean {
    const n = this.counts.get(key) ?? 0;
    this.counts.set(key, n + 1);
    return n === 0;
  }
  /** True when the element became absent. */
  remove(key: string): boolean {
    const n = this.counts.get(key) ?? 0;
    if (n <= 1) {
      this.counts.delete(key);
      return n === 1;
    }
    this.counts.set(key, n - 1);
    return false;
  }
}

/** A pod as the engine holds it: its facts (replaced, never changed) and the peer sets it is a
 * member of, by id in joining order. A pod is in few sets: a list, replaced when it changes
 * (so it can be iterated while members leave, and has no spare room). */
interface HeldPod {
  readonly facts: PodFacts;
  peerSets: readonly string[];
}

const NO_PEER_SETS: readonly string[] = [];

interface PeerSetState {
  spec: PeerSetSpec;
  refs: number;
  members: Set<HeldPod>;
  ips: CountedSet;
  /** Namespaces whose peer index this set is filed in. */
  namespaces: Set<string>;
  /** The set as last reported (delta or state), until its addresses change: the initial load
   * reports every set twice, in the batch's delta and in `state()`, and sorting is its cost. */
  contents: PeerSet | undefined;
}

interface NamedSetState {
  spec: NamedPortSetSpec;
  refs: number;
  triples: CountedSet;
}

/** Net changes of one engine call; turned into a PolicyDelta by `finish`. One recorder serves
 * every call and is emptied after each: a call uses few of its maps, and making seven new maps
 * per event cost more than emptying those few. */
class Recorder {
  readonly targetsBefore = new Map<string, Target | undefined>();
  readonly policiesBefore = new Map<string, CompiledPolicy | undefined>();
  readonly peerSetsExisted = new Map<string, boolean>();
  readonly peerElements = new Map<string, Map<string, number>>();
  readonly ipBlocksExisted = new Map<string, boolean>();
  readonly namedExisted = new Map<string, boolean>();
  readonly namedElements = new Map<string, Map<string, number>>();
  private readonly maps: ReadonlyArray<Map<string, unknown>> = [
    this.targetsBefore,
    this.policiesBefore,
    this.peerSetsExisted,
    this.peerElements,
    this.ipBlocksExisted,
    this.namedExisted,
    this.namedElements,
  ];

  /** Empties the maps (clearing an empty map is not free). */
  reset(): void {
    for (const map of this.maps) if (map.size > 0) map.clear();
  }
}

function bump(map: Map<string, Map<string, number>>, set: string, element: string, by: number): void {
  let m = map.get(set);
  if (!m) map.set(set, (m = new Map()));
  const n = (m.get(element) ?? 0) + by;
  if (n === 0) m.delete(element);
  else m.set(element, n);
}

function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let s = map.get(key);
  if (!s) map.set(key, (s = new Set()));
  s.add(value);
}

function removeFrom<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const s = map.get(key);
  if (!s) return;
  s.delete(value);
  if (s.size === 0) map.delete(key);
}

const isV6 = (ip: string): boolean => ip.includes(':');

/** What a call nested in another returns (its changes are in the outer call's delta): one
 * shared, frozen value, so a batch of many events does not allocate one per event. */
const NESTED_DELTA: PolicyDelta = deepFreeze(emptyDelta());

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) if (typeof child === 'object' && child !== null) deepFreeze(child);
  return Object.freeze(value);
}

export class PolicyEngine {
  private readonly namespaceLabelsByName = new Map<string, Record<string, string>>();
  private readonly pods = new Map<string, HeldPod>();
  /** Eligible pods per namespace, and eligible pods on this node per namespace. The indexes
   * hold what `pods` holds, so scans need no lookups. */
  private readonly podsByNamespace = new Map<string, Set<HeldPod>>();
  private readonly localPodsByNamespace = new Map<string, Set<PodFacts>>();
  /** Eligible pods having a container port of that name. Only egress named-port sets read it,
   * and many clusters have none: built when the first one is, kept up to date from then on. */
  private podsByPortName: Map<string, Set<PodFacts>> | undefined;

  private readonly plans = new Map<string, PolicyPlan>();
  /** Policies compiled with input errors: each isolates what it selects and its broken parts
   * allow nothing (fail closed). */
  private failedClosed = 0;
  /** Each policy as last applied. Inputs are not modified once passed in (pods' labels are kept
   * the same way), so a policy is serialized for comparison only when it comes again. */
  private readonly policyInputs = new Map<string, NetworkPolicyInfo>();
  private readonly targetIndex = new Map<string, SelectorIndex<string>>();
  /** Policies (by key) selecting each local pod. */
  private readonly podPolicies = new Map<string, Set<string>>();
  private readonly targets = new Map<string, Target>();
  private readonly policies = new Map<string, CompiledPolicy>();

  private readonly peerSets = new Map<string, PeerSetState>();
  /** Per namespace: the peer sets whose pod selector applies there, by pod labels. */
  private readonly peerIndex = new Map<string, SelectorIndex<string>>();
  private readonly namespaceSelectorPeers = new Set<string>();
  /** Namespaces whose namespaceSelector matches have been evaluated (those that had pods). */
  private readonly activeNamespaces = new Set<string>();

  private readonly ipBlocks = new Map<string, { set: IpBlockSet; refs: number }>();
  private readonly namedSets = new Map<string, NamedSetState>();
  private readonly namedSetsByPortName = new Map<string, Set<string>>();

  private readonly recorder = new Recorder();
  /** A call is under way: calls made inside it (a batch's) are recorded as part of it. */
  private recording = false;

  constructor(readonly nodeName: string) {}

  /** Runs several calls as one: returns their combined net delta (for coalescing events). */
  batch(fn: () => void): PolicyDelta {
    return this.record((run) => run(), fn);
  }

  upsertPod(pod: PodInfo): PolicyDelta {
    return this.record(this.putPod, pod);
  }

  deletePod(pod: { namespace: string; name: string }): PolicyDelta {
    return this.record(this.removePod, pod);
  }

  upsertNamespace(ns: NamespaceInfo): PolicyDelta {
    return this.record(this.putNamespace, ns);
  }

  deleteNamespace(ns: { name: string }): PolicyDelta {
    return this.record(this.removeNamespace, ns);
  }

  upsertPolicy(np: NetworkPolicyInfo): PolicyDelta {
    return this.record(this.putPolicy, np);
  }

  deletePolicy(np: { namespace: string; name: string }): PolicyDelta {
    return this.record(this.removePolicy, np);
  }

  /** The whole current intent, canonically ordered (deep-equal to compileFull of the same
   * objects). Compiled policies and sets are shared, not copied: treat them as immutable. */
  state(): PolicyIR {
    const ir: PolicyIR = {
      nodeName: this.nodeName,
      targets: new Map(this.targets),
      policies: new Map(this.policies),
      peerSets: new Map(),
      ipBlockSets: new Map(),
      namedPortSets: new Map(),
    };
    for (const [id, s] of this.peerSets) ir.peerSets.set(id, this.peerSetContents(s));
    for (const [id, b] of this.ipBlocks) ir.ipBlockSets.set(id, b.set);
    for (const [id, s] of this.namedSets) ir.namedPortSets.set(id, this.namedSetContents(s));
    return ir;
  }

  /** Number of objects held, for diagnostics. */
  stats(): Record<string, number> {
    return {
      pods: this.pods.size,
      policies: this.plans.size,
      policiesFailedClosed: this.failedClosed,
      targets: this.targets.size,
      peerSets: this.peerSets.size,
      ipBlockSets: this.ipBlocks.size,
      namedPortSets: this.namedSets.size,
    };
  }

  // ---- recording -------------------------------------------------------------------------

  /** Runs `apply` (a method, given its argument: no closure is made per call, and a batch makes
   * many calls) and returns the net delta; inside another call, it is part of that one. */
  private record<T>(apply: (this: PolicyEngine, arg: T) => void, arg: T): PolicyDelta {
    if (this.recording) {
      apply.call(this, arg);
      return NESTED_DELTA;
    }
    this.recording = true;
    try {
      apply.call(this, arg);
      return this.finish(this.recorder);
    } finally {
      this.recorder.reset();
      this.recording = false;
    }
  }

  private touchTarget(key: string): void {
    const rec = this.recorder;
    if (!rec.targetsBefore.has(key)) rec.targetsBefore.set(key, this.targets.get(key));
  }

  private touchPolicy(id: string): void {
    const rec = this.recorder;
    if (!rec.policiesBefore.has(id)) rec.policiesBefore.set(id, this.policies.get(id));
  }

  /** True when the set existed when the call began: only such a set's element changes are
   * reported (a set created in the call is reported with its whole contents). */
  private touchPeerSet(id: string): boolean {
    const rec = this.recorder;
    let existed = rec.peerSetsExisted.get(id);
    if (existed === undefined) rec.peerSetsExisted.set(id, (existed = this.peerSets.has(id)));
    return existed;
  }

  /** As touchPeerSet, for named-port sets. */
  private touchNamedSet(id: string): boolean {
    const rec = this.recorder;
    let existed = rec.namedExisted.get(id);
    if (existed === undefined) rec.namedExisted.set(id, (existed = this.namedSets.has(id)));
    return existed;
  }

  /** Settles the call: recomputes touched targets, drops sets nothing references any more,
   * and reports the net difference. */
  private finish(rec: Recorder): PolicyDelta {
    const delta = emptyDelta();

    for (const [key, before] of rec.targetsBefore) {
      const after = this.computeTarget(key);
      if (after) this.targets.set(key, after);
      else this.targets.delete(key);
      if (!after) {
        if (before) delta.targets.remove.push(key);
      } else if (!before || !sameTarget(before, after)) {
        delta.targets.upsert.push(after);
      }
    }

    for (const [id, before] of rec.policiesBefore) {
      const after = this.policies.get(id);
      if (!after) {
        if (before) delta.policies.remove.push(id);
      } else if (!before || JSON.stringify(before) !== JSON.stringify(after)) {
        delta.policies.upsert.push(after);
      }
    }

    for (const [id, existed] of rec.peerSetsExisted) {
      const state = this.peerSets.get(id);
      if (state && state.refs === 0) this.dropPeerSet(state);
      const exists = this.peerSets.has(id);
      if (!existed && exists) delta.peerSets.create.push(this.peerSetContents(state!));
      else if (existed && !exists) delta.peerSets.remove.push(id);
      else if (existed && exists) {
        const net = rec.peerElements.get(id);
        if (!net || net.size === 0) continue;
        const add = { set: id, v4: [] as string[], v6: [] as string[] };
        const del = { set: id, v4: [] as string[], v6: [] as string[] };
        for (const [ip, n] of net) (n > 0 ? add : del)[isV6(ip) ? 'v6' : 'v4'].push(ip);
        if (add.v4.length + add.v6.length > 0) delta.peerSets.add.push({ set: id, v4: add.v4.sort(), v6: add.v6.sort() });
        if (del.v4.length + del.v6.length > 0) delta.peerSets.del.push({ set: id, v4: del.v4.sort(), v6: del.v6.sort() });
      }
    }

    for (const [id, existed] of rec.ipBlocksExisted) {
      const state = this.ipBlocks.get(id);
      if (state && state.refs === 0) this.ipBlocks.delete(id);
      const exists = this.ipBlocks.has(id);
      if (!existed && exists) delta.ipBlockSets.create.push(state!.set);
      else if (existed && !exists) delta.ipBlockSets.remove.push(id);
    }

    for (const [id, existed] of rec.namedExisted) {
      const state = this.namedSets.get(id);
      if (state && state.refs === 0) this.dropNamedSet(state);
      const exists = this.namedSets.has(id);
      if (!existed && exists) delta.namedPortSets.create.push(this.namedSetContents(state!));
      else if (existed && !exists) delta.namedPortSets.remove.push(id);
      else if (existed && exists) {
        const net = rec.namedElements.get(id);
        if (!net || net.size === 0) continue;
        const add = { set: id, v4: [] as PortTriple[], v6: [] as PortTriple[] };
        const del = { set: id, v4: [] as PortTriple[], v6: [] as PortTriple[] };
        for (const [k, n] of net) {
          const t = tripleFromKey(k);
          (n > 0 ? add : del)[isV6(t.ip) ? 'v6' : 'v4'].push(t);
        }
        for (const change of [add, del]) {
          change.v4.sort(compareTriples);
          change.v6.sort(compareTriples);
        }
        if (add.v4.length + add.v6.length > 0) delta.namedPortSets.add.push(add);
        if (del.v4.length + del.v6.length > 0) delta.namedPortSets.del.push(del);
      }
    }
    return delta;
  }

  // ---- pods --------------------------------------------------------------------------------

  private putPod(pod: PodInfo): void {
    const next = podFacts(pod, this.nodeName);
    const prev = this.pods.get(next.key);
    if (prev && samePodFacts(prev.facts, next)) return;
    if (prev) this.unlinkPod(prev);
    const held: HeldPod = { facts: next, peerSets: NO_PEER_SETS };
    this.pods.set(next.key, held);
    this.linkPod(held);
  }

  private removePod(pod: { namespace: string; name: string }): void {
    const prev = this.pods.get(podKey(pod));
    if (!prev) return;
    this.unlinkPod(prev);
    this.pods.delete(prev.facts.key);
  }

  private linkPod(held: HeldPod): void {
    const pod = held.facts;
    if (!pod.eligible) return;
    addTo(this.podsByNamespace, pod.namespace, held);
    if (this.podsByPortName) for (const np of pod.namedPorts) addTo(this.podsByPortName, np.name, pod);
    this.activateNamespace(pod.namespace);

    for (const id of this.peerIndex.get(pod.namespace)?.candidates(pod.labels) ?? []) {
      const state = this.peerSets.get(id)!;
      if (matches(state.spec.podSelector, pod.labels)) this.addPeerMember(state, held);
    }
    this.updateNamedTriples(pod, 'egress', +1);

    if (!pod.local) return;
    addTo(this.localPodsByNamespace, pod.namespace, pod);
    this.touchTarget(pod.key);
    for (const key of this.targetIndex.get(pod.namespace)?.candidates(pod.labels) ?? []) {
      if (matches(this.plans.get(key)!.podSelector, pod.labels)) addTo(this.podPolicies, pod.key, key);
    }
    if (this.ingressIsolated(pod.key)) this.updateNamedTriples(pod, 'ingress', +1);
  }

  private unlinkPod(held: HeldPod): void {
    const pod = held.facts;
    if (!pod.eligible) return;
    removeFrom(this.podsByNamespace, pod.namespace, held);
    if (this.podsByPortName) for (const np of pod.namedPorts) removeFrom(this.podsByPortName, np.name, pod);
    for (const id of held.peerSets) this.removePeerMember(this.peerSets.get(id)!, held);
    this.updateNamedTriples(pod, 'egress', -1);

    if (!pod.local) return;
    removeFrom(this.localPodsByNamespace, pod.namespace, pod);
    this.touchTarget(pod.key);
    if (this.ingressIsolated(pod.key)) this.updateNamedTriples(pod, 'ingress', -1);
    this.podPolicies.delete(pod.key);
  }

  private ingressIsolated(key: string): boolean {
    for (const policyKey of this.podPolicies.get(key) ?? []) {
      if (this.plans.get(policyKey)!.compiled.ingress) return true;
    }
    return false;
  }

  private computeTarget(key: string): Target | undefined {
    const pod = this.pods.get(key)?.facts;
    const selecting = this.podPolicies.get(key);
    if (!pod || !pod.local || !selecting) return undefined;
    const ingress: string[] = [];
    const egress: string[] = [];
    for (const policyKey of selecting) {
      const compiled = this.plans.get(policyKey)!.compiled;
      if (compiled.ingress) ingress.push(compiled.id);
      if (compiled.egress) egress.push(compiled.id);
    }
    if (ingress.length + egress.length === 0) return undefined;
    return {
      key,
      id: this.targets.get(key)?.id ?? shortId('t', key),
      v4: pod.v4,
      v6: pod.v6,
      ingress: ingress.length > 0 ? ingress.sort() : null,
      egress: egress.length > 0 ? egress.sort() : null,
    };
  }

  /** Adds (+1) or removes (-1) the pod's triples in the named-port sets of `direction` that
   * name one of its ports. */
  private updateNamedTriples(pod: PodFacts, direction: 'ingress' | 'egress', by: 1 | -1): void {
    // Most pods' port names are in no set: nothing is allocated for them.
    let sets: NamedSetState[] | undefined;
    for (const np of pod.namedPorts) {
      for (const id of this.namedSetsByPortName.get(np.name) ?? []) {
        const state = this.namedSets.get(id)!;
        if (state.spec.direction !== direction) continue;
        if (!sets) sets = [state];
        else if (!sets.includes(state)) sets.push(state);
      }
    }
    for (const state of sets ?? []) this.applyTriples(state, pod, by);
  }

  private applyTriples(state: NamedSetState, pod: PodFacts, by: 1 | -1): void {
    const { v4, v6 } = podTriples(pod, state.spec.ports);
    if (v4.length + v6.length === 0) return;
    const report = this.touchNamedSet(state.spec.id);
    for (const family of [v4, v6]) {
      for (const t of family) {
        const k = tripleKey(t);
        const changed = by > 0 ? state.triples.add(k) : state.triples.remove(k);
        if (changed && report) bump(this.recorder.namedElements, state.spec.id, k, by);
      }
    }
  }

  // ---- namespaces --------------------------------------------------------------------------

  private putNamespace(ns: NamespaceInfo): void {
    this.relabelNamespace(ns.name, namespaceLabels(ns.name, ns));
  }

  private removeNamespace(ns: { name: string }): void {
    this.relabelNamespace(ns.name, namespaceLabels(ns.name));
  }

  private labelsOf(ns: string): Record<string, string> {
    return this.namespaceLabelsByName.get(ns) ?? namespaceLabels(ns);
  }

  /** Evaluates every namespaceSelector peer against a namespace the first time it has pods. */
  private activateNamespace(ns: string): void {
    if (this.activeNamespaces.has(ns)) return;
    this.activeNamespaces.add(ns);
    const labels = this.labelsOf(ns);
    for (const id of this.namespaceSelectorPeers) {
      const state = this.peerSets.get(id)!;
      if (matches(state.spec.namespaceSelector!, labels)) this.filePeerSet(state, ns);
    }
  }

  private relabelNamespace(ns: string, labels: Record<string, string>): void {
    if (sameLabels(this.labelsOf(ns), labels)) return;
    this.namespaceLabelsByName.set(ns, labels);
    if (!this.activeNamespaces.has(ns)) return;
    for (const id of this.namespaceSelectorPeers) {
      const state = this.peerSets.get(id)!;
      const was = state.namespaces.has(ns);
      const now = matches(state.spec.namespaceSelector!, labels);
      if (was === now) continue;
      if (now) {
        this.filePeerSet(state, ns);
        this.addMatchingPods(state, ns);
      } else {
        this.peerIndex.get(ns)!.remove(id);
        state.namespaces.delete(ns);
        for (const held of this.podsByNamespace.get(ns) ?? []) this.removePeerMember(state, held);
      }
    }
  }

  // ---- peer sets ---------------------------------------------------------------------------

  private filePeerSet(state: PeerSetState, ns: string): void {
    let index = this.peerIndex.get(ns);
    if (!index) this.peerIndex.set(ns, (index = new SelectorIndex()));
    index.add(state.spec.id, state.spec.podSelector);
    state.namespaces.add(ns);
  }

  /** Adds the pods of `ns` the set's pod selector matches. */
  private addMatchingPods(state: PeerSetState, ns: string): void {
    const pods = this.podsByNamespace.get(ns);
    if (!pods) return;
    const selector = state.spec.podSelector;
    for (const held of pods) if (matches(selector, held.facts.labels)) this.addPeerMember(state, held);
  }

  private addPeerMember(state: PeerSetState, held: HeldPod): void {
    if (state.members.has(held)) return;
    const report = this.touchPeerSet(state.spec.id);
    state.members.add(held);
    held.peerSets = held.peerSets.concat(state.spec.id);
    for (const ip of held.facts.v4) this.addPeerIp(state, ip, report);
    for (const ip of held.facts.v6) this.addPeerIp(state, ip, report);
  }

  private addPeerIp(state: PeerSetState, ip: string, report: boolean): void {
    if (!state.ips.add(ip)) return;
    state.contents = undefined;
    if (report) bump(this.recorder.peerElements, state.spec.id, ip, +1);
  }

  private removePeerMember(state: PeerSetState, held: HeldPod): void {
    if (!state.members.delete(held)) return;
    const report = this.touchPeerSet(state.spec.id);
    held.peerSets = held.peerSets.filter((id) => id !== state.spec.id);
    for (const ip of held.facts.v4) this.removePeerIp(state, ip, report);
    for (const ip of held.facts.v6) this.removePeerIp(state, ip, report);
  }

  private removePeerIp(state: PeerSetState, ip: string, report: boolean): void {
    if (!state.ips.remove(ip)) return;
    state.contents = undefined;
    if (report) bump(this.recorder.peerElements, state.spec.id, ip, -1);
  }

  private refPeerSet(spec: PeerSetSpec): void {
    this.touchPeerSet(spec.id);
    const existing = this.peerSets.get(spec.id);
    if (existing) {
      existing.refs++;
      return;
    }
    const state: PeerSetState = { spec, refs: 1, members: new Set(), ips: new CountedSet(), namespaces: new Set(), contents: undefined };
    this.peerSets.set(spec.id, state);
    const scope: Iterable<string> = spec.namespace !== null ? [spec.namespace] : this.activeNamespaces;
    if (spec.namespaceSelector) this.namespaceSelectorPeers.add(spec.id);
    for (const ns of scope) {
      if (spec.namespaceSelector && !matches(spec.namespaceSelector, this.labelsOf(ns))) continue;
      this.filePeerSet(state, ns);
      this.addMatchingPods(state, ns);
    }
  }

  /** Removes a set no policy references any more (at the end of a call, so a set dropped and
   * re-added within one call is never torn down). */
  private dropPeerSet(state: PeerSetState): void {
    for (const ns of state.namespaces) this.peerIndex.get(ns)?.remove(state.spec.id);
    for (const held of state.members) held.peerSets = held.peerSets.filter((id) => id !== state.spec.id);
    this.namespaceSelectorPeers.delete(state.spec.id);
    this.peerSets.delete(state.spec.id);
  }

  private refNamedSet(spec: NamedPortSetSpec): void {
    this.touchNamedSet(spec.id);
    const existing = this.namedSets.get(spec.id);
    if (existing) {
      existing.refs++;
      return;
    }
    const state: NamedSetState = { spec, refs: 1, triples: new CountedSet() };
    this.namedSets.set(spec.id, state);
    for (const p of spec.ports) addTo(this.namedSetsByPortName, p.name, spec.id);
    for (const pod of this.namedSetCandidates(spec)) this.applyTriples(state, pod, +1);
  }

  /** The pods whose triples a new named-port set starts with, each once: for ingress the local
   * pods isolated for ingress (only policies' targets are, so this is never the whole cluster),
   * for egress the eligible pods having one of the port names. */
  private namedSetCandidates(spec: NamedPortSetSpec): Iterable<PodFacts> {
    if (spec.direction === 'ingress') {
      const isolated: PodFacts[] = [];
      for (const key of this.podPolicies.keys()) if (this.ingressIsolated(key)) isolated.push(this.pods.get(key)!.facts);
      return isolated;
    }
    const byPortName = this.portNameIndex();
    const names = new Set(spec.ports.map((p) => p.name));
    if (names.size === 1) return byPortName.get(spec.ports[0].name) ?? [];
    const candidates = new Set<PodFacts>();
    for (const name of names) for (const pod of byPortName.get(name) ?? []) candidates.add(pod);
    return candidates;
  }

  private portNameIndex(): Map<string, Set<PodFacts>> {
    if (!this.podsByPortName) {
      const index = new Map<string, Set<PodFacts>>();
      for (const { facts } of this.pods.values()) {
        if (facts.eligible) for (const np of facts.namedPorts) addTo(index, np.name, facts);
      }
      this.podsByPortName = index;
    }
    return this.podsByPortName;
  }

  private dropNamedSet(state: NamedSetState): void {
    for (const p of state.spec.ports) removeFrom(this.namedSetsByPortName, p.name, state.spec.id);
    this.namedSets.delete(state.spec.id);
  }

  private peerSetContents(s: PeerSetState): PeerSet {
    if (s.contents) return s.contents;
    const v4: string[] = [];
    const v6: string[] = [];
    for (const ip of s.ips.counts.keys()) (isV6(ip) ? v6 : v4).push(ip);
    return (s.contents = { id: s.spec.id, describe: s.spec.describe, v4: v4.sort(), v6: v6.sort() });
  }

  private namedSetContents(s: NamedSetState): NamedPortSet {
    const v4: PortTriple[] = [];
    const v6: PortTriple[] = [];
    for (const k of s.triples.counts.keys()) {
      const t = tripleFromKey(k);
      (isV6(t.ip) ? v6 : v4).push(t);
    }
    return { id: s.spec.id, direction: s.spec.direction, ports: s.spec.ports, v4: v4.sort(compareTriples), v6: v6.sort(compareTriples) };
  }

  // ---- policies ----------------------------------------------------------------------------

  private putPolicy(np: NetworkPolicyInfo): void {
    const key = podKey(np);
    const prev = this.policyInputs.get(key);
    if (prev && JSON.stringify(prev) === JSON.stringify(np)) return;
    if (this.plans.has(key)) this.unlinkPolicy(key);
    this.policyInputs.set(key, np);
    this.linkPolicy(compilePolicy(np));
  }

  private removePolicy(np: { namespace: string; name: string }): void {
    const key = podKey(np);
    if (this.plans.has(key)) this.unlinkPolicy(key);
    this.policyInputs.delete(key);
  }

  private linkPolicy(plan: PolicyPlan): void {
    this.plans.set(plan.key, plan);
    if (plan.compiled.errors.length > 0) this.failedClosed++;
    this.touchPolicy(plan.compiled.id);
    this.policies.set(plan.compiled.id, plan.compiled);
    for (const spec of plan.peerSets) this.refPeerSet(spec);
    for (const set of plan.ipBlockSets) {
      if (!this.recorder.ipBlocksExisted.has(set.id)) this.recorder.ipBlocksExisted.set(set.id, this.ipBlocks.has(set.id));
      const existing = this.ipBlocks.get(set.id);
      if (existing) existing.refs++;
      else this.ipBlocks.set(set.id, { set, refs: 1 });
    }
    // Named sets before targets: a new ingress set is filled from the pods isolated so far, and
    // pods that become isolated below add their triples to it.
    for (const spec of plan.namedPortSets) this.refNamedSet(spec);

    let index = this.targetIndex.get(plan.namespace);
    if (!index) this.targetIndex.set(plan.namespace, (index = new SelectorIndex()));
    index.add(plan.key, plan.podSelector);
    for (const pod of this.localPodsByNamespace.get(plan.namespace) ?? []) {
      if (!matches(plan.podSelector, pod.labels)) continue;
      this.changePodPolicies(pod, () => addTo(this.podPolicies, pod.key, plan.key));
    }
  }

  private unlinkPolicy(key: string): void {
    const plan = this.plans.get(key)!;
    if (plan.compiled.errors.length > 0) this.failedClosed--;
    for (const pod of this.localPodsByNamespace.get(plan.namespace) ?? []) {
      if (!this.podPolicies.get(pod.key)?.has(key)) continue;
      this.changePodPolicies(pod, () => removeFrom(this.podPolicies, pod.key, key));
    }
    this.targetIndex.get(plan.namespace)!.remove(key);
    if (this.targetIndex.get(plan.namespace)!.size === 0) this.targetIndex.delete(plan.namespace);

    for (const spec of plan.peerSets) {
      this.touchPeerSet(spec.id);
      this.peerSets.get(spec.id)!.refs--;
    }
    for (const set of plan.ipBlockSets) {
      if (!this.recorder.ipBlocksExisted.has(set.id)) this.recorder.ipBlocksExisted.set(set.id, true);
      this.ipBlocks.get(set.id)!.refs--;
    }
    for (const spec of plan.namedPortSets) {
      this.touchNamedSet(spec.id);
      this.namedSets.get(spec.id)!.refs--;
    }
    this.touchPolicy(plan.compiled.id);
    this.policies.delete(plan.compiled.id);
    this.plans.delete(key);
  }

  /** Applies a change to the policies selecting a local pod, keeping the ingress named-port
   * sets in step with whether the pod is isolated for ingress. */
  private changePodPolicies(pod: PodFacts, change: () => void): void {
    this.touchTarget(pod.key);
    const was = this.ingressIsolated(pod.key);
    change();
    const now = this.ingressIsolated(pod.key);
    if (was !== now) this.updateNamedTriples(pod, 'ingress', now ? +1 : -1);
  }
}

function sameLabels(a: Record<string, string>, b: Record<string, string>): boolean {
  const ak = Object.keys(a);
  if (ak.length !== Object.keys(b).length) return false;
  return ak.every((k) => Object.prototype.hasOwnProperty.call(b, k) && a[k] === b[k]);
}

function sameStrings(a: string[] | null, b: string[] | null): boolean {
  if (a === null || b === null) return a === b;
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function sameTarget(a: Target, b: Target): boolean {
  return sameStrings(a.v4, b.v4) && sameStrings(a.v6, b.v6) && sameStrings(a.ingress, b.ingress) && sameStrings(a.egress, b.egress);
}

/** Equal in everything enforcement reads (so status heartbeats and the like cost nothing). */
function samePodFacts(a: PodFacts, b: PodFacts): boolean {
  return (
    a.eligible === b.eligible &&
    a.local === b.local &&
    sameStrings(a.v4, b.v4) &&
    sameStrings(a.v6, b.v6) &&
    sameLabels(a.labels, b.labels) &&
    a.namedPorts.length === b.namedPorts.length &&
    a.namedPorts.every((p, i) => p.name === b.namedPorts[i].name && p.protocol === b.namedPorts[i].protocol && p.port === b.namedPorts[i].port)
  );
}
