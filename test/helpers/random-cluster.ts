/** A small random cluster for property tests: three namespaces, a few pods per namespace with
 * addresses drawn from 24 (so local pods often share one), and random policies, some invalid. */
import type { LabelSelector, NamespaceInfo, NetworkPolicyInfo, PeerInfo, PodInfo, PolicyPortInfo, PolicyRuleInfo } from '../../src/k8s/model';
import type { PolicyEngine } from '../../src/policy/engine/engine';
import type { PolicyDelta } from '../../src/policy/engine/ir';
import type { ClusterChange, PolicyChange } from '../../src/k8s/source';

export const NODE = 'node-1';

export class World {
  readonly pods = new Map<string, PodInfo>();
  readonly namespaces = new Map<string, NamespaceInfo>();
  readonly policies = new Map<string, NetworkPolicyInfo>();
  constructor(readonly rand: () => number) {}

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rand() * xs.length)];
  }
  chance(p: number): boolean {
    return this.rand() < p;
  }

  labels(): Record<string, string> {
    const out: Record<string, string> = {};
    if (this.chance(0.8)) out.app = this.pick(['a', 'b', 'c']);
    if (this.chance(0.5)) out.tier = this.pick(['fe', 'be']);
    if (this.chance(0.3)) out.env = this.pick(['prod', 'dev']);
    return out;
  }

  selector(): LabelSelector {
    const r = this.rand();
    if (r < 0.2) return {};
    if (r < 0.5) return { matchLabels: { app: this.pick(['a', 'b', 'c']) } };
    if (r < 0.6) return { matchLabels: { app: this.pick(['a', 'b']), tier: this.pick(['fe', 'be']) } };
    const operator = this.pick(['In', 'NotIn', 'Exists', 'DoesNotExist', 'In', 'NotIn', 'Bogus']);
    const key = this.pick(['app', 'tier', 'env']);
    const values = operator === 'In' || operator === 'NotIn' ? [this.pick(['a', 'b', 'fe', 'prod']), this.pick(['c', 'be', 'dev'])] : undefined;
    return { matchExpressions: [{ key, operator, ...(values ? { values } : {}) }] };
  }

  nsSelector(): LabelSelector {
    const r = this.rand();
    if (r < 0.3) return {};
    if (r < 0.7) return { matchLabels: { team: this.pick(['red', 'blue']) } };
    if (r < 0.85) return { matchLabels: { 'kubernetes.io/metadata.name': this.pick(['x', 'y', 'z']) } };
    return { matchExpressions: [{ key: 'team', operator: this.pick(['Exists', 'DoesNotExist']) }] };
  }

  peer(): PeerInfo {
    const r = this.rand();
    if (r < 0.35) return { podSelector: this.selector() };
    if (r < 0.55) return { namespaceSelector: this.nsSelector() };
    if (r < 0.8) return { podSelector: this.selector(), namespaceSelector: this.nsSelector() };
    if (r < 0.95) {
      return this.chance(0.5)
        ? { ipBlock: { cidr: '198.18.0.0/24', except: this.chance(0.5) ? ['198.18.0.0/28'] : undefined } }
        : { ipBlock: { cidr: '2001:db8::/64', except: ['2001:db8::/120'] } };
    }
    return { ipBlock: { cidr: this.pick(['198.18.0.0/33', 'nonsense']) } };
  }

  port(): PolicyPortInfo {
    const r = this.rand();
    if (r < 0.3) return { port: this.pick([80, 53, 443]) };
    if (r < 0.45) return { protocol: 'UDP', port: 53 };
    if (r < 0.55) return { port: 8000, endPort: 8100 };
    if (r < 0.85) return { port: this.pick(['http', 'dns', 'metrics']), protocol: this.pick(['TCP', 'UDP', undefined]) };
    if (r < 0.93) return { protocol: 'SCTP' };
    return this.pick<PolicyPortInfo>([{ protocol: 'ICMP', port: 1 }, { port: 0 }, { port: 90, endPort: 80 }]);
  }

  rules(): PolicyRuleInfo[] | undefined {
    const r = this.rand();
    if (r < 0.25) return undefined;
    if (r < 0.35) return [];
    const n = 1 + Math.floor(this.rand() * 3);
    return Array.from({ length: n }, () => {
      const rule: PolicyRuleInfo = {};
      const p = this.rand();
      if (p < 0.2) rule.peers = [];
      else if (p < 0.85) rule.peers = Array.from({ length: 1 + Math.floor(this.rand() * 2) }, () => this.peer());
      const q = this.rand();
      if (q < 0.15) rule.ports = [];
      else if (q < 0.7) rule.ports = Array.from({ length: 1 + Math.floor(this.rand() * 2) }, () => this.port());
      return rule;
    });
  }

  policy(namespace: string, name: string): NetworkPolicyInfo {
    const types = this.pick<string[] | undefined>([undefined, undefined, ['Ingress'], ['Egress'], ['Ingress', 'Egress'], ['Bogus']]);
    return { namespace, name, podSelector: this.selector(), policyTypes: types, ingress: this.rules(), egress: this.rules() };
  }

  pod(namespace: string, name: string): PodInfo {
    const n = Math.floor(this.rand() * 24);
    const ips = this.pick([[`198.18.0.${n}`], [`2001:db8::${n.toString(16)}`], [`198.18.0.${n}`, `2001:db8::${n.toString(16)}`], []]);
    const ports = this.pick([
      [],
      [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
      [{ name: 'http', containerPort: 8080, protocol: 'TCP' }, { name: 'dns', containerPort: 53, protocol: 'UDP' }],
      [{ name: 'metrics', containerPort: 9090, protocol: 'TCP' }, { containerPort: 22, protocol: 'TCP' }],
    ]);
    return {
      namespace,
      name,
      labels: this.labels(),
      nodeName: this.pick([NODE, NODE, 'node-2']),
      phase: this.pick([undefined, 'Running', 'Running', 'Pending', 'Succeeded', 'Failed']),
      ips,
      hostNetwork: this.chance(0.08),
      ports,
    };
  }

  inputs() {
    return { pods: this.pods.values(), namespaces: this.namespaces.values(), policies: this.policies.values() };
  }
}

