/** Compiles one ClusterNetworkPolicy on its own (no cluster state): its rules, and the identities
 * of the sets they reference. A peer or port the compiler cannot use makes its rule fail closed
 * (an Accept rule matches nothing; a Deny or Pass rule denies every packet of its direction), naming
 * policy, rule and field. */
import type { ClusterNetworkPolicyInfo, CnpPeerInfo, CnpProtocolInfo, CnpRuleInfo } from '../../k8s/cluster-policy-model';
import { failClosedEffect } from '../../k8s/normalize-cluster-policy';
import type { Direction, IpBlockSet, PolicyError, PortMatch, Protocol } from '../engine/ir';
import { compareStrings, shortId } from '../engine/objects';
import { compact } from '../../k8s/selector';
import { compileIpBlock, isPortName, type NamedPortSetSpec, type PeerSetSpec } from '../engine/rules';
import { compileSelector, type CompiledSelector, type FieldError } from '../../k8s/selector';
import type { ClusterPeerRef, CompiledClusterPolicy, CompiledClusterRule } from './ir';

export interface NodeSetSpec {
  id: string;
  describe: string;
  selector: CompiledSelector;
}

export interface ClusterPolicyPlan {
  name: string;
  compiled: CompiledClusterPolicy;
  /** The subject: invalid requirements are left out, which selects more (as NetworkPolicy's
   * podSelector does). */
  subject: { namespaceSelector: CompiledSelector; podSelector: CompiledSelector };
  peerSets: PeerSetSpec[];
  ipBlockSets: IpBlockSet[];
  namedPortSets: NamedPortSetSpec[];
  nodeSets: NodeSetSpec[];
}

const PEER_FIELD: Record<Direction, string> = { ingress: 'from', egress: 'to' };

export function clusterPolicyId(name: string): string {
  return shortId('c', name);
}

export function compileClusterPolicy(cnp: ClusterNetworkPolicyInfo): ClusterPolicyPlan {
  const errors: PolicyError[] = [];
  const report = (e: FieldError): void => {
    errors.push({ policy: cnp.name, field: e.field, message: e.message });
  };
  cnp.problems?.forEach(report);
  const ns = compileSelector(cnp.subject.namespaceSelector, 'spec.subject.namespaceSelector');
  const pods = compileSelector(cnp.subject.podSelector, 'spec.subject.podSelector');
  ns.errors.forEach(report);
  pods.errors.forEach(report);
  const plan: ClusterPolicyPlan = {
    name: cnp.name,
    compiled: { id: clusterPolicyId(cnp.name), name: cnp.name, tier: cnp.tier, priority: cnp.priority, ingress: [], egress: [], errors },
    subject: { namespaceSelector: ns.selector, podSelector: pods.selector },
    peerSets: [],
    ipBlockSets: [],
    namedPortSets: [],
    nodeSets: [],
  };
  for (const dir of ['ingress', 'egress'] as const) plan.compiled[dir] = cnp[dir].map((rule, i) => compileRule(plan, dir, rule, i, report));
  plan.peerSets = compact(plan.peerSets);
  plan.ipBlockSets = compact(plan.ipBlockSets);
  plan.namedPortSets = compact(plan.namedPortSets);
  plan.nodeSets = compact(plan.nodeSets);
  return plan;
}

/** What a rule matches when it fails closed. */
function failedClosed(rule: CnpRuleInfo, index: number): CompiledClusterRule {
  // The API: "For Deny and Pass rules, fail closed means: treat the rule as a 'Deny all' rule".
  const out: CompiledClusterRule = rule.action === 'Accept' ? { index, action: 'Accept', peers: [], ports: 'any', failedClosed: true } : { index, action: 'Deny', peers: 'any', ports: 'any', failedClosed: true };
  if (rule.name !== undefined) out.name = rule.name;
  return out;
}

