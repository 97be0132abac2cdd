/** Compiles the whole intent for one node from a snapshot, from scratch. Straightforward by
 * design: it is also the reference the incremental engine is tested against. */

import type { NamespaceInfo } from '../../k8s/model';
import type { CompiledPolicy, IpBlockSet, NamedPortSet, PeerSet, PolicyIR, PolicyInputs, PortTriple, Target } from './ir';
import { compareTriples, namespaceLabels, podFacts, podTriples, shortId, type PodFacts } from './objects';
import { compilePolicy, type PolicyPlan } from './rules';
import { matches } from '../../k8s/selector';

export function compileFull(inputs: PolicyInputs, nodeName: string): PolicyIR {
  const namespaces = new Map<string, NamespaceInfo>();
  for (const ns of inputs.namespaces) namespaces.set(ns.name, ns);
  const labelsOfNamespace = new Map<string, Record<string, string>>();
  const pods = new Map<string, PodFacts>();
  for (const pod of inputs.pods) {
    const facts = podFacts(pod, nodeName);
    pods.set(facts.key, facts);
  }
  const podsByNamespace = new Map<string, PodFacts[]>();
  for (const pod of pods.values()) {
    if (!pod.eligible) continue;
    let list = podsByNamespace.get(pod.namespace);
    if (!list) podsByNamespace.set(pod.namespace, (list = []));
    list.push(pod);
  }
  for (const ns of podsByNamespace.keys()) labelsOfNamespace.set(ns, namespaceLabels(ns, namespaces.get(ns)));
  const plans = new Map<string, PolicyPlan>();
  for (const np of inputs.policies) {
    const plan = compilePolicy(np);
    plans.set(plan.key, plan);
  }
  const plansByNamespace = new Map<string, PolicyPlan[]>();
  for (const plan of plans.values()) {
    let list = plansByNamespace.get(plan.namespace);
    if (!list) plansByNamespace.set(plan.namespace, (list = []));
    list.push(plan);
  }

  const ir: PolicyIR = {
    nodeName,
    targets: new Map(),
    policies: new Map(),
    peerSets: new Map(),
    ipBlockSets: new Map(),
    namedPortSets: new Map(),
  };

  for (const plan of plans.values()) ir.policies.set(plan.compiled.id, plan.compiled as CompiledPolicy);

  for (const pod of pods.values()) {
    if (!pod.local) continue;
    const ingress: string[] = [];
    const egress: string[] = [];
    for (const plan of plansByNamespace.get(pod.namespace) ?? []) {
      if (!matches(plan.podSelector, pod.labels)) continue;
      if (plan.compiled.ingress) ingress.push(plan.compiled.id);
      if (plan.compiled.egress) egress.push(plan.compiled.id);
    }
    if (ingress.length + egress.length === 0) continue;
    const target: Target = {
      key: pod.key,
      id: shortId('t', pod.key),
      v4: pod.v4,
      v6: pod.v6,
      ingress: ingress.length > 0 ? ingress.sort() : null,
      egress: egress.length > 0 ? egress.sort() : null,
    };
    ir.targets.set(pod.key, target);
  }

  for (const plan of plans.values()) {
    for (const spec of plan.peerSets) {
      if (ir.peerSets.has(spec.id)) continue;
      const v4 = new Set<string>();
      const v6 = new Set<string>();
      const scope = spec.namespace !== null ? [spec.namespace] : [...podsByNamespace.keys()];
      for (const nsName of scope) {
        if (spec.namespaceSelector && !matches(spec.namespaceSelector, labelsOfNamespace.get(nsName)!)) continue;
        for (const pod of podsByNamespace.get(nsName) ?? []) {
          if (!matches(spec.podSelector, pod.labels)) continue;
          pod.v4.forEach((ip) => v4.add(ip));
          pod.v6.forEach((ip) => v6.add(ip));
        }
      }
      const set: PeerSet = { id: spec.id, describe: spec.describe, v4: [...v4].sort(), v6: [...v6].sort() };
      ir.peerSets.set(spec.id, set);
    }
    for (const set of plan.ipBlockSets) ir.ipBlockSets.set(set.id, set as IpBlockSet);
    for (const spec of plan.namedPortSets) {
      if (ir.namedPortSets.has(spec.id)) continue;
      const v4 = new Map<string, PortTriple>();
      const v6 = new Map<string, PortTriple>();
      const candidates = spec.direction === 'ingress' ? [...ir.targets.values()].filter((t) => t.ingress).map((t) => pods.get(t.key)!) : pods.values();
      for (const pod of candidates) {
        if (!pod.eligible) continue;
        const triples = podTriples(pod, spec.ports);
        triples.v4.forEach((t) => v4.set(`${t.ip} ${t.protocol} ${t.port}`, t));
        triples.v6.forEach((t) => v6.set(`${t.ip} ${t.protocol} ${t.port}`, t));
      }
      const set: NamedPortSet = {
        id: spec.id,
        direction: spec.direction,
        ports: spec.ports,
        v4: [...v4.values()].sort(compareTriples),
        v6: [...v6.values()].sort(compareTriples),
      };
      ir.namedPortSets.set(spec.id, set);
    }
  }
  return ir;
}
