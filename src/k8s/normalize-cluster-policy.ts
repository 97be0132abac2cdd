/** ClusterNetworkPolicy (v1alpha2) from a typed LIST model, a raw WATCH object or a manifest, to
 * the plain data of cluster-policy-model.ts. Like a NetworkPolicy, a ClusterNetworkPolicy is
 * never dropped for a part that cannot be read (that would let through what it denied):
 * - a rule whose action, peers or protocols cannot be read, or that uses what this agent does
 *   not implement (a peer with no field it knows, `domainNames`, a field of a newer API), fails
 *   closed as the API asks: an Accept rule matches nothing; a Deny or Pass rule (an unknown action
 *   counts as Deny) becomes "Deny all", denying every packet of its direction;
 * - an unreadable tier is taken as Admin, an unreadable priority as 0 (its Deny rules then come
 *   first), an unreadable subject selector selects what its readable part selects (more, never
 *   less), and its Accept rules then match nothing.
 * Each case goes to `onProblem` naming the object and field, and into the result's `problems`. */
import { K8sObjectError } from './errors';
import type { ClusterNetworkPolicyInfo, CnpAction, CnpPeerInfo, CnpPodsSelector, CnpProtocolInfo, CnpRuleInfo, CnpTier } from './cluster-policy-model';
import type { LabelSelector } from './model';
import { FieldReader, isRecord, labelSelector, problemSink, readableSelector, readObject, type NormalizeOptions } from './normalize';

type Obj = Record<string, unknown>;
type Direction = 'ingress' | 'egress';

const TIERS: ReadonlySet<string> = new Set(['Admin', 'Baseline']);
const ACTIONS: ReadonlySet<string> = new Set(['Accept', 'Deny', 'Pass']);
const PEER_FIELD: Record<Direction, 'from' | 'to'> = { ingress: 'from', egress: 'to' };
/** The peer kinds each direction knows; `domainNames` is read as unknown (not implemented). */
const PEER_KINDS: Record<Direction, ReadonlySet<string>> = {
  ingress: new Set(['namespaces', 'pods']),
  egress: new Set(['namespaces', 'pods', 'networks', 'nodes']),
};
const PROTOCOL_KEYS: Record<string, 'TCP' | 'UDP' | 'SCTP'> = { tcp: 'TCP', udp: 'UDP', sctp: 'SCTP' };
/** The API's limits (MaxItems=25 for rules, peers, networks and protocols; rule names <= 100). */
const MAX_ITEMS = 25;
const MAX_RULE_NAME = 100;

export function normalizeClusterNetworkPolicy(raw: unknown, opts: NormalizeOptions = {}): ClusterNetworkPolicyInfo {
  const { id, r, spec } = readObject('ClusterNetworkPolicy', raw, opts);
  const onProblem = problemSink(opts);
  const problems: NonNullable<ClusterNetworkPolicyInfo['problems']> = [];
  const report = (err: K8sObjectError): void => {
    onProblem(err);
    problems.push({ field: err.field, message: err.problem });
  };
  const survive = <T>(fn: () => T, fallback: T): T => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof K8sObjectError)) throw err;
      report(err);
      return fallback;
    }
  };

  let trusted = true;
  const tier = survive<CnpTier | undefined>(() => {
    const t = r.string(spec.tier, 'spec.tier');
    if (!TIERS.has(t)) r.fail('spec.tier', `unknown tier ${JSON.stringify(t)} (expected Admin or Baseline); enforced as Admin, its Accept rules matching nothing`);
    return t as CnpTier;
  }, undefined);
  const priority = survive<number | undefined>(() => {
    const p = r.optInteger(spec.priority, 'spec.priority');
    if (p === undefined || p < 0 || p > 1000) r.fail('spec.priority', `${p === undefined ? 'missing' : p + ' is out of range'} (expected 0-1000); enforced as 0, its Accept rules matching nothing`);
    return p;
  }, undefined);
  const subject = survive<CnpPodsSelector | undefined>(() => readSubject(r, spec.subject), undefined);
  if (tier === undefined || priority === undefined || subject === undefined) trusted = false;

  const policy: ClusterNetworkPolicyInfo = {
    name: id.name,
    tier: tier ?? 'Admin',
    priority: priority ?? 0,
    subject: subject ?? readableSubject(spec.subject),
    ingress: [],
    egress: [],
  };
  for (const dir of ['ingress', 'egress'] as const) {
    const list = survive(() => r.optArray(spec[dir], `spec.${dir}`), undefined) ?? [];
    if (list.length > MAX_ITEMS) report(new K8sObjectError(r.object, `spec.${dir}`, `${list.length} rules (the API allows ${MAX_ITEMS}); all are enforced`));
    policy[dir] = list.map((item, i) => readRule(r, item, dir, `spec.${dir}[${i}]`, report));
    if (!trusted) policy[dir] = policy[dir].map((rule) => (rule.action === 'Accept' ? { ...rule, failedClosed: true } : rule));
  }
  if (problems.length > 0) policy.problems = problems;
  return policy;
}

