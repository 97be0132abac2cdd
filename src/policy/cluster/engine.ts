/** The incremental ClusterNetworkPolicy engine: keeps the compiled tiers for one node up to date,
 * event by event, and answers each event with its net change (a ClusterDelta).
 *
 * It shares NetworkPolicy's set machinery (index/): the pods it holds (PodIndex), pod address
 * sets by selector (PeerSetIndex), CIDR sets (IpBlockSetIndex) and named-port sets
 * (NamedPortSetIndex), each reporting into a SetLedger; the tiers' own sets, subjects (the local
 * pods a policy applies to) and node addresses (`nodes` peers), report into ledgers alike. Work
 * per event: a pod event tests the selectors filed for its namespace and labels and each policy's
 * subject; a namespace relabel its pods; a Node event each node set; a policy change that policy.
 * A pod or label change is set elements only: policies (so chains) change only with their
 * objects. `state()` equals compileClusterFull of the same objects (the tests hold it to that). */
import type { ClusterNetworkPolicyInfo } from '../../k8s/cluster-policy-model';
import type { NamespaceInfo, PodInfo } from '../../k8s/model';
import type { NodeInfo } from '../../k8s/service-model';
import { canonicalIp } from '../../net/ip';
import { isV6 } from '../../net/ip-text';
import { SetLedger } from '../engine/delta-recorder';
import { sameLabels, samePodFacts } from '../engine/equality';
import { CountedSet } from '../engine/index/collections';
import { IpBlockSetIndex } from '../engine/index/ip-blocks';
import { NamedPortSetIndex } from '../engine/index/named-ports';
import { PeerSetIndex } from '../engine/index/peer-sets';
import { PodIndex } from '../engine/index/pods';
import type { IpBlockSet, NamedPortSet, PortTriple, SetElementChange } from '../engine/ir';
import { compareStrings, compareTriples, namespaceLabels, podFacts, podKey, tripleFromKey, type PodFacts } from '../engine/objects';
import { matches } from '../../k8s/selector';
import { compileClusterPolicy, type ClusterPolicyPlan, type NodeSetSpec } from './compile';
import type { CompiledClusterPolicy } from './ir';

/** A set of addresses, `<id>_v4` and `<id>_v6`: pod peers, node peers and subjects alike. */
export interface AddressSet {
  id: string;
  v4: string[];
  v6: string[];
}

/** What one engine call changed, net. Apply: create sets, change elements, upsert policies
 * (their chains, then the tier order), remove policies, remove sets. */
export interface ClusterDelta {
  policies: { upsert: CompiledClusterPolicy[]; remove: CompiledClusterPolicy[] };
  addressSets: { create: AddressSet[]; remove: string[]; add: SetElementChange<string>[]; del: SetElementChange<string>[] };
  ipBlockSets: { create: IpBlockSet[]; remove: string[] };
  namedPortSets: { create: NamedPortSet[]; remove: string[]; add: SetElementChange<PortTriple>[]; del: SetElementChange<PortTriple>[] };
}

export function emptyClusterDelta(): ClusterDelta {
  return {
    policies: { upsert: [], remove: [] },
    addressSets: { create: [], remove: [], add: [], del: [] },
    ipBlockSets: { create: [], remove: [] },
    namedPortSets: { create: [], remove: [], add: [], del: [] },
  };
}

export function isEmptyClusterDelta(d: ClusterDelta): boolean {
  return (
    d.policies.upsert.length + d.policies.remove.length +
      d.addressSets.create.length + d.addressSets.remove.length + d.addressSets.add.length + d.addressSets.del.length +
      d.ipBlockSets.create.length + d.ipBlockSets.remove.length +
      d.namedPortSets.create.length + d.namedPortSets.remove.length + d.namedPortSets.add.length + d.namedPortSets.del.length ===
    0
  );
}

/** The whole compiled state (sets canonically sorted). */
export interface ClusterState {
  policies: Map<string, CompiledClusterPolicy>;
  addressSets: Map<string, AddressSet>;
  ipBlockSets: Map<string, IpBlockSet>;
  namedPortSets: Map<string, NamedPortSet>;
}

/** The id of a policy's subject set. */
export const subjectSetId = (policyId: string): string => `${policyId}_subj`;

interface NodeSetState {
  spec: NodeSetSpec;
  refs: number;
  members: Set<string>;
  ips: CountedSet;
}

interface SubjectState {
  plan: ClusterPolicyPlan;
  members: Set<string>;
  ips: CountedSet;
}

