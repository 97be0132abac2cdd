/** One path from any form of a Kubernetes object to the slice enforcement needs (model.ts).
 *
 * Three forms arrive here: typed models from client-node LISTs (`_from` instead of `from`, Date
 * timestamps, absent fields present as `undefined`), raw JSON from WATCH events, and parsed
 * manifest documents. Only the fields below are read, so the forms converge, and the output is
 * built in a fixed shape (absent optional fields are omitted, never `undefined`) so two
 * normalizations of the same object are deep-equal. Values are checked for type, and numbers for
 * range (a port is 1-65535, as the API validates it), so nothing out of range reaches an
 * encoder; what strings mean (a CIDR, a protocol, an operator) is judged by the compiler.
 *
 * A NetworkPolicy is never simply dropped (that would let through what it denied): a part that
 * cannot be read is left out failing closed, and a policy whose podSelector or spec cannot be
 * read is replaced by one that isolates every pod it could select and allows nothing
 * (FailClosedError). */
import { isIP } from 'node:net';
import { parseDottedQuad, parseIPv6Groups } from '../net/ip-text';
import { FailClosedError, K8sObjectError } from './errors';
import type {
  ContainerPortInfo,
  IPBlockInfo,
  LabelSelector,
  LabelSelectorRequirement,
  NamespaceInfo,
  NetworkPolicyInfo,
  PeerInfo,
  PodInfo,
  PolicyPortInfo,
  PolicyRuleInfo,
} from './model';
import type { FieldTree } from './yaml-block';

export type ObjectKind = 'Pod' | 'Namespace' | 'NetworkPolicy' | 'Service' | 'EndpointSlice' | 'Node' | 'ClusterNetworkPolicy';

/** Kinds without a namespace: keyed by name alone. */
const CLUSTER_SCOPED: ReadonlySet<ObjectKind> = new Set(['Namespace', 'Node', 'ClusterNetworkPolicy']);

export interface NormalizeOptions {
  /** Namespace for namespaced objects that carry none (manifests: `default`, like kubectl). */
  defaultNamespace?: string;
  /** Receives problems that were survived by failing closed (a malformed policy rule is dropped,
   * a malformed rule list becomes deny-all). Without it they are thrown. */
  onProblem?: (err: K8sObjectError) => void;
}

type Obj = Record<string, unknown>;

/** Reads fields of one object, failing with its name and the field's path. */
export class FieldReader {
  constructor(readonly object: string) {}

  fail(field: string, problem: string): never {
    throw new K8sObjectError(this.object, field, problem);
  }

  record(v: unknown, field: string): Obj {
    if (!isRecord(v)) this.fail(field, `expected an object, got ${describe(v)}`);
    return v;
  }

  optRecord(v: unknown, field: string): Obj | undefined {
    return v === undefined || v === null ? undefined : this.record(v, field);
  }

  optArray(v: unknown, field: string): unknown[] | undefined {
    if (v === undefined || v === null) return undefined;
    if (!Array.isArray(v)) this.fail(field, `expected a list, got ${describe(v)}`);
    return v;
  }

  string(v: unknown, field: string): string {
    if (typeof v !== 'string') this.fail(field, `expected a string, got ${describe(v)}`);
    return v;
  }

  optString(v: unknown, field: string): string | undefined {
    return v === undefined || v === null ? undefined : this.string(v, field);
  }

