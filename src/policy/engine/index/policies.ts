/** The policies the engine holds: each as given and as planned, filed by namespace and pod
 * selector, and which of them select each local pod. */

import type { NetworkPolicyInfo } from '../../../k8s/model';
import { samePolicyInput } from '../equality';
import type { CompiledPolicy, Target } from '../ir';
import { shortId, type PodFacts } from '../objects';
import type { PolicyPlan } from '../rules';
import { SelectorIndex, matches } from '../../../k8s/selector';
import { addTo, removeFrom } from './collections';

export class PolicyIndex {
  /** Each policy as last given and its plan. Inputs are not modified once passed in (pods'
   * labels are kept the same way), so the one kept is compared when the policy comes again. */
  private readonly held = new Map<string, { input: NetworkPolicyInfo; plan: PolicyPlan }>();
  /** Compiled policies by id. */
  readonly compiled = new Map<string, CompiledPolicy>();
  /** Policies compiled with input errors: each isolates what it selects and its broken parts
   * allow nothing (fail closed). */
  private failed = 0;
  /** Per namespace: the policies, by their pod selector. */
  private readonly bySelector = new Map<string, SelectorIndex<string>>();
  /** Policies (by key) selecting each local pod. */
  private readonly podPolicies = new Map<string, Set<string>>();

  get size(): number {
    return this.held.size;
  }

  get failedClosed(): number {
    return this.failed;
  }

  /** True when the policy is held as given. */
  holds(key: string, input: NetworkPolicyInfo): boolean {
    const prev = this.held.get(key)?.input;
    return prev !== undefined && samePolicyInput(prev, input);
  }

  plan(key: string): PolicyPlan | undefined {
    return this.held.get(key)?.plan;
  }

  /** Holds a policy (not held before) and files it; selecting pods is the caller's. */
  add(input: NetworkPolicyInfo, plan: PolicyPlan): void {
    this.held.set(plan.key, { input, plan });
    if (plan.compiled.errors.length > 0) this.failed++;
    this.compiled.set(plan.compiled.id, plan.compiled);
    let index = this.bySelector.get(plan.namespace);
    if (!index) this.bySelector.set(plan.namespace, (index = new SelectorIndex()));
    index.add(plan.key, plan.podSelector);
  }

  /** Lets go of a policy that selects no pod any more. */
  remove(plan: PolicyPlan): void {
    if (plan.compiled.errors.length > 0) this.failed--;
    const index = this.bySelector.get(plan.namespace)!;
    index.remove(plan.key);
    if (index.size === 0) this.bySelector.delete(plan.namespace);
    this.compiled.delete(plan.compiled.id);
    this.held.delete(plan.key);
  }

  /** Records the policies selecting a local pod that arrived. */
  matchPod(pod: PodFacts): void {
    for (const key of this.bySelector.get(pod.namespace)?.candidates(pod.labels) ?? []) {
      if (matches(this.held.get(key)!.plan.podSelector, pod.labels)) addTo(this.podPolicies, pod.key, key);
    }
  }

  forgetPod(podKey: string): void {
    this.podPolicies.delete(podKey);
  }

  selects(policyKey: string, podKey: string): boolean {
    return this.podPolicies.get(podKey)?.has(policyKey) ?? false;
  }

  select(policyKey: string, podKey: string, selected: boolean): void {
    if (selected) addTo(this.podPolicies, podKey, policyKey);
    else removeFrom(this.podPolicies, podKey, policyKey);
  }

  ingressIsolated(podKey: string): boolean {
    for (const policyKey of this.podPolicies.get(podKey) ?? []) {
      if (this.held.get(policyKey)!.plan.compiled.ingress) return true;
    }
    return false;
  }

  /** Keys of the local pods isolated for ingress. */
  ingressIsolatedPods(): string[] {
    const keys: string[] = [];
    for (const key of this.podPolicies.keys()) if (this.ingressIsolated(key)) keys.push(key);
    return keys;
  }

  /** The pod as a target of the policies selecting it (keeping the id of the target it was), or
   * undefined when it is not local or nothing isolates it. */
  target(pod: PodFacts, previous: Target | undefined): Target | undefined {
    const selecting = this.podPolicies.get(pod.key);
    if (!pod.local || !selecting) return undefined;
    const ingress: string[] = [];
    const egress: string[] = [];
    for (const policyKey of selecting) {
      const compiled = this.held.get(policyKey)!.plan.compiled;
      if (compiled.ingress) ingress.push(compiled.id);
      if (compiled.egress) egress.push(compiled.id);
    }
    if (ingress.length + egress.length === 0) return undefined;
    return {
      key: pod.key,
      id: previous?.id ?? shortId('t', pod.key),
      v4: pod.v4,
      v6: pod.v6,
      ingress: ingress.length > 0 ? ingress.sort() : null,
      egress: egress.length > 0 ? egress.sort() : null,
    };
  }
}