export class ClusterPolicyEngine {
  private readonly pods = new PodIndex();
  private readonly peerLedger = new SetLedger();
  private readonly ipBlockLedger = new SetLedger();
  private readonly namedLedger = new SetLedger();
  /** Subject and node sets: address sets of the tiers' own. */
  private readonly ownLedger = new SetLedger();
  private readonly peerSets = new PeerSetIndex(this.pods, this.peerLedger);
  private readonly ipBlocks = new IpBlockSetIndex(this.ipBlockLedger);
  private readonly namedPorts = new NamedPortSetIndex(this.pods, this.namedLedger, () => []);
  private readonly namespaces = new Map<string, Record<string, string>>();
  private readonly localPods = new Map<string, PodFacts>();
  private readonly nodes = new Map<string, NodeInfo>();
  private readonly nodeSets = new Map<string, NodeSetState>();
  /** By policy name. */
  private readonly subjects = new Map<string, SubjectState>();
  /** The same, by subject set id. */
  private readonly subjectsById = new Map<string, SubjectState>();
  private readonly policiesBefore = new Map<string, CompiledClusterPolicy | undefined>();
  private recording = false;

  constructor(readonly nodeName: string) {}

  batch(fn: () => void): ClusterDelta {
    return this.record(fn);
  }

  upsertPod(pod: PodInfo): ClusterDelta {
    return this.record(() => this.putPod(pod));
  }

  deletePod(pod: { namespace: string; name: string }): ClusterDelta {
    return this.record(() => this.removePod(podKey(pod)));
  }

  upsertNamespace(ns: NamespaceInfo): ClusterDelta {
    return this.record(() => this.relabelNamespace(ns.name, namespaceLabels(ns.name, ns)));
  }

  deleteNamespace(ns: { name: string }): ClusterDelta {
    return this.record(() => this.relabelNamespace(ns.name, namespaceLabels(ns.name)));
  }

  upsertNode(node: NodeInfo): ClusterDelta {
    return this.record(() => this.putNode(node.name, node));
  }

  deleteNode(node: { name: string }): ClusterDelta {
    return this.record(() => this.putNode(node.name, undefined));
  }

  upsertPolicy(cnp: ClusterNetworkPolicyInfo): ClusterDelta {
    return this.record(() => this.putPolicy(cnp.name, compileClusterPolicy(cnp)));
  }

  deletePolicy(cnp: { name: string }): ClusterDelta {
    return this.record(() => this.putPolicy(cnp.name, undefined));
  }

  get size(): number {
    return this.subjects.size;
  }

  policy(name: string): CompiledClusterPolicy | undefined {
    return this.subjects.get(name)?.plan.compiled;
  }

  state(): ClusterState {
    const out: ClusterState = { policies: new Map(), addressSets: new Map(), ipBlockSets: new Map(), namedPortSets: new Map() };
    for (const s of this.subjects.values()) {
      out.policies.set(s.plan.compiled.id, s.plan.compiled);
      const id = subjectSetId(s.plan.compiled.id);
      out.addressSets.set(id, addressSet(id, s.ips));
    }
    for (const id of this.peerSets.ids()) out.addressSets.set(id, this.peerSets.contents(id));
    for (const [id, s] of this.nodeSets) out.addressSets.set(id, addressSet(id, s.ips));
    for (const id of this.ipBlocks.ids()) out.ipBlockSets.set(id, this.ipBlocks.contents(id));
    for (const id of this.namedPorts.ids()) out.namedPortSets.set(id, this.namedPorts.contents(id));
    return out;
  }

  // ---- recording ---------------------------------------------------------------------------

  private record(fn: () => void): ClusterDelta {
    if (this.recording) {
      fn();
      return emptyClusterDelta();
    }
    this.recording = true;
    try {
      fn();
      return this.finish();
    } finally {
      for (const l of [this.peerLedger, this.ipBlockLedger, this.namedLedger, this.ownLedger]) l.reset();
      this.policiesBefore.clear();
      this.recording = false;
    }
  }

  private finish(): ClusterDelta {
    const d = emptyClusterDelta();
    for (const [name, before] of this.policiesBefore) {
      const after = this.subjects.get(name)?.plan.compiled;
      if (!after) {
        if (before) d.policies.remove.push(before);
      } else if (!before || JSON.stringify(before) !== JSON.stringify(after)) {
        d.policies.upsert.push(after);
      }
    }
    settle(this.peerLedger, this.peerSets, d.addressSets, (key) => key, compareStrings);
    settle(this.ipBlockLedger, this.ipBlocks, d.ipBlockSets);
    settle(this.namedLedger, this.namedPorts, d.namedPortSets, tripleFromKey, compareTriples);
    settle(this.ownLedger, this.ownSets, d.addressSets, (key) => key, compareStrings);
    return d;
  }

