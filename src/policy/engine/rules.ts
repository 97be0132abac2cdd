/** Compiles one NetworkPolicy object on its own (no cluster state): validation with field paths,
 * policyTypes defaulting, rule entries, and the identities of the sets its rules reference. */

import type { NetworkPolicyInfo, PeerInfo, PolicyPortInfo, PolicyRuleInfo } from '../../k8s/model';
import type { CompiledPolicy, CompiledRule, Direction, IpBlockSet, PeerRef, PolicyError, PortMatch, Protocol } from './ir';
import { formatCidr, formatIp, parseCidr, subtractRanges, type ParsedCidr } from '../../net/ip';
import { PROTOCOLS, compareStrings, podKey, shortId } from './objects';
import { compact } from '../../k8s/selector';
import { compileSelector, type CompiledSelector, type FieldError } from '../../k8s/selector';

/** What a peer set holds: pods matching `podSelector` in `namespace` (when set) or in every
 * namespace matching `namespaceSelector`. */
export interface PeerSetSpec {
  id: string;
  describe: string;
  namespace: string | null;
  namespaceSelector: CompiledSelector | null;
  podSelector: CompiledSelector;
}

export interface NamedPortSetSpec {
  id: string;
  direction: Direction;
  ports: Array<{ protocol: Protocol; name: string }>;
}

export interface PolicyPlan {
  key: string;
  namespace: string;
  compiled: CompiledPolicy;
  /** The pods (in `namespace`) the policy applies to. Invalid requirements are left out, which
   * widens the selection: a broken selector isolates more, never less (fails closed). */
  podSelector: CompiledSelector;
  /** The sets the rules reference, each once, in order of first reference. Lists, not maps: a
   * policy references few sets, and a plan is kept for every policy. */
  peerSets: PeerSetSpec[];
  ipBlockSets: IpBlockSet[];
  namedPortSets: NamedPortSetSpec[];
}

const PEER_FIELD: Record<Direction, string> = { ingress: 'from', egress: 'to' };

export function compilePolicy(np: NetworkPolicyInfo): PolicyPlan {
  const key = podKey(np);
  const errors: PolicyError[] = [];
  const report = (e: FieldError): void => {
    errors.push({ policy: key, field: e.field, message: e.message });
  };
  // What normalization survived by failing closed (a part left out, or a whole policy replaced).
  np.problems?.forEach(report);
  const target = compileSelector(np.podSelector, 'spec.podSelector');
  target.errors.forEach(report);
  const plan: PolicyPlan = {
    key,
    namespace: np.namespace,
    compiled: { id: shortId('p', key), namespace: np.namespace, name: np.name, errors },
    podSelector: target.selector,
    peerSets: [],
    ipBlockSets: [],
    namedPortSets: [],
  };

  for (const direction of policyDirections(np, report)) {
    plan.compiled[direction] = (np[direction] ?? []).map((rule, i) => compileRule(plan, direction, rule, i, report));
  }
  plan.peerSets = compact(plan.peerSets);
  plan.ipBlockSets = compact(plan.ipBlockSets);
  plan.namedPortSets = compact(plan.namedPortSets);
  return plan;
}

/** policyTypes with the API's defaulting: when absent or empty, Ingress, plus Egress if there
 * are egress rules. An unknown type is an error and isolates both directions (fails closed). */
function policyDirections(np: NetworkPolicyInfo, report: (e: FieldError) => void): Direction[] {
  if (!np.policyTypes || np.policyTypes.length === 0) {
    return np.egress && np.egress.length > 0 ? ['ingress', 'egress'] : ['ingress'];
  }
  const out = new Set<Direction>();
  np.policyTypes.forEach((t, i) => {
    if (t === 'Ingress') out.add('ingress');
    else if (t === 'Egress') out.add('egress');
    else {
      report({ field: `spec.policyTypes[${i}]`, message: `unknown policy type ${JSON.stringify(t)} (expected Ingress or Egress); isolating both directions` });
      out.add('ingress').add('egress');
    }
  });
  return (['ingress', 'egress'] as const).filter((d) => out.has(d));
}

