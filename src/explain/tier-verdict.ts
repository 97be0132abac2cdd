/** The ClusterNetworkPolicy tiers in the model's verdict, written from the v1alpha2 semantics
 * over the compiled tiers: per direction, the Admin tier's policies (priority, then name; rules in
 * order) for a subject pod on this node, then NetworkPolicy when it isolates the pod, then the
 * Baseline tier; Accept and Deny decide, Pass goes on to the next stage, and nothing decided is
 * allowed. A Deny of a pod in an audit namespace is let through (audit mode). */
import type { Direction } from '../policy/engine/ir';
import { asRuleEntry } from '../policy/cluster/render';
import type { ClusterState } from '../policy/cluster/engine';
import { ClusterPolicyEngine, subjectSetId } from '../policy/cluster/engine';
import type { ClusterSnapshot } from '../k8s/source';
import type { PolicyModes } from '../policy/modes';
import { podFacts } from '../policy/engine/objects';
import { canonicalIp } from '../net/ip';
import { comparePolicies, type CnpTier } from '../policy/cluster/ir';
import { CLUSTER_POLICY_PREFIX, ruleDisplayName } from '../policy/cluster/labels';
import { isV6 } from '../net/ip-text';
import type { FlowPacket } from './flow';
import { ruleAllows, type SideVerdict, type SideWrapper } from './model-verdict';

/** `audited(address)`: the local pod at the address is in audit mode. */
export function tiersModel(state: ClusterState, audited: (address: string) => boolean): SideWrapper | undefined {
  if (state.policies.size === 0) return undefined;
  const peerSets = new Map([...state.addressSets].map(([id, s]) => [id, { ...s, describe: '' }]));
  const sets = { peerSets, ipBlockSets: state.ipBlockSets, namedPortSets: state.namedPortSets };
  const ordered = [...state.policies.values()].sort(comparePolicies);
  const tier = (name: CnpTier, dir: Direction, p: FlowPacket): SideVerdict | undefined => {
    const subject = dir === 'egress' ? p.src : p.dst;
    const peer = dir === 'egress' ? p.dst : p.src;
    const fam = isV6(subject) ? 'v6' : 'v4';
    for (const policy of ordered) {
      if (policy.tier !== name || !state.addressSets.get(subjectSetId(policy.id))?.[fam].includes(subject)) continue;
      for (const rule of policy[dir]) {
        if (!ruleAllows(sets, asRuleEntry(rule), peer, p)) continue;
        if (rule.action === 'Pass') return undefined;
        const decidedBy = `${CLUSTER_POLICY_PREFIX}${policy.name} ${dir}[${rule.index}] (${ruleDisplayName(rule)})`;
        const out: SideVerdict = { direction: dir, pod: subject, policies: [], allowed: rule.action === 'Accept', tier: { tier: name, decidedBy, action: rule.action } };
        if (!out.allowed && audited(subject)) out.allowed = out.audit = true;
        return out;
      }
    }
    return undefined;
  };
  return (dir, p, networkPolicy) => {
    const admin = tier('Admin', dir, p);
    if (admin) return admin;
    const np = networkPolicy();
    if (np.pod) return np;
    return tier('Baseline', dir, p) ?? np;
  };
}

/** The tiers of a cluster snapshot as the model sees them (undefined: no ClusterNetworkPolicy). */
export function explainTiers(snap: ClusterSnapshot, nodeName: string, modes: PolicyModes): SideWrapper | undefined {
  const engine = new ClusterPolicyEngine(nodeName);
  engine.batch(() => {
    for (const ns of snap.namespaces.values()) engine.upsertNamespace(ns);
    for (const pod of snap.pods.values()) engine.upsertPod(pod);
    for (const node of snap.nodes?.values() ?? []) engine.upsertNode(node);
    for (const cnp of snap.clusterPolicies?.values() ?? []) engine.upsertPolicy(cnp);
  });
  const local = new Map<string, string>();
  for (const pod of snap.pods.values()) {
    const facts = podFacts(pod, nodeName);
    if (facts.local) for (const ip of facts.v4.concat(facts.v6)) local.set(ip, facts.namespace);
  }
  return tiersModel(engine.state(), (address) => {
    const ns = local.get(canonicalIp(address)?.text ?? address);
    return ns !== undefined && modes.mode(ns) === 'audit';
  });
}