  optInteger(v: unknown, field: string): number | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'number' || !Number.isInteger(v)) this.fail(field, `expected an integer, got ${describe(v)}`);
    return v;
  }

  /** A port number as the API validates one: an integer 1-65535. */
  optPort(v: unknown, field: string): number | undefined {
    const n = this.optInteger(v, field);
    if (n !== undefined && (n < 1 || n > 65535)) this.fail(field, `${n} is out of range (expected a port number 1-65535)`);
    return n;
  }

  optBoolean(v: unknown, field: string): boolean | undefined {
    if (v === undefined || v === null) return undefined;
    if (typeof v !== 'boolean') this.fail(field, `expected true or false, got ${describe(v)}`);
    return v;
  }

  stringList(v: unknown, field: string): string[] | undefined {
    const list = this.optArray(v, field);
    return list?.map((item, i) => this.string(item, `${field}[${i}]`));
  }

  stringMap(v: unknown, field: string): Record<string, string> {
    const rec = this.optRecord(v, field);
    const out: Record<string, string> = {};
    if (!rec) return out;
    for (const key of Object.keys(rec).sort()) {
      const value = rec[key];
      if (value === undefined) continue;
      out[key] = this.string(value, `${field}.${key}`);
    }
    return out;
  }
}

function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v) || v instanceof Set) return 'a list';
  if (v instanceof Map) return 'an ordered map';
  if (ArrayBuffer.isView(v)) return 'binary data';
  if (v instanceof Date) return 'a timestamp';
  if (typeof v === 'string') return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v);
  if (typeof v === 'object') return 'an object';
  return `${typeof v} ${String(v)}`;
}

/** The identity of an object (enough to key it, even if the rest is malformed). */
export interface ObjectId {
  kind: ObjectKind;
  namespace?: string;
  name: string;
  /** `ns/name` for namespaced kinds, `name` for Namespaces. */
  key: string;
}

export function objectKey(kind: ObjectKind, namespace: string | undefined, name: string): string {
  return CLUSTER_SCOPED.has(kind) ? name : `${namespace}/${name}`;
}

export function describeObject(kind: ObjectKind, key: string): string {
  return `${kind} ${key}`;
}

/** Reads kind-specific identity from metadata; throws K8sObjectError if it is missing. */
export function objectId(kind: ObjectKind, raw: unknown, opts: NormalizeOptions = {}): ObjectId {
  const r = new FieldReader(`${kind} (unnamed)`);
  const obj = r.record(raw, '(object)');
  const meta = r.record(obj.metadata, 'metadata');
  const name = r.string(meta.name, 'metadata.name');
  if (name === '') r.fail('metadata.name', 'must not be empty');
  if (CLUSTER_SCOPED.has(kind)) return { kind, name, key: name };
  const named = new FieldReader(`${kind} ${name}`);
  const namespace = named.optString(meta.namespace, 'metadata.namespace') || opts.defaultNamespace;
  if (!namespace) named.fail('metadata.namespace', 'missing');
  return { kind, namespace, name, key: objectKey(kind, namespace, name) };
}

/** What every normaliser starts from: the object's identity, a reader that names it in errors,
 * its metadata, and its spec and status (empty when absent). */
export function readObject(kind: ObjectKind, raw: unknown, opts: NormalizeOptions): { id: ObjectId; r: FieldReader; obj: Obj; meta: Obj; spec: Obj; status: Obj } {
  const id = objectId(kind, raw, opts);
  const r = new FieldReader(describeObject(kind, id.key));
  const obj = raw as Obj;
  const meta = obj.metadata as Obj;
  return { id, r, obj, meta, spec: r.optRecord(obj.spec, 'spec') ?? {}, status: r.optRecord(obj.status, 'status') ?? {} };
}

export function normalizeNamespace(raw: unknown, opts: NormalizeOptions = {}): NamespaceInfo {
  const id = objectId('Namespace', raw, opts);
  const r = new FieldReader(describeObject('Namespace', id.key));
  const meta = (raw as Obj).metadata as Obj;
  const ns: NamespaceInfo = { name: id.name, labels: r.stringMap(meta.labels, 'metadata.labels') };
  const mode = (meta.annotations as Obj | undefined)?.['nfkube.io/policy-mode'];
  if (typeof mode === 'string') ns.policyMode = mode;
  return ns;
}