function readSubject(r: FieldReader, v: unknown): CnpPodsSelector {
  const subject = r.record(v, 'spec.subject');
  const keys = Object.keys(subject).filter((k) => subject[k] !== undefined && subject[k] !== null);
  if (keys.length !== 1) r.fail('spec.subject', `exactly one of namespaces or pods must be set, got ${keys.length === 0 ? 'none' : keys.join(', ')}`);
  if (keys[0] === 'namespaces') return { namespaceSelector: labelSelector(r, subject.namespaces, 'spec.subject.namespaces') ?? {}, podSelector: {} };
  if (keys[0] === 'pods') return namespacedPod(r, subject.pods, 'spec.subject.pods');
  return r.fail(`spec.subject.${keys[0]}`, 'unknown subject kind (expected namespaces or pods)');
}

/** The subject reduced to what can be read: selects at least what was meant. */
function readableSubject(v: unknown): CnpPodsSelector {
  const subject = isRecord(v) ? v : {};
  if (isRecord(subject.pods)) return { namespaceSelector: readableSelector(subject.pods.namespaceSelector), podSelector: readableSelector(subject.pods.podSelector) };
  if (isRecord(subject.namespaces)) return { namespaceSelector: readableSelector(subject.namespaces), podSelector: {} };
  return { namespaceSelector: {}, podSelector: {} };
}

function namespacedPod(r: FieldReader, v: unknown, field: string): CnpPodsSelector {
  const pods = r.record(v, field);
  return {
    namespaceSelector: labelSelector(r, pods.namespaceSelector, `${field}.namespaceSelector`) ?? {},
    podSelector: labelSelector(r, pods.podSelector, `${field}.podSelector`) ?? {},
  };
}

/** A rule; what cannot be read makes it fail closed (never thrown past here, so one bad rule
 * does not hold back the others). */
function readRule(r: FieldReader, v: unknown, dir: Direction, at: string, report: (err: K8sObjectError) => void): CnpRuleInfo {
  const failed = (rule: CnpRuleInfo, err: unknown): CnpRuleInfo => {
    if (!(err instanceof K8sObjectError)) throw err;
    report(new K8sObjectError(err.object, err.field, `${err.problem}; failing closed: ${failClosedEffect(rule.action, dir)}`));
    // The API: "For Deny and Pass rules, fail closed means: treat the rule as a 'Deny all' rule".
    return { ...(rule.name !== undefined ? { name: rule.name } : {}), action: rule.action === 'Accept' ? 'Accept' : 'Deny', peers: [], failedClosed: true };
  };
  const rule: CnpRuleInfo = { action: 'Deny', peers: [] };
  try {
    const rec = r.record(v, at);
    const name = r.optString(rec.name, `${at}.name`);
    if (name) rule.name = name.length > MAX_RULE_NAME ? name.slice(0, MAX_RULE_NAME) : name;
    const action = r.string(rec.action, `${at}.action`);
    if (!ACTIONS.has(action)) r.fail(`${at}.action`, `unknown action ${JSON.stringify(action)} (expected Accept, Deny or Pass); read as Deny`);
    rule.action = action as CnpAction;
    const peerField = PEER_FIELD[dir];
    const peers = r.optArray(rec[peerField] ?? (dir === 'ingress' ? rec._from : undefined), `${at}.${peerField}`);
    if (!peers || peers.length === 0) r.fail(`${at}.${peerField}`, 'must list at least one peer');
    rule.peers = peers.map((p, i) => readPeer(r, p, dir, `${at}.${peerField}[${i}]`));
    const protocols = r.optArray(rec.protocols, `${at}.protocols`);
    if (protocols && protocols.length > 0) rule.protocols = protocols.map((p, i) => readProtocol(r, p, `${at}.protocols[${i}]`));
    if (rule.protocols?.some((p) => 'namedPort' in p) && rule.peers.some((p) => p.kind !== 'pods')) {
      r.fail(`${at}.protocols`, 'destinationNamedPort cannot be used with networks or nodes peers');
    }
    for (const [list, field] of [[peers, peerField], [protocols ?? [], 'protocols']] as const) {
      if (list.length > MAX_ITEMS) report(new K8sObjectError(r.object, `${at}.${field}`, `${list.length} items (the API allows ${MAX_ITEMS}); all are enforced`));
    }
    return rule;
  } catch (err) {
    return failed(rule, err);
  }
}