const NAMESPACES = ['x', 'y', 'z'];

/** One random change, applied to the world: a pod, namespace or policy created, changed or
 * deleted. */
export function randomChange(w: World): PolicyChange {
  const r = w.rand();
  const ns = w.pick(NAMESPACES);
  if (r < 0.45) {
    const name = `pod${Math.floor(w.rand() * 8)}`;
    const key = `${ns}/${name}`;
    const existing = w.pods.get(key);
    if (existing && w.chance(0.3)) {
      w.pods.delete(key);
      return { kind: 'Pod', type: 'delete', key, object: existing };
    }
    const pod = existing && w.chance(0.5) ? { ...existing, labels: w.labels() } : w.pod(ns, name);
    w.pods.set(key, pod);
    return { kind: 'Pod', type: 'upsert', key, object: pod };
  }
  if (r < 0.6) {
    const existing = w.namespaces.get(ns);
    if (existing && w.chance(0.2)) {
      w.namespaces.delete(ns);
      return { kind: 'Namespace', type: 'delete', key: ns, object: existing };
    }
    const labels: Record<string, string> = {};
    if (w.chance(0.7)) labels.team = w.pick(['red', 'blue']);
    const info = { name: ns, labels };
    w.namespaces.set(ns, info);
    return { kind: 'Namespace', type: 'upsert', key: ns, object: info };
  }
  const name = `np${Math.floor(w.rand() * 5)}`;
  const key = `${ns}/${name}`;
  const existing = w.policies.get(key);
  if (existing && w.chance(0.3)) {
    w.policies.delete(key);
    return { kind: 'NetworkPolicy', type: 'delete', key, object: existing };
  }
  const np = w.policy(ns, name);
  w.policies.set(key, np);
  return { kind: 'NetworkPolicy', type: 'upsert', key, object: np };
}

/** One random change, applied to the world and the engine. */
export function step(w: World, engine: PolicyEngine): PolicyDelta {
  const c = randomChange(w);
  switch (c.kind) {
    case 'Pod':
      return c.type === 'upsert' ? engine.upsertPod(c.object) : engine.deletePod(c.object);
    case 'Namespace':
      return c.type === 'upsert' ? engine.upsertNamespace(c.object) : engine.deleteNamespace(c.object);
    case 'NetworkPolicy':
      return c.type === 'upsert' ? engine.upsertPolicy(c.object) : engine.deletePolicy(c.object);
  }
}
