/** Services (v1), EndpointSlices (discovery.k8s.io/v1) and Nodes (v1) in the shape the service
 * proxy reads (service-model.ts), from a typed LIST model, a raw WATCH object or a manifest
 * alike: only the fields below are read. Unlike policies, what a value means is judged here
 * (ports in range, addresses and CIDRs parse), because a proxy given half a Service would
 * forward to the wrong place: a malformed Service or EndpointSlice throws, naming the field, and
 * the source keeps the last good version. Entries of lists kube-proxy reads one by one (cluster,
 * external and ingress IPs, source ranges, endpoints, slice ports, Node addresses and pod CIDRs)
 * are skipped as kube-proxy skips them: each reported through onProblem, the rest applied. */
import { canonicalIp, formatCidr, formatIp, parseCidr, parseIp } from '../net/ip';
import { K8sObjectError } from './errors';
import { FieldReader, readObject, type NormalizeOptions } from './normalize';
import type {
  EndpointInfo,
  EndpointPortInfo,
  EndpointSliceInfo,
  NodeAddressInfo,
  NodeInfo,
  ServiceInfo,
  ServicePortInfo,
  ServiceProtocol,
} from './service-model';

type Obj = Record<string, unknown>;

export const SERVICE_NAME_LABEL = 'kubernetes.io/service-name';
export const SERVICE_PROXY_NAME_LABEL = 'service.kubernetes.io/service-proxy-name';
/** kube-proxy lists Services and EndpointSlices with neither label (cmd/kube-proxy/app/server.go
 * noProxyName, noHeadlessEndpoints), whatever its value. */
export const HEADLESS_LABEL = 'service.kubernetes.io/headless';
export const TRIGGER_TIME_ANNOTATION = 'endpoints.kubernetes.io/last-change-trigger-time';
const SOURCE_RANGES_ANNOTATION = 'service.beta.kubernetes.io/load-balancer-source-ranges';
const ZONE_LABEL = 'topology.kubernetes.io/zone';
/** kube-apiserver's default for sessionAffinityConfig.clientIP.timeoutSeconds, and its maximum. */
export const DEFAULT_AFFINITY_TIMEOUT_SECONDS = 10800;
const MAX_AFFINITY_TIMEOUT_SECONDS = 86400;

const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP']);
const SERVICE_TYPES: ReadonlySet<string> = new Set(['ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName']);
/** IANA_SVC_NAME: what a named targetPort may be (validation.IsValidPortName). */
const PORT_NAME = /^(?=.*[a-z])[a-z0-9]([a-z0-9]|-(?!-))*$/;
/** What the API allows for a namespace and a service port name (DNS-1123 label) and a Service name
 * (DNS-1035 label). Checked because they make the proxy's chain names: within these, the longest
 * (`endpoint-v6-ns/name/sctp/port__ipv6/65535`) still fits NFT_NAME_MAXLEN, so one hostile name
 * cannot make the kernel refuse a whole batch. */
const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]{0,61}[a-z0-9])?$/;

function port(r: FieldReader, v: unknown, field: string, required: true): number;
function port(r: FieldReader, v: unknown, field: string, required: false): number | undefined;
function port(r: FieldReader, v: unknown, field: string, required: boolean): number | undefined {
  const n = r.optInteger(v, field);
  if (n === undefined) {
    if (required) r.fail(field, 'missing');
    return undefined;
  }
  if (n < 1 || n > 65535) r.fail(field, `${n} is not a port (1-65535)`);
  return n;
}

/** nodePort and healthCheckNodePort: 0 means none (what the API returns for "not allocated",
 * e.g. allocateLoadBalancerNodePorts: false), as kube-proxy reads them (pkg/proxy/service.go). */
function optionalPort(r: FieldReader, v: unknown, field: string): number | undefined {
  return v === 0 ? undefined : port(r, v, field, false);
}

/** Parses each item of a list. One that fails is left out and reported through opts.onProblem
 * (the rest of the object still applies, as kube-proxy skips what it cannot parse); without a
 * sink, or when `required` and no item parses, the first failure throws: the object fails. */