function compileRule(plan: ClusterPolicyPlan, dir: Direction, rule: CnpRuleInfo, index: number, report: (e: FieldError) => void): CompiledClusterRule {
  if (rule.failedClosed) return failedClosed(rule, index);
  const at = `spec.${dir}[${index}]`;
  const errors: FieldError[] = [];
  const peerSets: PeerSetSpec[] = [];
  const ipBlocks: IpBlockSet[] = [];
  const nodeSets: NodeSetSpec[] = [];
  const peers: ClusterPeerRef[] = [];
  rule.peers.forEach((peer, k) => {
    for (const ref of compilePeer(peer, `${at}.${PEER_FIELD[dir]}[${k}]`, errors, peerSets, ipBlocks, nodeSets)) {
      if (!peers.some((p) => p.kind === ref.kind && p.set === ref.set)) peers.push(ref);
    }
  });
  const numeric: PortMatch[] = [];
  const named: Array<{ protocol: Protocol; name: string }> = [];
  rule.protocols?.forEach((p, j) => compileProtocol(p, `${at}.protocols[${j}]`, errors, numeric, named));
  const label = rule.name !== undefined ? `rule ${JSON.stringify(rule.name)}` : `rule ${index}`;
  if (errors.length > 0) {
    for (const e of errors) report({ field: e.field, message: `${e.message} (${label}); failing closed: ${failClosedEffect(rule.action, dir)}` });
    return failedClosed(rule, index);
  }
  for (const spec of peerSets) addOnce(plan.peerSets, spec);
  for (const set of ipBlocks) addOnce(plan.ipBlockSets, set);
  for (const spec of nodeSets) addOnce(plan.nodeSets, spec);
  const compiled: CompiledClusterRule = { index, action: rule.action, peers: compact(peers), ports: rule.protocols ? compact(numeric) : 'any' };
  if (rule.name !== undefined) compiled.name = rule.name;
  if (named.length > 0) {
    // Named ports are the destination pod's, in both directions (the subject's for ingress):
    // one cluster-wide set of (address, protocol, port), looked up by destination address.
    const byKey = new Map<string, { protocol: Protocol; name: string }>();
    for (const n of named) byKey.set(`${n.protocol}/${n.name}`, n);
    const keys = [...byKey.keys()].sort(compareStrings);
    const spec: NamedPortSetSpec = { id: shortId('cn', keys.join(',')), direction: 'egress', ports: keys.map((k) => byKey.get(k)!) };
    addOnce(plan.namedPortSets, spec);
    compiled.namedPorts = spec.id;
  }
  return compiled;
}

function addOnce<T extends { id: string }>(list: T[], item: T): void {
  if (!list.some((x) => x.id === item.id)) list.push(item);
}

function compilePeer(peer: CnpPeerInfo, at: string, errors: FieldError[], peerSets: PeerSetSpec[], ipBlocks: IpBlockSet[], nodeSets: NodeSetSpec[]): ClusterPeerRef[] {
  switch (peer.kind) {
    case 'pods': {
      const nss = compileSelector(peer.namespaceSelector, `${at}.namespaceSelector`);
      const pods = compileSelector(peer.podSelector, `${at}.podSelector`);
      errors.push(...nss.errors, ...pods.errors);
      // Ids distinct from NetworkPolicy's peer sets of the same selectors: each engine owns its sets.
      const describe = `cnp nsSel=${nss.selector.canonical} pods=${pods.selector.canonical}`;
      const spec: PeerSetSpec = { id: shortId('cp', describe), describe, namespace: null, namespaceSelector: nss.selector, podSelector: pods.selector };
      addOnce(peerSets, spec);
      return [{ kind: 'pods', set: spec.id }];
    }
    case 'nodes': {
      const nodes = compileSelector(peer.nodeSelector, `${at}.nodes`);
      errors.push(...nodes.errors);
      const describe = `nodes=${nodes.selector.canonical}`;
      const spec: NodeSetSpec = { id: shortId('cd', describe), describe, selector: nodes.selector };
      addOnce(nodeSets, spec);
      return [{ kind: 'nodes', set: spec.id }];
    }
    case 'networks': {
      const refs: ClusterPeerRef[] = [];
      peer.networks.forEach((text, i) => {
        const block = compileIpBlock(text, [], `${at}.networks[${i}]`, errors);
        if (!block) return;
        const set: IpBlockSet = { ...block, id: shortId('cb', block.cidr) };
        addOnce(ipBlocks, set);
        refs.push({ kind: 'ipBlock', set: set.id });
      });
      return refs;
    }
  }
}

function compileProtocol(p: CnpProtocolInfo, at: string, errors: FieldError[], numeric: PortMatch[], named: Array<{ protocol: Protocol; name: string }>): void {
  if ('namedPort' in p) {
    if (!isPortName(p.namedPort)) {
      errors.push({ field: `${at}.destinationNamedPort`, message: `invalid port name ${JSON.stringify(p.namedPort)}` });
      return;
    }
    // A container port's name is unique in a pod whatever its protocol: every protocol may carry it.
    for (const protocol of ['TCP', 'UDP', 'SCTP'] as const) named.push({ protocol, name: p.namedPort });
    return;
  }
  const m: PortMatch = { protocol: p.protocol };
  if (p.port !== undefined) m.port = p.port;
  if (p.endPort !== undefined) m.endPort = p.endPort;
  numeric.push(m);
}
