/** The incremental policy engine: keeps the compiled intent for one node up to date, event by
 * event, and answers each event with the net change to that intent (a PolicyDelta).
 *
 * The engine coordinates events over indexes (index/): the pods it holds, the policies and the
 * pods they select, and one index per set kind (peer, ipBlock, named-port). What a call changes
 * is noted in one DeltaRecorder, which settles the call and reports its delta.
 *
 * Work per event is proportional to what the event touches: a pod event tests only the
 * selectors filed under its namespace and labels (SelectorIndex), a namespace relabel only the
 * namespaceSelector peers and that namespace's pods, a policy change only that policy's targets
 * and newly needed sets. Nothing iterates the cluster. `state()` equals `compileFull` of the same
 * objects (the property tests hold it to that). */

import type { NamespaceInfo, NetworkPolicyInfo, PodInfo } from '../../k8s/model';
import { DeltaRecorder, type DeltaSources } from './delta-recorder';
import { samePodFacts } from './equality';
import { IpBlockSetIndex } from './index/ip-blocks';
import { NamedPortSetIndex } from './index/named-ports';
import { PeerSetIndex } from './index/peer-sets';
import { PodIndex, type HeldPod } from './index/pods';
import { PolicyIndex } from './index/policies';
import { emptyDelta, type PolicyDelta, type PolicyIR, type Target } from './ir';
import { namespaceLabels, podFacts, podKey, type PodFacts } from './objects';
import { compilePolicy, type PolicyPlan } from './rules';
import { matches } from '../../k8s/selector';

/** What a call nested in another returns (its changes are in the outer call's delta): one
 * shared, frozen value, so a batch of many events does not allocate one per event. */
const NESTED_DELTA: PolicyDelta = deepFreeze(emptyDelta());

function deepFreeze<T extends object>(value: T): T {
  for (const child of Object.values(value)) if (typeof child === 'object' && child !== null) deepFreeze(child);
  return Object.freeze(value);
}