/** A rule entry with any error allows nothing: `peers: []` references no set. */
function compileRule(plan: PolicyPlan, direction: Direction, rule: PolicyRuleInfo, index: number, report: (e: FieldError) => void): CompiledRule {
  const at = `spec.${direction}[${index}]`;
  const errors: FieldError[] = [];
  const peerSets: PeerSetSpec[] = [];
  const ipBlocks: IpBlockSet[] = [];
  const peers: PeerRef[] = [];
  rule.peers?.forEach((peer, k) => {
    const ref = compilePeer(plan.namespace, peer, `${at}.${PEER_FIELD[direction]}[${k}]`, errors, peerSets, ipBlocks);
    if (ref && !peers.some((p) => p.kind === ref.kind && p.set === ref.set)) peers.push(ref);
  });

  const numeric: PortMatch[] = [];
  const named: Array<{ protocol: Protocol; name: string }> = [];
  rule.ports?.forEach((port, j) => compilePort(port, `${at}.ports[${j}]`, errors, numeric, named));

  if (errors.length > 0) {
    errors.forEach(report);
    return { peers: [], ports: [] };
  }
  for (const spec of peerSets) addOnce(plan.peerSets, spec);
  for (const set of ipBlocks) addOnce(plan.ipBlockSets, set);
  const compiled: CompiledRule = {
    peers: rule.peers && rule.peers.length > 0 ? compact(peers) : 'any',
    ports: rule.ports && rule.ports.length > 0 ? compact(numeric) : 'any',
  };
  if (named.length > 0) {
    const byKey = new Map<string, { protocol: Protocol; name: string }>();
    for (const n of named) byKey.set(`${n.protocol}/${n.name}`, n);
    const keys = [...byKey.keys()].sort(compareStrings);
    const spec: NamedPortSetSpec = { id: shortId('np', `${direction} ${keys.join(',')}`), direction, ports: keys.map((k) => byKey.get(k)!) };
    addOnce(plan.namedPortSets, spec);
    compiled.namedPorts = spec.id;
  }
  return compiled;
}

/** Appends `item` unless an item with its id is there (same id, same content). */
function addOnce<T extends { id: string }>(list: T[], item: T): void {
  if (!list.some((x) => x.id === item.id)) list.push(item);
}

function compilePeer(
  namespace: string,
  peer: PeerInfo,
  at: string,
  errors: FieldError[],
  peerSets: PeerSetSpec[],
  ipBlocks: IpBlockSet[],
): PeerRef | undefined {
  if (peer.ipBlock) {
    if (peer.podSelector || peer.namespaceSelector) {
      errors.push({ field: at, message: 'ipBlock cannot be combined with podSelector or namespaceSelector' });
      return undefined;
    }
    const set = compileIpBlock(peer.ipBlock.cidr, peer.ipBlock.except ?? [], `${at}.ipBlock`, errors);
    if (!set) return undefined;
    addOnce(ipBlocks, set);
    return { kind: 'ipBlock', set: set.id };
  }
  if (!peer.podSelector && !peer.namespaceSelector) {
    errors.push({ field: at, message: 'a peer must set podSelector, namespaceSelector or ipBlock' });
    return undefined;
  }
  const pods = compileSelector(peer.podSelector, `${at}.podSelector`);
  const nss = peer.namespaceSelector ? compileSelector(peer.namespaceSelector, `${at}.namespaceSelector`) : null;
  errors.push(...pods.errors, ...(nss?.errors ?? []));
  const describe = nss ? `nsSel=${nss.selector.canonical} pods=${pods.selector.canonical}` : `ns=${namespace} pods=${pods.selector.canonical}`;
  const spec: PeerSetSpec = {
    id: shortId('ps', describe),
    describe,
    namespace: nss ? null : namespace,
    namespaceSelector: nss?.selector ?? null,
    podSelector: pods.selector,
  };
  addOnce(peerSets, spec);
  return { kind: 'pods', set: spec.id };
}