export function normalizePod(raw: unknown, opts: NormalizeOptions = {}): PodInfo {
  const { id, r, obj, meta, spec, status } = readObject('Pod', raw, opts);
  const onProblem = problemSink(opts);

  const pod: PodInfo = {
    namespace: id.namespace!,
    name: id.name,
    labels: r.stringMap(meta.labels, 'metadata.labels'),
    ips: podIPs(r, status),
    hostNetwork: r.optBoolean(spec.hostNetwork, 'spec.hostNetwork') ?? false,
    ports: containerPorts(r, spec, onProblem),
  };
  const nodeName = r.optString(spec.nodeName, 'spec.nodeName');
  if (nodeName) pod.nodeName = nodeName;
  const phase = r.optString(status.phase, 'status.phase');
  if (phase) pod.phase = phase;
  return pod;
}

/** status.podIPs when present (it is the dual-stack list, podIP is its first entry), else podIP. */
function podIPs(r: FieldReader, status: Obj): string[] {
  const list = r.optArray(status.podIPs, 'status.podIPs');
  const ips: string[] = [];
  if (list && list.length > 0) {
    list.forEach((entry, i) => {
      const field = `status.podIPs[${i}].ip`;
      ips.push(checkIP(r, r.string(r.record(entry, `status.podIPs[${i}]`).ip, field), field));
    });
    return ips;
  }
  const single = r.optString(status.podIP, 'status.podIP');
  if (single) ips.push(checkIP(r, single, 'status.podIP'));
  return ips;
}

function checkIP(r: FieldReader, ip: string, field: string): string {
  // The hand parsers accept a subset of what isIP does, at a fraction of its cost (its regular
  // expressions were 3% of the CPU to the first commit at 5k pods); isIP decides the rest.
  if (parseDottedQuad(ip) === undefined && parseIPv6Groups(ip) === undefined && isIP(ip) === 0) r.fail(field, `"${ip}" is not an IP address`);
  return ip;
}

const CONTAINER_PORT_PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP']);

/** A container port that cannot be read is left out (with onProblem): a named port it would
 * have given matches nothing, which allows less, never more. */
function containerPorts(r: FieldReader, spec: Obj, onProblem: (err: K8sObjectError) => void): ContainerPortInfo[] {
  const ports: ContainerPortInfo[] = [];
  const containers = r.optArray(spec.containers, 'spec.containers') ?? [];
  containers.forEach((c, ci) => {
    const container = r.record(c, `spec.containers[${ci}]`);
    const list = r.optArray(container.ports, `spec.containers[${ci}].ports`) ?? [];
    list.forEach((p, pi) => {
      const field = `spec.containers[${ci}].ports[${pi}]`;
      try {
        ports.push(containerPort(r, p, field));
      } catch (err) {
        if (!(err instanceof K8sObjectError)) throw err;
        onProblem(err);
      }
    });
  });
  return ports;
}

function containerPort(r: FieldReader, p: unknown, field: string): ContainerPortInfo {
  const port = r.record(p, field);
  const containerPort = r.optPort(port.containerPort, `${field}.containerPort`);
  if (containerPort === undefined) r.fail(`${field}.containerPort`, 'missing');
  const protocol = r.optString(port.protocol, `${field}.protocol`) || 'TCP';
  if (!CONTAINER_PORT_PROTOCOLS.has(protocol)) r.fail(`${field}.protocol`, `unknown protocol ${JSON.stringify(protocol)} (expected TCP, UDP or SCTP)`);
  const info: ContainerPortInfo = { containerPort, protocol };
  const name = r.optString(port.name, `${field}.name`);
  if (name) info.name = name;
  return info;
}

/** Where survived problems go: opts.onProblem, or thrown when there is none. */
export function problemSink(opts: NormalizeOptions): (err: K8sObjectError) => void {
  return (
    opts.onProblem ??
    ((err: K8sObjectError) => {
      throw err;
    })
  );
}

/** A policy whose identity is malformed throws: it cannot even be named. One whose spec or
 * podSelector is malformed throws a FailClosedError carrying its fail-closed replacement.
 * Problems inside its rules are survived by failing closed (see NormalizeOptions.onProblem): a
 * malformed rule is dropped (it allows nothing), a malformed rule list or policyTypes isolates;
 * they are also listed in the result's `problems`. */