function readPeer(r: FieldReader, v: unknown, dir: Direction, at: string): CnpPeerInfo {
  const peer = r.record(v, at);
  const keys = Object.keys(peer).filter((k) => peer[k] !== undefined && peer[k] !== null);
  if (keys.length !== 1) r.fail(at, `exactly one peer kind must be set, got ${keys.length === 0 ? 'none (a field of a newer API?)' : keys.join(', ')}`);
  const kind = keys[0];
  if (!PEER_KINDS[dir].has(kind)) {
    const why = kind === 'domainNames' ? 'domainNames peers are not implemented by nfkube' : `unknown ${dir} peer kind ${JSON.stringify(kind)}`;
    r.fail(`${at}.${kind}`, why);
  }
  switch (kind) {
    case 'namespaces':
      return { kind: 'pods', namespaceSelector: labelSelector(r, peer.namespaces, `${at}.namespaces`) ?? {}, podSelector: {} };
    case 'pods':
      return { kind: 'pods', ...namespacedPod(r, peer.pods, `${at}.pods`) };
    case 'nodes':
      return { kind: 'nodes', nodeSelector: (labelSelector(r, peer.nodes, `${at}.nodes`) ?? {}) as LabelSelector };
    default: {
      const networks = r.optArray(peer.networks, `${at}.networks`) ?? [];
      if (networks.length === 0) r.fail(`${at}.networks`, 'must list at least one CIDR');
      return { kind: 'networks', networks: networks.map((n, i) => r.string(n, `${at}.networks[${i}]`)) };
    }
  }
}

function readProtocol(r: FieldReader, v: unknown, at: string): CnpProtocolInfo {
  const proto = r.record(v, at);
  const keys = Object.keys(proto).filter((k) => proto[k] !== undefined && proto[k] !== null && proto[k] !== '');
  if (keys.length !== 1) r.fail(at, `exactly one of tcp, udp, sctp or destinationNamedPort must be set, got ${keys.length === 0 ? 'none' : keys.join(', ')}`);
  const key = keys[0];
  if (key === 'destinationNamedPort') return { namedPort: r.string(proto.destinationNamedPort, `${at}.destinationNamedPort`) };
  const protocol = PROTOCOL_KEYS[key];
  if (!protocol) r.fail(`${at}.${key}`, `unknown protocol ${JSON.stringify(key)} (expected tcp, udp, sctp or destinationNamedPort)`);
  const body = r.record(proto[key], `${at}.${key}`);
  const port = r.optRecord(body.destinationPort, `${at}.${key}.destinationPort`);
  if (!port) return { protocol };
  const portKeys = Object.keys(port).filter((k) => port[k] !== undefined && port[k] !== null && port[k] !== 0);
  if (portKeys.length !== 1) r.fail(`${at}.${key}.destinationPort`, 'exactly one of number or range must be set');
  if (portKeys[0] === 'number') return { protocol, port: r.optPort(port.number, `${at}.${key}.destinationPort.number`)! };
  if (portKeys[0] !== 'range') r.fail(`${at}.${key}.destinationPort.${portKeys[0]}`, 'unknown field (expected number or range)');
  const range = r.record(port.range, `${at}.${key}.destinationPort.range`) as Obj;
  const start = r.optPort(range.start, `${at}.${key}.destinationPort.range.start`);
  const end = r.optPort(range.end, `${at}.${key}.destinationPort.range.end`);
  if (start === undefined || end === undefined || start >= end) r.fail(`${at}.${key}.destinationPort.range`, `start ${start} must be less than end ${end}`);
  return { protocol, port: start, endPort: end };
}

/** What a rule that fails closed does, in words for its log line. */
export function failClosedEffect(action: CnpRuleInfo['action'], dir: Direction): string {
  return action === 'Accept' ? 'this Accept rule matches nothing' : `this ${action} rule denies every ${dir} packet of its subjects`;
}