  /** The subject and node sets as settled sets: they exist while their policy (or a reference). */
  private readonly ownSets = {
    settle: (id: string): boolean => {
      const node = this.nodeSets.get(id);
      if (node) {
        if (node.refs > 0) return true;
        this.nodeSets.delete(id);
        return false;
      }
      return this.subjectsById.has(id);
    },
    contents: (id: string): AddressSet => {
      const node = this.nodeSets.get(id);
      if (node) return addressSet(id, node.ips);
      return addressSet(id, this.subjectsById.get(id)!.ips);
    },
  };

  // ---- pods and namespaces -----------------------------------------------------------------

  private putPod(pod: PodInfo): void {
    const next = podFacts(pod, this.nodeName);
    const prev = this.pods.get(next.key);
    if (prev && samePodFacts(prev.facts, next)) return;
    this.removePod(next.key);
    const held = this.pods.put(next);
    if (!next.eligible) return;
    this.peerSets.podArrived(held);
    this.namedPorts.update(next, 'egress', +1);
    if (!next.local) return;
    this.localPods.set(next.key, next);
    for (const s of this.subjects.values()) if (this.selects(s.plan, next)) this.addSubject(s, next);
  }

  private removePod(key: string): void {
    const held = this.pods.get(key);
    if (!held) return;
    const pod = held.facts;
    if (pod.eligible) {
      this.pods.unfile(held);
      this.peerSets.podLeft(held);
      this.namedPorts.update(pod, 'egress', -1);
      if (pod.local) {
        this.localPods.delete(key);
        for (const s of this.subjects.values()) this.removeSubject(s, pod);
      }
    }
    this.pods.delete(key);
  }

  private relabelNamespace(ns: string, labels: Record<string, string>): void {
    const before = this.namespaces.get(ns) ?? namespaceLabels(ns);
    if (sameLabels(before, labels)) return;
    this.namespaces.set(ns, labels);
    this.peerSets.relabelNamespace(ns, labels);
    for (const pod of this.pods.localIn(ns)) {
      for (const s of this.subjects.values()) {
        if (this.selects(s.plan, pod)) this.addSubject(s, pod);
        else this.removeSubject(s, pod);
      }
    }
  }

  private selects(plan: ClusterPolicyPlan, pod: PodFacts): boolean {
    const labels = this.namespaces.get(pod.namespace) ?? namespaceLabels(pod.namespace);
    return matches(plan.subject.namespaceSelector, labels) && matches(plan.subject.podSelector, pod.labels);
  }

  private addSubject(s: SubjectState, pod: PodFacts): void {
    if (s.members.has(pod.key)) return;
    s.members.add(pod.key);
    this.changeIps(subjectSetId(s.plan.compiled.id), s.ips, pod.v4.concat(pod.v6), +1);
  }

  private removeSubject(s: SubjectState, pod: PodFacts): void {
    if (!s.members.delete(pod.key)) return;
    this.changeIps(subjectSetId(s.plan.compiled.id), s.ips, pod.v4.concat(pod.v6), -1);
  }

  private changeIps(id: string, ips: CountedSet, addresses: string[], by: 1 | -1): void {
    const report = this.ownLedger.touch(id, true);
    for (const ip of addresses) {
      const changed = by > 0 ? ips.add(ip) : ips.remove(ip);
      if (changed && report) this.ownLedger.changed(id, ip, by);
    }
  }

  // ---- nodes -------------------------------------------------------------------------------

  private putNode(name: string, node: NodeInfo | undefined): void {
    const before = this.nodes.get(name);
    if (node) this.nodes.set(name, node);
    else this.nodes.delete(name);
    for (const s of this.nodeSets.values()) {
      if (before && s.members.has(name)) {
        s.members.delete(name);
        this.changeIps(s.spec.id, s.ips, nodeAddresses(before), -1);
      }
      if (node && matches(s.spec.selector, node.labels ?? {})) {
        s.members.add(name);
        this.changeIps(s.spec.id, s.ips, nodeAddresses(node), +1);
      }
    }
  }