export class PolicyEngine {
  private readonly recorder = new DeltaRecorder();
  private readonly pods = new PodIndex();
  private readonly policies = new PolicyIndex();
  private readonly targets = new Map<string, Target>();
  private readonly peerSets = new PeerSetIndex(this.pods, this.recorder.peerSets);
  private readonly ipBlocks = new IpBlockSetIndex(this.recorder.ipBlockSets);
  private readonly namedPorts = new NamedPortSetIndex(this.pods, this.recorder.namedPortSets, () =>
    this.policies.ingressIsolatedPods().map((key) => this.pods.get(key)!.facts),
  );
  private readonly sources: DeltaSources = {
    settleTarget: (key) => this.settleTarget(key),
    policy: (id) => this.policies.compiled.get(id),
    peerSets: this.peerSets,
    ipBlockSets: this.ipBlocks,
    namedPortSets: this.namedPorts,
  };
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
      policies: new Map(this.policies.compiled),
      peerSets: new Map(),
      ipBlockSets: new Map(),
      namedPortSets: new Map(),
    };
    for (const id of this.peerSets.ids()) ir.peerSets.set(id, this.peerSets.contents(id));
    for (const id of this.ipBlocks.ids()) ir.ipBlockSets.set(id, this.ipBlocks.contents(id));
    for (const id of this.namedPorts.ids()) ir.namedPortSets.set(id, this.namedPorts.contents(id));
    return ir;
  }

  /** Number of objects held, for diagnostics. */
  stats(): Record<string, number> {
    return {
      pods: this.pods.size,
      policies: this.policies.size,
      policiesFailedClosed: this.policies.failedClosed,
      targets: this.targets.size,
      peerSets: this.peerSets.size,
      ipBlockSets: this.ipBlocks.size,
      namedPortSets: this.namedPorts.size,
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
      return this.recorder.finish(this.sources);
    } finally {
      this.recorder.reset();
      this.recording = false;
    }
  }

  private touchTarget(key: string): void {
    this.recorder.touchTarget(key, this.targets.get(key));
  }

  private settleTarget(key: string): Target | undefined {
    const pod = this.pods.get(key)?.facts;
    const after = pod ? this.policies.target(pod, this.targets.get(key)) : undefined;
    if (after) this.targets.set(key, after);
    else this.targets.delete(key);
    return after;
  }

  // ---- pods --------------------------------------------------------------------------------

  private putPod(pod: PodInfo): void {
    const next = podFacts(pod, this.nodeName);
    const prev = this.pods.get(next.key);
    if (prev && samePodFacts(prev.facts, next)) return;
    if (prev) this.unlinkPod(prev);
    this.linkPod(this.pods.put(next));
  }

  private removePod(pod: { namespace: string; name: string }): void {
    const prev = this.pods.get(podKey(pod));
    if (!prev) return;
    this.unlinkPod(prev);
    this.pods.delete(prev.facts.key);
  }

  /** A pod the index has just filed joins its sets and is selected by its policies. */
  private linkPod(held: HeldPod): void {
    const pod = held.facts;
    if (!pod.eligible) return;
    this.peerSets.podArrived(held);
    this.namedPorts.update(pod, 'egress', +1);

    if (!pod.local) return;
    this.touchTarget(pod.key);
    this.policies.matchPod(pod);
    if (this.policies.ingressIsolated(pod.key)) this.namedPorts.update(pod, 'ingress', +1);
  }

  private unlinkPod(held: HeldPod): void {
    const pod = held.facts;
    if (!pod.eligible) return;
    this.pods.unfile(held);
    this.peerSets.podLeft(held);
    this.namedPorts.update(pod, 'egress', -1);

    if (!pod.local) return;
    this.touchTarget(pod.key);
    if (this.policies.ingressIsolated(pod.key)) this.namedPorts.update(pod, 'ingress', -1);
    this.policies.forgetPod(pod.key);
  }

  // ---- namespaces --------------------------------------------------------------------------

  private putNamespace(ns: NamespaceInfo): void {
    this.peerSets.relabelNamespace(ns.name, namespaceLabels(ns.name, ns));
  }

  private removeNamespace(ns: { name: string }): void {
    this.peerSets.relabelNamespace(ns.name, namespaceLabels(ns.name));
  }

  // ---- policies ----------------------------------------------------------------------------

  private putPolicy(np: NetworkPolicyInfo): void {
    const key = podKey(np);
    if (this.policies.holds(key, np)) return;
    this.unlinkPolicy(key);
    this.linkPolicy(np, compilePolicy(np));
  }

  private removePolicy(np: { namespace: string; name: string }): void {
    this.unlinkPolicy(podKey(np));
  }

  private linkPolicy(np: NetworkPolicyInfo, plan: PolicyPlan): void {
    this.recorder.touchPolicy(plan.compiled.id, this.policies.compiled.get(plan.compiled.id));
    this.policies.add(np, plan);
    for (const spec of plan.peerSets) this.peerSets.ref(spec);
    for (const set of plan.ipBlockSets) this.ipBlocks.ref(set);
    // Named sets before targets: a new ingress set is filled from the pods isolated so far, and
    // pods that become isolated below add their triples to it.
    for (const spec of plan.namedPortSets) this.namedPorts.ref(spec);
    for (const pod of this.pods.localIn(plan.namespace)) {
      if (matches(plan.podSelector, pod.labels)) this.setSelected(pod, plan.key, true);
    }
  }

  private unlinkPolicy(key: string): void {
    const plan = this.policies.plan(key);
    if (!plan) return;
    for (const pod of this.pods.localIn(plan.namespace)) {
      if (this.policies.selects(key, pod.key)) this.setSelected(pod, key, false);
    }
    this.recorder.touchPolicy(plan.compiled.id, plan.compiled);
    this.policies.remove(plan);
    for (const spec of plan.peerSets) this.peerSets.unref(spec.id);
    for (const set of plan.ipBlockSets) this.ipBlocks.unref(set.id);
    for (const spec of plan.namedPortSets) this.namedPorts.unref(spec.id);
  }

  /** Whether a policy selects a local pod, keeping the ingress named-port sets in step with
   * whether the pod is isolated for ingress. */
  private setSelected(pod: PodFacts, policyKey: string, selected: boolean): void {
    this.touchTarget(pod.key);
    const was = this.policies.ingressIsolated(pod.key);
    this.policies.select(policyKey, pod.key, selected);
    const now = this.policies.ingressIsolated(pod.key);
    if (was !== now) this.namedPorts.update(pod, 'ingress', now ? +1 : -1);
  }
}
