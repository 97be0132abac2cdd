/** Random clusters with ClusterNetworkPolicies and NetworkPolicies, as manifests (the public API
 * shape the agent reads), for the property test against the reference evaluator: three labelled
 * namespaces, pods on this node and another (one sometimes host-network), two Nodes, a few
 * NetworkPolicies and Admin/Baseline policies with tied priorities, every action, every peer
 * kind, port numbers, ranges and named ports, and now and then a peer the agent cannot read. */
import type { K8sObject } from '../e2e/manifests';
import { clusterNetworkPolicy, type Action, type ClusterNetworkPolicy, type CnpPeer, type CnpProtocol, type CnpRule, type Tier } from './cnp-spec';

export const THIS_NODE = 'node-1';
export const NODES = [
  { name: 'node-1', labels: { zone: 'a', 'kubernetes.io/os': 'linux' }, v4: '198.19.255.1', v6: '2001:db8:ffff::1' },
  { name: 'node-2', labels: { zone: 'b', 'kubernetes.io/os': 'linux' }, v4: '198.19.255.2', v6: '2001:db8:ffff::2' },
];
/** An address outside the cluster, inside the test range. */
export const OUTSIDE = { v4: '198.19.0.1', v6: '2001:db8:1::1' };
export const PORTS = [53, 80, 8080, 9003];
const NAMESPACES = ['x', 'y', 'z'];

export interface RandomPod {
  namespace: string;
  name: string;
  v4: string;
  v6: string;
  nodeName: string;
  hostNetwork: boolean;
}

export interface RandomCluster {
  objects: K8sObject[];
  pods: RandomPod[];
  clusterPolicies: ClusterNetworkPolicy[];
}

export class CnpGenerator {
  constructor(private readonly rand: () => number) {}

  pick<T>(xs: readonly T[]): T {
    return xs[Math.floor(this.rand() * xs.length)];
  }

  chance(p: number): boolean {
    return this.rand() < p;
  }

  private int(lo: number, hi: number): number {
    return lo + Math.floor(this.rand() * (hi - lo + 1));
  }

  private podSelector(): Record<string, unknown> {
    const r = this.rand();
    if (r < 0.25) return {};
    if (r < 0.7) return { matchLabels: { app: this.pick(['a', 'b', 'c']) } };
    return { matchExpressions: [{ key: 'app', operator: this.pick(['In', 'NotIn']), values: [this.pick(['a', 'b']), 'c'] }] };
  }

  private nsSelector(): Record<string, unknown> {
    const r = this.rand();
    if (r < 0.25) return {};
    if (r < 0.6) return { matchLabels: { team: this.pick(['red', 'blue']) } };
    if (r < 0.85) return { matchLabels: { 'kubernetes.io/metadata.name': this.pick(NAMESPACES) } };
    return { matchExpressions: [{ key: 'team', operator: this.pick(['Exists', 'DoesNotExist']) }] };
  }

  private peer(dir: 'ingress' | 'egress'): CnpPeer {
    const r = this.rand();
    if (r < 0.04) return this.pick<CnpPeer>([{ domainNames: ['example.com'] }, {}]);
    if (r < 0.35) return { namespaces: this.nsSelector() };
    if (r < 0.7 || dir === 'ingress') return { pods: { namespaceSelector: this.nsSelector(), podSelector: this.podSelector() } };
    if (r < 0.85) {
      return { networks: this.pick([['198.18.0.0/28'], ['198.18.0.16/28', '2001:db8::/124'], ['0.0.0.0/0', '::/0'], ['198.19.0.0/24', '2001:db8:1::/48'], ['198.19.255.2/32']]) };
    }
    return { nodes: this.pick([{}, { matchLabels: { zone: 'b' } }, { matchLabels: { zone: 'a' } }]) };
  }

  private protocols(): CnpProtocol[] | undefined {
    if (this.chance(0.4)) return undefined;
    return Array.from({ length: this.int(1, 2) }, (): CnpProtocol => {
      const r = this.rand();
      if (r < 0.2) return { destinationNamedPort: this.pick(['web', 'dns', 'nope']) };
      const proto = this.pick(['tcp', 'udp', 'sctp'] as const);
      if (r < 0.3) return { [proto]: {} };
      if (r < 0.45) {
        const start = this.pick([50, 79, 80, 8000]);
        return { [proto]: { destinationPort: { range: { start, end: start + this.pick([5, 100, 1000]) } } } };
      }
      return { [proto]: { destinationPort: { number: this.pick(PORTS) } } };
    });
  }

