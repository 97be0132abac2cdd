/** What a drop log line needs to name things, kept from the same change stream the agent
 * enforces: pods by address (cluster-wide, and this node's own, whose default deny logged), and the
 * policies of each namespace with their compiled pod selectors. Each change costs work for that
 * object only; a lookup costs the policies of one namespace. */
import type { ClusterChange, ClusterSnapshot } from '../../k8s/source';
import type { PodInfo } from '../../k8s/model';
import type { Direction } from '../engine/ir';
import { podFacts, type PodFacts } from '../engine/objects';
import { compilePolicy, type PolicyPlan } from '../engine/rules';
import { matches } from '../../k8s/selector';
import type { ClusterNetworkPolicyInfo } from '../../k8s/cluster-policy-model';
import { clusterPolicyId } from '../cluster/compile';
import { CLUSTER_POLICY_PREFIX, ruleDisplayName } from '../cluster/labels';

export class ClusterView {
  private readonly pods = new Map<string, PodFacts>();
  /** Canonical address -> keys of the eligible pods holding it (a pod leaving while its
   * successor arrives may briefly share one). */
  private readonly byAddress = new Map<string, string[]>();
  private readonly plans = new Map<string, Map<string, PolicyPlan>>();
  /** ClusterNetworkPolicies by id (what their log prefixes carry): name and rule names. */
  private readonly clusterPolicies = new Map<string, { name: string; rules: Record<Direction, (string | undefined)[]> }>();

  constructor(private readonly nodeName: string) {}

  load(snapshot: ClusterSnapshot): void {
    for (const pod of snapshot.pods.values()) this.upsertPod(pod);
    for (const [key, np] of snapshot.policies) this.plansOf(np.namespace).set(key, compilePolicy(np));
    for (const cnp of snapshot.clusterPolicies?.values() ?? []) this.putClusterPolicy(cnp);
  }

  private putClusterPolicy(cnp: Readonly<ClusterNetworkPolicyInfo>): void {
    this.clusterPolicies.set(clusterPolicyId(cnp.name), { name: cnp.name, rules: { ingress: cnp.ingress.map((r) => r.name), egress: cnp.egress.map((r) => r.name) } });
  }

  /** `clusternetworkpolicy/NAME` and the rule's name (or `#index`) of a ClusterNetworkPolicy
   * rule by the policy's id, as its drop log prefix names it. */
  clusterRule(policyId: string, dir: Direction, index: number): { policy: string; rule: string } | undefined {
    const p = this.clusterPolicies.get(policyId);
    if (!p) return undefined;
    return { policy: `${CLUSTER_POLICY_PREFIX}${p.name}`, rule: ruleDisplayName({ name: p.rules[dir][index], index }) };
  }

  apply(c: ClusterChange): void {
    if (c.kind === 'Pod') {
      this.removePod(c.key);
      if (c.type === 'upsert') this.upsertPod(c.object);
    } else if (c.kind === 'NetworkPolicy') {
      if (c.type === 'upsert') this.plansOf(c.object.namespace).set(c.key, compilePolicy(c.object));
      else this.plans.get(c.object.namespace)?.delete(c.key);
    } else if (c.kind === 'ClusterNetworkPolicy') {
      if (c.type === 'upsert') this.putClusterPolicy(c.object);
      else this.clusterPolicies.delete(clusterPolicyId(c.key));
    }
  }

  /** `namespace/name` of the pod holding the address, if any. */
  podAt(address: string): string | undefined {
    return this.byAddress.get(address)?.[0];
  }

  /** `namespace/name` of the pod of this node holding the address: the pod whose default deny
   * logged a packet to (ingress) or from (egress) it. The first by key, as the renderer decides
   * when two briefly share an address. */
  localPodAt(address: string): string | undefined {
    let first: string | undefined;
    for (const k of this.byAddress.get(address) ?? []) if (this.pods.get(k)?.local && (first === undefined || k < first)) first = k;
    return first;
  }

  /** `namespace/name` of every policy that selects the pod and isolates it in `dir`: the
   * policies none of whose rules allowed a dropped packet. */
  policiesFor(podKey: string, dir: Direction): string[] {
    const pod = this.pods.get(podKey);
    if (!pod) return [];
    const out: string[] = [];
    for (const plan of this.plans.get(pod.namespace)?.values() ?? []) {
      if (plan.compiled[dir] && matches(plan.podSelector, pod.labels)) out.push(plan.key);
    }
    return out.sort();
  }

  private plansOf(namespace: string): Map<string, PolicyPlan> {
    let m = this.plans.get(namespace);
    if (!m) this.plans.set(namespace, (m = new Map()));
    return m;
  }

  private upsertPod(pod: Readonly<PodInfo>): void {
    const facts = podFacts(pod as PodInfo, this.nodeName);
    this.pods.set(facts.key, facts);
    if (!facts.eligible) return;
    for (const a of [...facts.v4, ...facts.v6]) {
      const keys = this.byAddress.get(a);
      if (keys) keys.push(facts.key);
      else this.byAddress.set(a, [facts.key]);
    }
  }

  private removePod(key: string): void {
    const facts = this.pods.get(key);
    if (!facts) return;
    this.pods.delete(key);
    for (const a of [...facts.v4, ...facts.v6]) {
      const keys = this.byAddress.get(a)?.filter((k) => k !== key);
      if (keys && keys.length > 0) this.byAddress.set(a, keys);
      else this.byAddress.delete(a);
    }
  }
}