function parseEach<T>(fns: (() => T)[], opts: NormalizeOptions, required: boolean): T[] {
  const out: T[] = [];
  const errors: K8sObjectError[] = [];
  for (const fn of fns) {
    try {
      out.push(fn());
    } catch (err) {
      if (!(err instanceof K8sObjectError)) throw err;
      errors.push(err);
    }
  }
  if (errors.length === 0) return out;
  if (!opts.onProblem || (required && out.length === 0)) throw errors[0];
  for (const err of errors) opts.onProblem(err);
  return out;
}

function protocol(r: FieldReader, v: unknown, field: string): ServiceProtocol {
  const p = r.optString(v, field) || 'TCP';
  if (!PROTOCOLS.has(p)) r.fail(field, `"${p}" is not TCP, UDP or SCTP`);
  return p as ServiceProtocol;
}

/** An address read as kube-proxy reads it (netutils.ParseIPSloppy): IPv4 octets may carry
 * leading zeros, read as decimal (legacy objects still have them), and an IPv4-mapped IPv6
 * address is the IPv4 address. */
function sloppyIp(text: string): ReturnType<typeof canonicalIp> {
  const p = sloppyParse(text.trim());
  if (!p) return undefined;
  const family = isMappedV4(p) ? 'v4' : p.family;
  return { family, text: formatIp(family, p.value) };
}

function sloppyParse(text: string): ReturnType<typeof parseIp> {
  const octets = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
  return parseIp(octets ? octets.slice(1).map((o) => String(Number(o))).join('.') : text);
}

/** ::ffff:0:0/96 */
const isMappedV4 = (p: { family: string; value: bigint }) => p.family === 'v6' && p.value >> 32n === 0xffffn;

/** A CIDR read as kube-proxy reads it (netutils.ParseCIDRSloppy): the address as sloppyIp
 * reads it, a decimal prefix that may carry leading zeros, host bits cleared; an IPv4-mapped
 * network (prefix 96 or longer) is the IPv4 network, as Go formats it. */
function sloppyCidr(text: string): string | undefined {
  const slash = text.indexOf('/');
  if (slash < 0) return undefined;
  const ip = sloppyParse(text.slice(0, slash));
  const prefixText = text.slice(slash + 1);
  if (!ip || !/^\d{1,5}$/.test(prefixText)) return undefined;
  const c = parseCidr(`${formatIp(ip.family, ip.value)}/${Number(prefixText)}`);
  if (!c) return undefined;
  return isMappedV4({ family: c.family, value: c.first }) ? `${formatIp('v4', c.first)}/${c.prefix - 96}` : formatCidr(c);
}

function ip(r: FieldReader, v: unknown, field: string): string {
  const text = r.string(v, field);
  const c = sloppyIp(text);
  if (!c) r.fail(field, `${JSON.stringify(text.slice(0, 60))} is not an IP address`);
  return c.text;
}

function cidr(r: FieldReader, text: string, field: string): string {
  const c = sloppyCidr(text.trim());
  if (c === undefined) r.fail(field, `${JSON.stringify(text.slice(0, 60))} is not a CIDR`);
  return c;
}

/** A list of addresses; an entry that is not one is left out (see parseEach). */
function ipList(r: FieldReader, v: unknown, field: string, opts: NormalizeOptions): string[] {
  return parseEach((r.optArray(v, field) ?? []).map((s, i) => () => ip(r, s, `${field}[${i}]`)), opts, false);
}

function dedupe(list: string[]): string[] {
  return [...new Set(list)];
}