  private refNodeSet(spec: NodeSetSpec): void {
    const existing = this.nodeSets.get(spec.id);
    this.ownLedger.touch(spec.id, existing !== undefined);
    if (existing) {
      existing.refs++;
      return;
    }
    const state: NodeSetState = { spec, refs: 1, members: new Set(), ips: new CountedSet() };
    this.nodeSets.set(spec.id, state);
    for (const node of this.nodes.values()) {
      if (!matches(spec.selector, node.labels ?? {})) continue;
      state.members.add(node.name);
      for (const ip of nodeAddresses(node)) state.ips.add(ip);
    }
  }

  // ---- policies ----------------------------------------------------------------------------

  private putPolicy(name: string, plan: ClusterPolicyPlan | undefined): void {
    const before = this.subjects.get(name);
    if (before && plan && JSON.stringify(before.plan) === JSON.stringify(plan)) return;
    if (!this.policiesBefore.has(name)) this.policiesBefore.set(name, before?.plan.compiled);
    if (before) this.unlinkPolicy(before);
    if (plan) this.linkPolicy(plan);
  }

  private linkPolicy(plan: ClusterPolicyPlan): void {
    const subjectId = subjectSetId(plan.compiled.id);
    // The set of a policy changed in place existed: its members' changes are reported.
    const report = this.ownLedger.touch(subjectId, false);
    const state: SubjectState = { plan, members: new Set(), ips: new CountedSet() };
    this.subjects.set(plan.name, state);
    this.subjectsById.set(subjectId, state);
    for (const pod of this.localPods.values()) {
      if (!this.selects(plan, pod)) continue;
      state.members.add(pod.key);
      for (const ip of pod.v4.concat(pod.v6)) if (state.ips.add(ip) && report) this.ownLedger.changed(subjectId, ip, +1);
    }
    for (const spec of plan.peerSets) this.peerSets.ref(spec);
    for (const set of plan.ipBlockSets) this.ipBlocks.ref(set);
    for (const spec of plan.namedPortSets) this.namedPorts.ref(spec);
    for (const spec of plan.nodeSets) this.refNodeSet(spec);
  }

  private unlinkPolicy(state: SubjectState): void {
    const { plan } = state;
    const subjectId = subjectSetId(plan.compiled.id);
    this.ownLedger.touch(subjectId, true);
    for (const ip of state.ips.counts.keys()) this.ownLedger.changed(subjectId, ip, -1);
    this.subjects.delete(plan.name);
    this.subjectsById.delete(subjectId);
    for (const spec of plan.peerSets) this.peerSets.unref(spec.id);
    for (const set of plan.ipBlockSets) this.ipBlocks.unref(set.id);
    for (const spec of plan.namedPortSets) this.namedPorts.unref(spec.id);
    for (const spec of plan.nodeSets) {
      this.ownLedger.touch(spec.id, true);
      this.nodeSets.get(spec.id)!.refs--;
    }
  }
}

function nodeAddresses(node: NodeInfo): string[] {
  const out = new Set<string>();
  for (const a of node.addresses) {
    const ip = canonicalIp(a.address);
    if (ip) out.add(ip.text);
  }
  return [...out];
}

function addressSet(id: string, ips: CountedSet): AddressSet {
  const v4: string[] = [];
  const v6: string[] = [];
  for (const ip of ips.counts.keys()) (isV6(ip) ? v6 : v4).push(ip);
  return { id, v4: v4.sort(), v6: v6.sort() };
}

/** Reports the sets one ledger touched: created whole, removed, or their net element changes. */
function settle<S, E>(
  ledger: SetLedger,
  sets: { settle(id: string): boolean; contents(id: string): S },
  out: { create: S[]; remove: string[]; add?: SetElementChange<E>[]; del?: SetElementChange<E>[] },
  fromKey?: (key: string) => E,
  compare?: (a: E, b: E) => number,
): void {
  for (const [id, existed] of ledger.existed) {
    const exists = sets.settle(id);
    if (!existed && exists) out.create.push(sets.contents(id));
    else if (existed && !exists) out.remove.push(id);
    else if (existed && exists && out.add && out.del && fromKey && compare) {
      const net = ledger.elements.get(id);
      if (!net || net.size === 0) continue;
      const added: SetElementChange<E> = { set: id, v4: [], v6: [] };
      const removed: SetElementChange<E> = { set: id, v4: [], v6: [] };
      for (const [key, n] of net) (n > 0 ? added : removed)[isV6(key) ? 'v6' : 'v4'].push(fromKey(key));
      for (const c of [added, removed]) (c.v4.sort(compare), c.v6.sort(compare));
      if (added.v4.length + added.v6.length > 0) out.add.push(added);
      if (removed.v4.length + removed.v6.length > 0) out.del.push(removed);
    }
  }
}
