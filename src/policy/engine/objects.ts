/** The per-object facts policy compilation uses: pods reduced to addresses, labels and named
 * ports; namespace labels with the API server's implicit name label; stable short ids. */

import { hash } from 'node:crypto';
import type { ContainerPortInfo, NamespaceInfo, PodInfo } from '../../k8s/model';
import type { PortTriple, Protocol } from './ir';
import { canonicalIp } from '../../net/ip';
import { compact } from '../../k8s/selector';

export const PROTOCOLS: ReadonlySet<string> = new Set(['TCP', 'UDP', 'SCTP']);

/** A short id safe in any nft name: `prefix` + 12 hex digits (48 bits) of sha1(identity). */
export function shortId(prefix: string, identity: string): string {
  return prefix + hash('sha1', identity, 'hex').slice(0, 12);
}

export function podKey(p: { namespace: string; name: string }): string {
  return `${p.namespace}/${p.name}`;
}

export interface NamedContainerPort {
  name: string;
  protocol: Protocol;
  port: number;
}

export interface PodFacts {
  key: string;
  namespace: string;
  labels: Record<string, string>;
  /** Canonical, sorted, unique. */
  v4: string[];
  v6: string[];
  /** May be a peer or a target: running or pending, not hostNetwork, has an address.
   * hostNetwork pods are excluded because their address is the node's: admitting it as a pod
   * peer would admit every host process and hostNetwork pod of that node. Such traffic can
   * still be allowed by an ipBlock. */
  eligible: boolean;
  /** Scheduled on this node (and eligible): can be a target. */
  local: boolean;
  namedPorts: NamedContainerPort[];
}

/** Runs for every pod of the cluster at start, mostly before the JIT has optimized it, hence the
 * indexed loops (iterators cost more in unoptimized code). Facts are kept for every pod, so their
 * arrays get no spare room: an address list starts as a one-element literal (a pod has one
 * address per family). */
export function podFacts(pod: PodInfo, nodeName: string): PodFacts {
  let v4: string[] = [];
  let v6: string[] = [];
  const ips = pod.ips ?? [];
  for (let i = 0; i < ips.length; i++) {
    const ip = canonicalIp(ips[i]);
    if (!ip) continue;
    if (ip.family === 'v4') {
      if (!v4.includes(ip.text)) v4 = appended(v4, ip.text);
    } else if (!v6.includes(ip.text)) {
      v6 = appended(v6, ip.text);
    }
  }
  const ended = pod.phase === 'Succeeded' || pod.phase === 'Failed';
  const eligible = !ended && !pod.hostNetwork && v4.length + v6.length > 0;
  return {
    key: podKey(pod),
    namespace: pod.namespace,
    labels: pod.labels ?? {},
    v4: v4.length > 1 ? v4.sort() : v4,
    v6: v6.length > 1 ? v6.sort() : v6,
    eligible,
    local: eligible && pod.nodeName === nodeName,
    namedPorts: namedPortsOf(pod.ports ?? []),
  };
}

function appended<T>(list: T[], item: T): T[] {
  return list.length === 0 ? [item] : list.concat([item]);
}

/** The named ports of the pod before. Pods of one workload have the same ports and mostly come
 * one after another, and facts are never modified: they share the list. */
let previousNamedPorts: NamedContainerPort[] = [];

function namedPortsOf(ports: ContainerPortInfo[]): NamedContainerPort[] {
  if (sameNamedPorts(ports, previousNamedPorts)) return previousNamedPorts;
  const named: NamedContainerPort[] = [];
  for (let i = 0; i < ports.length; i++) {
    const p = ports[i];
    if (isNamedPort(p)) named.push({ name: p.name!, protocol: (p.protocol || 'TCP') as Protocol, port: p.containerPort });
  }
  return (previousNamedPorts = compact(named));
}

function isNamedPort(p: ContainerPortInfo): boolean {
  return Boolean(p.name) && PROTOCOLS.has(p.protocol || 'TCP') && Number.isInteger(p.containerPort) && p.containerPort >= 1 && p.containerPort <= 65535;
}

/** Whether `named` equals what namedPortsOf(ports) would build (ports by Object.is, which tells
 * -0 from 0 as a fresh list would). */
function sameNamedPorts(ports: ContainerPortInfo[], named: NamedContainerPort[]): boolean {
  let n = 0;
  for (let i = 0; i < ports.length; i++) {
    const p = ports[i];
    if (!isNamedPort(p)) continue;
    const q = named[n++];
    if (!q || q.name !== p.name || q.protocol !== (p.protocol || 'TCP') || !Object.is(q.port, p.containerPort)) return false;
  }
  return n === named.length;
}

/** Triples of `pod` for the (protocol, name) pairs in `ports`. */
export function podTriples(pod: PodFacts, ports: ReadonlyArray<{ protocol: Protocol; name: string }>): { v4: PortTriple[]; v6: PortTriple[] } {
  const v4: PortTriple[] = [];
  const v6: PortTriple[] = [];
  for (const np of pod.namedPorts) {
    if (!ports.some((p) => p.name === np.name && p.protocol === np.protocol)) continue;
    for (const ip of pod.v4) v4.push({ ip, protocol: np.protocol, port: np.port });
    for (const ip of pod.v6) v6.push({ ip, protocol: np.protocol, port: np.port });
  }
  return { v4, v6 };
}

export function tripleKey(t: PortTriple): string {
  return `${t.ip} ${t.protocol} ${t.port}`;
}

export function tripleFromKey(key: string): PortTriple {
  const [ip, protocol, port] = key.split(' ');
  return { ip, protocol: protocol as Protocol, port: Number(port) };
}

/** The API server labels every namespace `kubernetes.io/metadata.name=<name>`; manifests often
 * omit it, and a namespace not (yet) known still has that label. */
export const NAMESPACE_NAME_LABEL = 'kubernetes.io/metadata.name';

export function namespaceLabels(name: string, ns?: NamespaceInfo): Record<string, string> {
  const labels = { ...(ns?.labels ?? {}) };
  if (!(NAMESPACE_NAME_LABEL in labels)) labels[NAMESPACE_NAME_LABEL] = name;
  return labels;
}

export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** Canonical order of triples: by ip, protocol, port. */
export function compareTriples(a: PortTriple, b: PortTriple): number {
  return compareStrings(a.ip, b.ip) || compareStrings(a.protocol, b.protocol) || a.port - b.port;
}