export function normalizeNetworkPolicy(raw: unknown, opts: NormalizeOptions = {}): NetworkPolicyInfo {
  const id = objectId('NetworkPolicy', raw, opts);
  const r = new FieldReader(describeObject('NetworkPolicy', id.key));
  const onProblem = problemSink(opts);
  const problems: NonNullable<NetworkPolicyInfo['problems']> = [];
  const survive = <T>(fn: () => T, fallback: T): T => {
    try {
      return fn();
    } catch (err) {
      if (!(err instanceof K8sObjectError)) throw err;
      onProblem(err);
      problems.push({ field: err.field, message: err.problem });
      return fallback;
    }
  };

  let spec: Obj;
  let podSelector: LabelSelector;
  try {
    spec = r.optRecord((raw as Obj).spec, 'spec') ?? {};
    podSelector = labelSelector(r, spec.podSelector, 'spec.podSelector') ?? {};
  } catch (err) {
    if (!(err instanceof K8sObjectError)) throw err;
    throw failClosedPolicy(id, raw, err.field, err.problem, true);
  }
  const policy: NetworkPolicyInfo = { namespace: id.namespace!, name: id.name, podSelector };
  // MALFORMED marks a rule list that is not a list: it allows nothing and, for egress, isolates.
  const policyTypes = survive(() => r.stringList(spec.policyTypes, 'spec.policyTypes'), ['Ingress', 'Egress']);
  const ingress = survive<RuleList>(() => rules(r, spec.ingress, 'spec.ingress', 'from', survive), MALFORMED);
  const egress = survive<RuleList>(() => rules(r, spec.egress, 'spec.egress', 'to', survive), MALFORMED);
  // Defaulting applies to an empty list as to a missing one.
  if (policyTypes && policyTypes.length > 0) policy.policyTypes = policyTypes;
  else if (egress === MALFORMED) policy.policyTypes = ['Ingress', 'Egress'];
  if (ingress) policy.ingress = ingress === MALFORMED ? [] : ingress;
  if (egress) policy.egress = egress === MALFORMED ? [] : egress;
  if (problems.length > 0) policy.problems = problems;
  return policy;
}

/** The error for a NetworkPolicy that cannot be understood, carrying what to enforce instead:
 * the pods it could select (its podSelector without the parts that cannot be read, which selects
 * more, never less; every pod of its namespace when none can be read) isolated in the
 * directions it could name (its policyTypes when they can be read and `trustTypes`, else both),
 * allowing nothing. */
export function failClosedPolicy(id: ObjectId, raw: unknown, field: string, problem: string, trustTypes: boolean): FailClosedError<NetworkPolicyInfo> {
  const rawSpec = isRecord(raw) ? raw.spec : undefined;
  const spec = isRecord(rawSpec) ? rawSpec : {};
  const types = trustTypes && Array.isArray(spec.policyTypes) ? spec.policyTypes : [];
  const named = types.length > 0 && types.every((t) => t === 'Ingress' || t === 'Egress') ? [...new Set(types as string[])].sort() : ['Egress', 'Ingress'];
  const replacement: NetworkPolicyInfo = {
    namespace: id.namespace!,
    name: id.name,
    podSelector: readableSelector(spec.podSelector),
    policyTypes: named.reverse(),
    problems: [{ field, message: problem }],
  };
  const what = Object.keys(replacement.podSelector).length === 0 ? 'every pod of its namespace' : 'the pods it could select';
  const message = `${problem}; failing closed: ${what} isolated (${replacement.policyTypes!.join(', ')}), allowing nothing`;
  return new FailClosedError(describeObject('NetworkPolicy', id.key), field, message, replacement);
}

/** The parts of a label selector that can be read: requirements that cannot are left out, so the
 * selector selects at least what was meant. */