export function normalizeService(raw: unknown, opts: NormalizeOptions = {}): ServiceInfo {
  const { id, r, obj, meta, spec, status } = readObject('Service', raw, opts);
  if (!DNS1123_LABEL.test(id.namespace!)) r.fail('metadata.namespace', 'not a DNS-1123 label (at most 63 of a-z, 0-9 and -)');
  if (!DNS1035_LABEL.test(id.name)) r.fail('metadata.name', 'not a DNS-1035 label (at most 63 of a-z, 0-9 and -, starting with a letter)');
  const labels = r.stringMap(meta.labels, 'metadata.labels');
  const annotations = r.stringMap(meta.annotations, 'metadata.annotations');

  const type = r.optString(spec.type, 'spec.type') || 'ClusterIP';
  if (!SERVICE_TYPES.has(type)) r.fail('spec.type', `"${type}" is not ClusterIP, NodePort, LoadBalancer or ExternalName`);

  // clusterIPs is authoritative when set; clusterIP is its first entry (or the only field). An
  // entry that is not an address is left out; a service with none left fails.
  const rawIPs = r.optArray(spec.clusterIPs, 'spec.clusterIPs');
  const single = r.optString(spec.clusterIP, 'spec.clusterIP');
  const listed = rawIPs && rawIPs.length > 0 ? { list: rawIPs, field: 'spec.clusterIPs' } : { list: single ? [single] : [], field: 'spec.clusterIP' };
  const headless = listed.list.includes('None');
  const given = type === 'ExternalName' || headless ? [] : listed.list.filter((s) => s !== '');
  let clusterIPs = parseEach(
    given.map((s, i) => () => ip(r, s, listed.field === 'spec.clusterIP' ? 'spec.clusterIP' : `spec.clusterIPs[${i}]`)),
    opts,
    true,
  );
  // Each proxier takes the cluster IP of its family from ipFamilies (GetClusterIPByFamily): one of
  // a family ipFamilies does not list is not served.
  const families = r.stringList(spec.ipFamilies, 'spec.ipFamilies');
  if (families && families.length > 0 && given.length > 0) {
    clusterIPs = clusterIPs.filter((a) => families.includes(canonicalIp(a)!.family === 'v4' ? 'IPv4' : 'IPv6'));
    if (clusterIPs.length === 0) r.fail('spec.ipFamilies', `${JSON.stringify(families.slice(0, 2))} names the family of no cluster IP`);
  }
  if (clusterIPs.length === 2 && canonicalIp(clusterIPs[0])!.family === canonicalIp(clusterIPs[1])!.family) {
    r.fail('spec.clusterIPs', 'two addresses of one family');
  }
  if (clusterIPs.length > 2) r.fail('spec.clusterIPs', 'more than two addresses');

  const ports: ServicePortInfo[] = [];
  const seen = new Set<string>();
  (r.optArray(spec.ports, 'spec.ports') ?? []).forEach((p, i) => {
    const f = `spec.ports[${i}]`;
    const rec = r.record(p, f);
    const name = r.optString(rec.name, `${f}.name`) ?? '';
    if (name !== '' && !DNS1123_LABEL.test(name)) r.fail(`${f}.name`, `${JSON.stringify(name.slice(0, 70))} is not a DNS-1123 label`);
    if (seen.has(name)) r.fail(`${f}.name`, name ? `"${name}" is used by two ports` : 'two unnamed ports');
    seen.add(name);
    const info: ServicePortInfo = { name, protocol: protocol(r, rec.protocol, `${f}.protocol`), port: port(r, rec.port, `${f}.port`, true), targetPort: 0 };
    // 0 and "" are absent: the API defaults them to port (SetDefaults_Service).
    const target = rec.targetPort === 0 || rec.targetPort === '' ? undefined : rec.targetPort;
    if (typeof target === 'string' && !/^[0-9]+$/.test(target)) {
      if (target.length > 15 || !PORT_NAME.test(target)) r.fail(`${f}.targetPort`, `${JSON.stringify(target.slice(0, 40))} is not a port name`);
      info.targetPort = target;
    } else {
      // Absent means the same number as port; "8080" (a string of digits) is a number.
      info.targetPort = port(r, typeof target === 'string' ? Number(target) : target, `${f}.targetPort`, false) ?? info.port;
    }
    const nodePort = optionalPort(r, rec.nodePort, `${f}.nodePort`);
    if (nodePort !== undefined && (type === 'NodePort' || type === 'LoadBalancer')) info.nodePort = nodePort;
    ports.push(info);
  });

  const svc: ServiceInfo = {
    namespace: id.namespace!,
    name: id.name,
    type: type as ServiceInfo['type'],
    clusterIPs,
    headless,
    ports,
    externalIPs: type === 'ExternalName' ? [] : dedupe(ipList(r, spec.externalIPs, 'spec.externalIPs', opts)),
    loadBalancerIPs: [],
    loadBalancerSourceRanges: [],
    externalTrafficPolicy: trafficPolicy(r, spec.externalTrafficPolicy, 'spec.externalTrafficPolicy'),
    internalTrafficPolicy: trafficPolicy(r, spec.internalTrafficPolicy, 'spec.internalTrafficPolicy'),
    sessionAffinity: 'None',
  };
  if (type === 'LoadBalancer') {
    const lb = r.optRecord(status.loadBalancer, 'status.loadBalancer') ?? {};
    const ingress = (r.optArray(lb.ingress, 'status.loadBalancer.ingress') ?? []).map((entry, i) => (): string | undefined => {
      const f = `status.loadBalancer.ingress[${i}]`;
      const rec = r.record(entry, f);
      if (rec.ip === undefined || rec.ip === null || rec.ip === '') return undefined;
      // Only VIP mode (or none) is programmed on nodes; Proxy (or any other) mode leaves the IP to
      // the load balancer (pkg/proxy/util IsVIPMode).
      const mode = r.optString(rec.ipMode, `${f}.ipMode`);
      if (mode !== undefined && mode !== 'VIP') return undefined;
      return ip(r, rec.ip, `${f}.ip`);
    });
    svc.loadBalancerIPs = dedupe(parseEach(ingress, opts, false).filter((a) => a !== undefined));
    // Entries are trimmed and those that are not CIDRs left out (proxyutil.MapCIDRsByIPFamily);
    // a list none of whose entries is a CIDR fails the service rather than open it to all.
    const field = 'spec.loadBalancerSourceRanges';
    const ranges = r.optArray(spec.loadBalancerSourceRanges, field) ?? [];
    if (ranges.length > 0) svc.loadBalancerSourceRanges = parseEach(ranges.map((c, i) => () => cidr(r, r.string(c, `${field}[${i}]`), `${field}[${i}]`)), opts, true);
    else if (annotations[SOURCE_RANGES_ANNOTATION]?.trim()) {
      const af = `metadata.annotations.${SOURCE_RANGES_ANNOTATION}`;
      svc.loadBalancerSourceRanges = parseEach(annotations[SOURCE_RANGES_ANNOTATION].split(',').map((c) => () => cidr(r, c, af)), opts, true);
    }
    svc.loadBalancerSourceRanges = dedupe(svc.loadBalancerSourceRanges);
  }
  // Only externally accessible services have an external policy: NodePort, LoadBalancer, and
  // ClusterIP with externalIPs (pkg/api/v1/service ExternallyAccessible, ExternalPolicyLocal).
  const externallyAccessible = type === 'NodePort' || type === 'LoadBalancer' || (type === 'ClusterIP' && (r.optArray(spec.externalIPs, 'spec.externalIPs') ?? []).length > 0);
  if (!externallyAccessible) svc.externalTrafficPolicy = 'Cluster';
  const hc = optionalPort(r, spec.healthCheckNodePort, 'spec.healthCheckNodePort');
  if (hc !== undefined && type === 'LoadBalancer' && svc.externalTrafficPolicy === 'Local') svc.healthCheckNodePort = hc;
  const affinity = r.optString(spec.sessionAffinity, 'spec.sessionAffinity') || 'None';
  if (affinity !== 'None' && affinity !== 'ClientIP') r.fail('spec.sessionAffinity', `"${affinity}" is not None or ClientIP`);
  if (affinity === 'ClientIP') {
    svc.sessionAffinity = 'ClientIP';
    const cfg = r.optRecord(spec.sessionAffinityConfig, 'spec.sessionAffinityConfig') ?? {};
    const client = r.optRecord(cfg.clientIP, 'spec.sessionAffinityConfig.clientIP') ?? {};
    const field = 'spec.sessionAffinityConfig.clientIP.timeoutSeconds';
    const t = r.optInteger(client.timeoutSeconds, field) ?? DEFAULT_AFFINITY_TIMEOUT_SECONDS;
    if (t < 1 || t > MAX_AFFINITY_TIMEOUT_SECONDS) r.fail(field, `${t} is not within 1-${MAX_AFFINITY_TIMEOUT_SECONDS}`);
    svc.affinityTimeoutSeconds = t;
  }
  const proxyName = labels[SERVICE_PROXY_NAME_LABEL];
  if (proxyName !== undefined) svc.proxyName = proxyName;
  if (labels[HEADLESS_LABEL] !== undefined) svc.headlessLabel = true;
  const created = meta.creationTimestamp;
  const createdMs = created instanceof Date ? created.getTime() : typeof created === 'string' ? Date.parse(created) : NaN;
  if (!Number.isNaN(createdMs)) svc.createdMs = createdMs;
  return svc;
}