export function compileIpBlock(cidrText: unknown, exceptTexts: unknown[], at: string, errors: FieldError[]): IpBlockSet | undefined {
  const cidr = typeof cidrText === 'string' ? parseCidr(cidrText) : undefined;
  if (!cidr) {
    errors.push({ field: `${at}.cidr`, message: `invalid CIDR ${JSON.stringify(cidrText)}` });
    return undefined;
  }
  const excepts: ParsedCidr[] = [];
  let ok = true;
  exceptTexts.forEach((text, m) => {
    const e = typeof text === 'string' ? parseCidr(text) : undefined;
    const field = `${at}.except[${m}]`;
    if (!e) {
      errors.push({ field, message: `invalid CIDR ${JSON.stringify(text)}` });
      ok = false;
    } else if (e.family !== cidr.family || e.first < cidr.first || e.last > cidr.last || e.prefix <= cidr.prefix) {
      errors.push({ field, message: `${JSON.stringify(text)} must be a strict subset of cidr ${formatCidr(cidr)}` });
      ok = false;
    } else {
      excepts.push(e);
    }
  });
  if (!ok) return undefined;
  const cidrText2 = formatCidr(cidr);
  const except = [...new Set(excepts.map(formatCidr))].sort();
  return {
    id: shortId('ib', `${cidrText2} except ${except.join(',')}`),
    family: cidr.family,
    cidr: cidrText2,
    except,
    ranges: subtractRanges(cidr, excepts).map(([a, b]) => [formatIp(cidr.family, a), formatIp(cidr.family, b)]),
  };
}

/** IANA_SVC_NAME as the API validates a named port: 1-15 of [a-z0-9-], at least one letter,
 * no leading, trailing or doubled hyphen. */
export function isPortName(name: string): boolean {
  return /^[a-z0-9]([a-z0-9-]{0,13}[a-z0-9])?$/.test(name) && /[a-z]/.test(name) && !name.includes('--');
}

function compilePort(
  port: PolicyPortInfo,
  at: string,
  errors: FieldError[],
  numeric: PortMatch[],
  named: Array<{ protocol: Protocol; name: string }>,
): void {
  const protocol = port.protocol ?? 'TCP';
  if (!PROTOCOLS.has(protocol)) {
    errors.push({ field: `${at}.protocol`, message: `unknown protocol ${JSON.stringify(protocol)} (expected TCP, UDP or SCTP)` });
    return;
  }
  const proto = protocol as Protocol;
  const isPortNumber = (n: unknown): n is number => typeof n === 'number' && Number.isInteger(n) && n >= 1 && n <= 65535;
  if (port.port === undefined || port.port === null) {
    if (port.endPort !== undefined) errors.push({ field: `${at}.endPort`, message: 'endPort requires a numeric port' });
    else numeric.push({ protocol: proto });
    return;
  }
  if (typeof port.port === 'string') {
    if (!isPortName(port.port)) errors.push({ field: `${at}.port`, message: `invalid port name ${JSON.stringify(port.port)}` });
    else if (port.endPort !== undefined) errors.push({ field: `${at}.endPort`, message: 'endPort cannot be used with a named port' });
    else named.push({ protocol: proto, name: port.port });
    return;
  }
  if (!isPortNumber(port.port)) {
    errors.push({ field: `${at}.port`, message: `invalid port ${JSON.stringify(port.port)} (expected 1-65535 or a port name)` });
    return;
  }
  if (port.endPort === undefined || port.endPort === null) {
    numeric.push({ protocol: proto, port: port.port });
  } else if (!isPortNumber(port.endPort) || port.endPort < port.port) {
    errors.push({ field: `${at}.endPort`, message: `invalid endPort ${JSON.stringify(port.endPort)} (expected ${port.port}-65535)` });
  } else {
    numeric.push({ protocol: proto, port: port.port, endPort: port.endPort });
  }
}