export function readableSelector(v: unknown): LabelSelector {
  const out: LabelSelector = {};
  if (!isRecord(v)) return out;
  if (isRecord(v.matchLabels)) {
    const labels: Record<string, string> = {};
    for (const key of Object.keys(v.matchLabels).sort()) if (typeof v.matchLabels[key] === 'string') labels[key] = v.matchLabels[key] as string;
    if (Object.keys(labels).length > 0) out.matchLabels = labels;
  }
  if (Array.isArray(v.matchExpressions)) {
    const exprs: LabelSelectorRequirement[] = [];
    for (const e of v.matchExpressions) {
      if (!isRecord(e) || typeof e.key !== 'string' || typeof e.operator !== 'string') continue;
      if (e.values !== undefined && e.values !== null && !(Array.isArray(e.values) && e.values.every((x) => typeof x === 'string'))) continue;
      const req: LabelSelectorRequirement = { key: e.key, operator: e.operator };
      if (Array.isArray(e.values)) req.values = e.values as string[];
      exprs.push(req);
    }
    if (exprs.length > 0) out.matchExpressions = exprs;
  }
  return out;
}

/** A JSON object, or a typed client model. Not what YAML's explicit tags make (`!!set`,
 * `!!omap`, `!!binary`, `!!timestamp`): their keys are not fields, and reading one as an empty
 * object would widen a selector. */
export function isRecord(v: unknown): v is Obj {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && !(v instanceof Map) && !(v instanceof Set) && !ArrayBuffer.isView(v) && !(v instanceof Date);
}

const MALFORMED = 'malformed';
type RuleList = PolicyRuleInfo[] | undefined | typeof MALFORMED;

function rules(
  r: FieldReader,
  v: unknown,
  field: string,
  peersName: 'from' | 'to',
  survive: <T>(fn: () => T, fallback: T) => T,
): PolicyRuleInfo[] | undefined {
  const list = r.optArray(v, field);
  if (!list) return undefined;
  const out: PolicyRuleInfo[] = [];
  list.forEach((item, i) => {
    const rule = survive(() => policyRule(r, item, `${field}[${i}]`, peersName), undefined);
    if (rule) out.push(rule);
  });
  return out;
}

function policyRule(r: FieldReader, v: unknown, field: string, peersName: 'from' | 'to'): PolicyRuleInfo {
  const rule = r.record(v, field);
  // Typed client models rename `from` (a TypeScript keyword) to `_from`.
  const rawPeers = peersName === 'from' ? (rule.from ?? rule._from) : rule.to;
  const out: PolicyRuleInfo = {};
  const ports = r.optArray(rule.ports, `${field}.ports`);
  // An empty list means the same as a missing one (all ports, all peers): keep one form.
  if (ports && ports.length > 0) out.ports = ports.map((p, i) => policyPort(r, p, `${field}.ports[${i}]`));
  const peers = r.optArray(rawPeers, `${field}.${peersName}`);
  if (peers && peers.length > 0) out.peers = peers.map((p, i) => peer(r, p, `${field}.${peersName}[${i}]`));
  return out;
}

function policyPort(r: FieldReader, v: unknown, field: string): PolicyPortInfo {
  const p = r.record(v, field);
  const out: PolicyPortInfo = { protocol: r.optString(p.protocol, `${field}.protocol`) || 'TCP' };
  if (p.port !== undefined && p.port !== null) {
    if (typeof p.port === 'string') out.port = p.port;
    else out.port = r.optPort(p.port, `${field}.port`);
  }
  const endPort = r.optPort(p.endPort, `${field}.endPort`);
  if (endPort !== undefined) out.endPort = endPort;
  return out;
}