  private rules(dir: 'ingress' | 'egress'): CnpRule[] {
    return Array.from({ length: this.int(0, 3) }, (_, i): CnpRule => {
      const peers = Array.from({ length: this.int(1, 2) }, () => this.peer(dir));
      const protocols = this.protocols();
      return {
        ...(this.chance(0.7) ? { name: `${dir}-${i}` } : {}),
        action: this.pick<Action>(['Accept', 'Deny', 'Pass']),
        ...(dir === 'ingress' ? { from: peers } : { to: peers }),
        ...(protocols ? { protocols } : {}),
      };
    });
  }

  clusterPolicy(name: string): ClusterNetworkPolicy {
    const tier = this.pick<Tier>(['Admin', 'Baseline']);
    const subject = this.chance(0.5) ? { namespaces: this.nsSelector() } : { pods: { namespaceSelector: this.nsSelector(), podSelector: this.podSelector() } };
    return clusterNetworkPolicy(name, { tier, priority: this.pick([0, 5, 5, 20, 1000]), subject, ingress: this.rules('ingress'), egress: this.rules('egress') });
  }

  private networkPolicy(ns: string, name: string): K8sObject {
    const rule = (key: 'from' | 'to') => ({
      ...(this.chance(0.7) ? { [key]: [this.chance(0.5) ? { podSelector: this.podSelector() } : { namespaceSelector: this.nsSelector() }] } : {}),
      ...(this.chance(0.5) ? { ports: [{ protocol: this.pick(['TCP', 'UDP', 'SCTP']), port: this.pick<number | string>([...PORTS, 'web']) }] } : {}),
    });
    const types = this.pick([['Ingress'], ['Egress'], ['Ingress', 'Egress']]);
    return {
      apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: ns },
      spec: {
        podSelector: this.podSelector(), policyTypes: types,
        ...(types.includes('Ingress') ? { ingress: Array.from({ length: this.int(0, 2) }, () => rule('from')) } : {}),
        ...(types.includes('Egress') ? { egress: Array.from({ length: this.int(0, 2) }, () => rule('to')) } : {}),
      },
    };
  }

  cluster(): RandomCluster {
    const objects: K8sObject[] = [];
    for (const ns of NAMESPACES) {
      const labels: Record<string, string> = { 'kubernetes.io/metadata.name': ns };
      if (this.chance(0.7)) labels.team = this.pick(['red', 'blue']);
      objects.push({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns, labels } });
    }
    for (const n of NODES) {
      objects.push({ apiVersion: 'v1', kind: 'Node', metadata: { name: n.name, labels: n.labels },
        status: { addresses: [{ type: 'InternalIP', address: n.v4 }, { type: 'InternalIP', address: n.v6 }] } });
    }
    const pods: RandomPod[] = Array.from({ length: 7 }, (_, i) => {
      const hostNetwork = i === 6 && this.chance(0.5);
      const node = hostNetwork ? NODES[1] : i >= 5 ? NODES[1] : NODES[0];
      return { namespace: this.pick(NAMESPACES), name: `p${i}`, v4: hostNetwork ? node.v4 : `198.18.0.${10 + i}`, v6: hostNetwork ? node.v6 : `2001:db8::${(10 + i).toString(16)}`, nodeName: node.name, hostNetwork };
    });
    for (const p of pods) {
      const labels: Record<string, string> = {};
      if (this.chance(0.85)) labels.app = this.pick(['a', 'b', 'c']);
      const web = this.pick([80, 8080]);
      objects.push({
        apiVersion: 'v1', kind: 'Pod', metadata: { name: p.name, namespace: p.namespace, labels },
        spec: { nodeName: p.nodeName, ...(p.hostNetwork ? { hostNetwork: true } : {}),
          containers: [{ name: 'c', image: 'agnhost', ports: [{ name: 'web', containerPort: web, protocol: 'TCP' }, { name: 'dns', containerPort: 53, protocol: 'UDP' }] }] },
        status: { phase: 'Running', podIP: p.v4, podIPs: [{ ip: p.v4 }, { ip: p.v6 }] },
      });
    }
    for (let i = 0; i < this.int(0, 2); i++) objects.push(this.networkPolicy(this.pick(NAMESPACES), `np-${i}`));
    const clusterPolicies = Array.from({ length: this.int(1, 4) }, (_, i) => this.clusterPolicy(`cnp-${String.fromCharCode(97 + this.int(0, 25))}${i}`));
    return { objects: [...objects, ...(clusterPolicies as unknown as K8sObject[])], pods, clusterPolicies };
  }
}
