/** Cluster objects for agent tests, in the Kubernetes API's own JSON shape, and a cluster that
 * drives an Agent the way a source does. */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Agent } from '../../src/pipeline/agent';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { ClusterChange, ClusterSnapshot } from '../../src/k8s/source';

type Raw = Record<string, any>;
type Kind = 'Pod' | 'NetworkPolicy' | 'Namespace';
export const NODE = 'node-1';

export function namespace(name: string, labels: Record<string, string> = {}) {
  return { apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { ns: name, ...labels } } };
}

export function pod(ns: string, name: string, ip: string, labels: Record<string, string>, opts: { node?: string; ports?: { name: string; containerPort: number; protocol?: string }[]; ip6?: string } = {}) {
  const ips = [{ ip }, ...(opts.ip6 ? [{ ip: opts.ip6 }] : [])];
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: ns, labels },
    spec: { nodeName: opts.node ?? NODE, containers: [{ name: 'c', image: 'x', ports: opts.ports ?? [] }] },
    status: { phase: 'Running', podIP: ip, podIPs: ips },
  };
}

export function policy(ns: string, name: string, spec: Record<string, unknown>) {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: ns }, spec };
}

/** A cluster held both as raw API objects (for manifests) and normalized (for an Agent). */
export class Cluster {
  readonly raw = new Map<string, Raw>();
  private readonly normalized = { Pod: new Map<string, any>(), Namespace: new Map<string, any>(), NetworkPolicy: new Map<string, any>() };
  agent?: Agent;

  apply(obj: Raw): void {
    const kind = obj.kind as Kind;
    const key = obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
    const object = kind === 'Pod' ? normalizePod(obj) : kind === 'Namespace' ? normalizeNamespace(obj) : normalizeNetworkPolicy(obj);
    this.raw.set(`${kind} ${key}`, obj);
    this.normalized[kind].set(key, object);
    this.agent?.onChange({ kind, type: 'upsert', key, object } as ClusterChange);
  }

  remove(kind: Kind, key: string): void {
    const object = this.normalized[kind].get(key);
    this.raw.delete(`${kind} ${key}`);
    this.normalized[kind].delete(key);
    this.agent?.onChange({ kind, type: 'delete', key, object } as ClusterChange);
  }

  snapshot(): ClusterSnapshot {
    return { pods: new Map(this.normalized.Pod), namespaces: new Map(this.normalized.Namespace), policies: new Map(this.normalized.NetworkPolicy) };
  }

  /** Writes the cluster as one `kind: List` manifest into a fresh directory; returns it. */
  writeManifests(): string {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-truth-'));
    writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...this.raw.values()] }));
    return dir;
  }
}

/** Two namespaces, three local pods (one dual-stack, one with a named port), an ingress policy
 * using the named port and a default-deny egress policy. */
export function baseCluster(): Cluster {
  const c = new Cluster();
  for (const ns of ['x', 'y']) c.apply(namespace(ns));
  c.apply(pod('x', 'a', '198.18.0.2', { app: 'web' }, { ports: [{ name: 'http', containerPort: 80 }], ip6: '2001:db8::2' }));
  c.apply(pod('x', 'b', '198.18.0.3', { app: 'client' }));
  c.apply(pod('y', 'c', '198.18.0.4', { app: 'client' }));
  c.apply(policy('x', 'web', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port: 'http' }] }] }));
  c.apply(policy('y', 'deny-egress', { podSelector: {}, policyTypes: ['Egress'] }));
  return c;
}