function trafficPolicy(r: FieldReader, v: unknown, field: string): 'Cluster' | 'Local' {
  const p = r.optString(v, field) || 'Cluster';
  if (p !== 'Cluster' && p !== 'Local') r.fail(field, `"${p}" is not Cluster or Local`);
  return p;
}

export function normalizeEndpointSlice(raw: unknown, opts: NormalizeOptions = {}): EndpointSliceInfo {
  const { id, r, obj, meta } = readObject('EndpointSlice', raw, opts);
  const labels = r.stringMap(meta.labels, 'metadata.labels');
  const annotations = r.stringMap(meta.annotations, 'metadata.annotations');
  const addressType = r.optString(obj.addressType, 'addressType');
  if (addressType !== 'IPv4' && addressType !== 'IPv6' && addressType !== 'FQDN') r.fail('addressType', `expected IPv4, IPv6 or FQDN, got ${JSON.stringify(addressType)}`);

  // A port or endpoint that cannot be read is left out, the rest of the slice applies (as
  // kube-proxy's EndpointSliceCache skips them); port 0 is no port (it matches nothing).
  const portFns = (r.optArray(obj.ports, 'ports') ?? []).map((p, i) => (): EndpointPortInfo => {
    const f = `ports[${i}]`;
    const rec = r.record(p, f);
    const out: EndpointPortInfo = { name: r.optString(rec.name, `${f}.name`) ?? '', protocol: protocol(r, rec.protocol, `${f}.protocol`) };
    const n = optionalPort(r, rec.port, `${f}.port`);
    if (n !== undefined) out.port = n;
    return out;
  });
  const ports = parseEach(portFns, opts, false);

  const family = addressType === 'IPv4' ? 'v4' : 'v6';
  const listed = addressType === 'FQDN' ? [] : (r.optArray(obj.endpoints, 'endpoints') ?? []);
  const endpointFns = listed.map((e, i) => (): EndpointInfo => {
    const f = `endpoints[${i}]`;
    const rec = r.record(e, f);
    const addresses = r.optArray(rec.addresses, `${f}.addresses`) ?? [];
    if (addresses.length === 0) r.fail(`${f}.addresses`, 'missing');
    const address = ip(r, addresses[0], `${f}.addresses[0]`);
    if (canonicalIp(address)!.family !== family) r.fail(`${f}.addresses[0]`, `"${address}" is not an ${addressType} address`);
    const cond = r.optRecord(rec.conditions, `${f}.conditions`) ?? {};
    // Absent conditions: ready and serving, not terminating (EndpointSliceCache.addEndpoints).
    const ready = r.optBoolean(cond.ready, `${f}.conditions.ready`) ?? true;
    const serving = r.optBoolean(cond.serving, `${f}.conditions.serving`) ?? true;
    const terminating = r.optBoolean(cond.terminating, `${f}.conditions.terminating`) ?? false;
    const nodeName = r.optString(rec.nodeName, `${f}.nodeName`);
    // nodeName in the literal: a fifth field added later goes out of the object (a property
    // array of its own, ~40 bytes an endpoint, 10 MB at 250k endpoints).
    const ep: EndpointInfo = nodeName ? { address, ready, serving, terminating, nodeName } : { address, ready, serving, terminating };
    const zone = r.optString(rec.zone, `${f}.zone`);
    if (zone) ep.zone = zone;
    const hints = r.optRecord(rec.hints, `${f}.hints`);
    if (hints) {
      const names = (v: unknown, hf: string) =>
        (r.optArray(v, hf) ?? []).map((h, j) => r.string(r.record(h, `${hf}[${j}]`).name, `${hf}[${j}].name`)).sort();
      const zoneHints = names(hints.forZones, `${f}.hints.forZones`);
      const nodeHints = names(hints.forNodes, `${f}.hints.forNodes`);
      if (zoneHints.length > 0) ep.zoneHints = zoneHints;
      if (nodeHints.length > 0) ep.nodeHints = nodeHints;
    }
    return ep;
  });
  const endpoints = parseEach(endpointFns, opts, false);

  const slice: EndpointSliceInfo = { namespace: id.namespace!, name: id.name, addressType: addressType as EndpointSliceInfo['addressType'], ports, endpoints };
  const serviceName = labels[SERVICE_NAME_LABEL];
  if (serviceName && labels[SERVICE_PROXY_NAME_LABEL] === undefined && labels[HEADLESS_LABEL] === undefined) slice.serviceName = serviceName;
  const trigger = annotations[TRIGGER_TIME_ANNOTATION];
  if (trigger) {
    const ms = Date.parse(trigger);
    if (Number.isFinite(ms)) slice.triggerTimeMs = ms;
  }
  return slice;
}