function peer(r: FieldReader, v: unknown, field: string): PeerInfo {
  const p = r.record(v, field);
  const out: PeerInfo = {};
  const podSelector = labelSelector(r, p.podSelector, `${field}.podSelector`);
  const namespaceSelector = labelSelector(r, p.namespaceSelector, `${field}.namespaceSelector`);
  const block = ipBlock(r, p.ipBlock, `${field}.ipBlock`);
  if (podSelector) out.podSelector = podSelector;
  if (namespaceSelector) out.namespaceSelector = namespaceSelector;
  if (block) {
    if (podSelector || namespaceSelector) r.fail(`${field}.ipBlock`, 'cannot be combined with a selector in one peer');
    out.ipBlock = block;
  }
  if (!podSelector && !namespaceSelector && !block) r.fail(field, 'a peer needs podSelector, namespaceSelector or ipBlock');
  return out;
}

function ipBlock(r: FieldReader, v: unknown, field: string): IPBlockInfo | undefined {
  const b = r.optRecord(v, field);
  if (!b) return undefined;
  const out: IPBlockInfo = { cidr: r.string(b.cidr, `${field}.cidr`) };
  const except = r.stringList(b.except, `${field}.except`);
  if (except && except.length > 0) out.except = except;
  return out;
}

/** Empty matchLabels/matchExpressions are omitted: `{}` is the one form of "everything". */
export function labelSelector(r: FieldReader, v: unknown, field: string): LabelSelector | undefined {
  const s = r.optRecord(v, field);
  if (!s) return undefined;
  const out: LabelSelector = {};
  const matchLabels = r.stringMap(s.matchLabels, `${field}.matchLabels`);
  if (Object.keys(matchLabels).length > 0) out.matchLabels = matchLabels;
  const exprs = r.optArray(s.matchExpressions, `${field}.matchExpressions`);
  if (exprs && exprs.length > 0) {
    out.matchExpressions = exprs.map((e, i) => {
      const ef = `${field}.matchExpressions[${i}]`;
      const rec = r.record(e, ef);
      const req: LabelSelectorRequirement = {
        key: r.string(rec.key, `${ef}.key`),
        operator: r.string(rec.operator, `${ef}.operator`),
      };
      const values = r.stringList(rec.values, `${ef}.values`);
      if (values) req.values = values;
      return req;
    });
  }
  return out;
}

/** The fields of a manifest each normalizer reads (objectId, readObject and failClosedPolicy
 * included), for a parser that builds only those (yaml-block.ts): most of a Pod is never read.
 * A field read above and not named here would read as absent from YAML manifests:
 * test/k8s/normalize-fields.test.ts normalizes objects whole and so pruned and compares. Kinds
 * not listed are built whole. */
export const FIELDS_READ: Partial<Record<ObjectKind, FieldTree>> = {
  Pod: {
    apiVersion: true,
    metadata: { name: true, namespace: true, labels: true },
    spec: { nodeName: true, hostNetwork: true, containers: { ports: true } },
    status: { phase: true, podIP: true, podIPs: true },
  },
  Namespace: { apiVersion: true, metadata: { name: true, labels: true, annotations: { 'nfkube.io/policy-mode': true } } },
  NetworkPolicy: { apiVersion: true, metadata: { name: true, namespace: true }, spec: true },
  ClusterNetworkPolicy: { apiVersion: true, metadata: { name: true }, spec: true },
};

/** Milliseconds since the epoch of an object's last change as the API server recorded it: the
 * latest metadata.managedFields[].time (a Date in typed LIST models, text in WATCH events), else
 * the creationTimestamp; undefined when neither is readable. */
export function lastChangeTime(raw: unknown): number | undefined {
  const meta = (raw as { metadata?: Record<string, unknown> } | null)?.metadata;
  if (!meta || typeof meta !== 'object') return undefined;
  const ms = (t: unknown) => (t instanceof Date ? t.getTime() : typeof t === 'string' ? Date.parse(t) : NaN);
  let latest = NaN;
  if (Array.isArray(meta.managedFields)) {
    for (const f of meta.managedFields as { time?: unknown }[]) {
      const t = ms(f?.time);
      if (!Number.isNaN(t) && (Number.isNaN(latest) || t > latest)) latest = t;
    }
  }
  if (Number.isNaN(latest)) latest = ms(meta.creationTimestamp);
  return Number.isNaN(latest) ? undefined : latest;
}