/** The Cluster Autoscaler's taint on a node it is about to delete. */
const TO_BE_DELETED_TAINT = 'ToBeDeletedByClusterAutoscaler';

export function normalizeNode(raw: unknown, opts: NormalizeOptions = {}): NodeInfo {
  const { id, r, obj, meta, spec, status } = readObject('Node', raw, opts);
  const labels = r.stringMap(meta.labels, 'metadata.labels');
  // An address or pod CIDR that cannot be read is left out (see parseEach), the rest applies.
  const addressFns = (r.optArray(status.addresses, 'status.addresses') ?? []).map((a, i) => (): NodeAddressInfo | undefined => {
    const f = `status.addresses[${i}]`;
    const rec = r.record(a, f);
    const type = r.string(rec.type, `${f}.type`);
    // Hostnames and DNS names are addresses too, but not ones the proxy can use.
    if (type !== 'InternalIP' && type !== 'ExternalIP') return undefined;
    return { type, address: ip(r, rec.address, `${f}.address`) };
  });
  const addresses = parseEach(addressFns, opts, false).filter((a) => a !== undefined);
  const cidrs = r.optArray(spec.podCIDRs, 'spec.podCIDRs');
  const single = r.optString(spec.podCIDR, 'spec.podCIDR');
  const cidrFns =
    cidrs && cidrs.length > 0
      ? cidrs.map((c, i) => () => cidr(r, r.string(c, `spec.podCIDRs[${i}]`), `spec.podCIDRs[${i}]`))
      : single
        ? [() => cidr(r, single, 'spec.podCIDR')]
        : [];
  const podCIDRs = parseEach(cidrFns, opts, false);
  const node: NodeInfo = { name: id.name, addresses, podCIDRs };
  if (Object.keys(labels).length > 0) node.labels = labels;
  if (labels[ZONE_LABEL]) node.zone = labels[ZONE_LABEL];
  const taints = Array.isArray(spec.taints) ? (spec.taints as unknown[]) : [];
  const autoscalerTaint = taints.some((t) => (t as { key?: unknown } | null)?.key === TO_BE_DELETED_TAINT);
  if (meta.deletionTimestamp || autoscalerTaint) node.toBeDeleted = true;
  return node;
}
