/** Synthetic clusters for benchmarks: 50 pods per namespace, 100 pods per node (this node is
 * node-0), app/tier labels, namespaces labelled by team and env, 5 policies per 50 pods mixing
 * default-deny, same-namespace podSelectors with named ports, namespaceSelector peers, ipBlocks
 * with except, and egress to DNS. Deterministic for a seed. */
import type { NamespaceInfo, NetworkPolicyInfo, PodInfo } from '../src/k8s/model';
import type { ClusterChange } from '../src/k8s/source';
import { mulberry32 } from '../test/helpers/prng';
import { World } from '../test/helpers/random-cluster';

export const NODE = 'node-0';
export const PODS_PER_NAMESPACE = 50;
export const PODS_PER_NODE = 100;
export const TIERS = ['frontend', 'backend', 'db'];

export const rng = mulberry32;

export interface Cluster {
  namespaces: NamespaceInfo[];
  pods: PodInfo[];
  policies: NetworkPolicyInfo[];
}

export function podIp(i: number): string {
  return `198.${18 + ((i >> 16) & 1)}.${(i >> 8) & 255}.${i & 255}`;
}

export function makePod(rand: () => number, i: number, ns: string, nodeIndex: number): PodInfo {
  const app = `app-${Math.floor(rand() * 10)}`;
  const tier = TIERS[Math.floor(rand() * TIERS.length)];
  return {
    namespace: ns,
    name: `pod-${i}`,
    labels: { app, tier, 'pod-template-hash': Math.floor(rand() * 1e9).toString(36) },
    nodeName: `node-${nodeIndex}`,
    phase: 'Running',
    ips: rand() < 0.2 ? [podIp(i), `2001:db8::${i.toString(16)}`] : [podIp(i)],
    hostNetwork: false,
    ports: [
      { name: 'http', containerPort: 8080, protocol: 'TCP' },
      { name: 'metrics', containerPort: 9090, protocol: 'TCP' },
    ],
  };
}

export function buildCluster(podCount: number, policyCount: number, seed: number): Cluster {
  const rand = rng(seed);
  const nsCount = podCount / PODS_PER_NAMESPACE;
  const namespaces: NamespaceInfo[] = [];
  for (let n = 0; n < nsCount; n++) {
    namespaces.push({ name: `ns-${n}`, labels: { team: `team-${n % 20}`, env: n % 3 === 0 ? 'prod' : 'staging' } });
  }
  namespaces.push({ name: 'kube-system', labels: {} }, { name: 'monitoring', labels: { team: 'sre' } });
  const pods: PodInfo[] = [];
  for (let i = 0; i < podCount; i++) {
    pods.push(makePod(rand, i, `ns-${Math.floor(i / PODS_PER_NAMESPACE)}`, Math.floor(rand() * (podCount / PODS_PER_NODE))));
  }
  pods.push({ namespace: 'kube-system', name: 'coredns', labels: { 'k8s-app': 'kube-dns' }, nodeName: 'node-1', phase: 'Running', ips: ['198.19.255.10'], hostNetwork: false, ports: [{ name: 'dns', containerPort: 53, protocol: 'UDP' }] });

  const policies: NetworkPolicyInfo[] = [];
  const perNamespace = policyCount / nsCount;
  for (let n = 0; n < nsCount; n++) {
    const ns = `ns-${n}`;
    const kinds: Array<() => NetworkPolicyInfo> = [
      () => ({ namespace: ns, name: 'default-deny', podSelector: {}, policyTypes: ['Ingress'] }),
      () => ({
        namespace: ns,
        name: 'frontend-to-app',
        podSelector: { matchLabels: { app: `app-${n % 10}` } },
        ingress: [{ peers: [{ podSelector: { matchLabels: { tier: 'frontend' } } }], ports: [{ port: 'http' }] }],
      }),
      () => ({
        namespace: ns,
        name: 'from-team',
        podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['backend', 'db'] }] },
        ingress: [{ peers: [{ namespaceSelector: { matchLabels: { team: `team-${(n + 1) % 20}` } }, podSelector: { matchLabels: { tier: 'backend' } } }], ports: [{ port: 5432 }, { port: 8000, endPort: 8100 }] }],
      }),
      () => ({
        namespace: ns,
        name: 'egress',
        podSelector: { matchLabels: { tier: 'db' } },
        policyTypes: ['Egress'],
        egress: [
          { peers: [{ namespaceSelector: {}, podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } } }], ports: [{ protocol: 'UDP', port: 53 }] },
          { peers: [{ ipBlock: { cidr: '198.19.128.0/17', except: [`198.19.${128 + (n % 127)}.0/24`] } }], ports: [{ port: 443 }] },
        ],
      }),
      () => ({
        namespace: ns,
        name: 'monitoring',
        podSelector: {},
        ingress: [{ peers: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }], ports: [{ port: 'metrics' }] }],
      }),
    ];
    for (let k = 0; k < perNamespace; k++) policies.push(kinds[k % kinds.length]());
  }
  return { namespaces, pods, policies };
}


/** Issue 28 target 5's mix: the property tests' random policy shapes (test/helpers/random-cluster.ts:
 * podSelectors with matchLabels and every matchExpressions operator, namespaceSelectors, ipBlocks
 * with `except`, named ports, several ports and port ranges per rule, a few invalid entries) over
 * namespaces of 50 pods, 100 pods per node. Deterministic for a seed. */
export function buildMixedCluster(podCount: number, policyCount: number, seed: number): Cluster {
  const w = new World(rng(seed));
  const nsCount = podCount / PODS_PER_NAMESPACE;
  const namespaces: NamespaceInfo[] = [];
  for (let n = 0; n < nsCount; n++) namespaces.push({ name: `ns-${n}`, labels: w.chance(0.7) ? { team: w.pick(['red', 'blue']) } : {} });
  const pods: PodInfo[] = [];
  for (let i = 0; i < podCount; i++) {
    const generated = w.pod(`ns-${Math.floor(i / PODS_PER_NAMESPACE)}`, `pod-${i}`);
    pods.push({ ...generated, nodeName: `node-${Math.floor(w.rand() * (podCount / PODS_PER_NODE))}`, phase: 'Running', hostNetwork: false, ips: w.chance(0.2) ? [podIp(i), `2001:db8::${i.toString(16)}`] : [podIp(i)] });
  }
  const policies: NetworkPolicyInfo[] = [];
  for (let k = 0; k < policyCount; k++) policies.push(w.policy(`ns-${k % nsCount}`, `np-${k}`));
  return { namespaces, pods, policies };
}

/** The cluster as the Agent starts from it: objects keyed as the sources key them. */
export function snapshotOf(cluster: Cluster) {
  return {
    pods: new Map(cluster.pods.map((p) => [`${p.namespace}/${p.name}`, p])),
    namespaces: new Map(cluster.namespaces.map((n) => [n.name, n])),
    policies: new Map(cluster.policies.map((p) => [`${p.namespace}/${p.name}`, p])),
  };
}

/** Pod churn for the event benches: alternately a new pod (in a random namespace, on this node or
 * another) and the delete of a random live one; `live` is kept current. */
export function* podChurn(rand: () => number, live: PodInfo[], firstIndex: number, namespaces: number, count: number): Generator<ClusterChange> {
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0) {
      const p = makePod(rand, firstIndex + i, `ns-${Math.floor(rand() * namespaces)}`, rand() < 0.5 ? 0 : 1 + Math.floor(rand() * 10));
      live.push(p);
      yield { kind: 'Pod', type: 'upsert', key: `${p.namespace}/${p.name}`, object: p };
    } else {
      const p = live.splice(Math.floor(rand() * live.length), 1)[0];
      yield { kind: 'Pod', type: 'delete', key: `${p.namespace}/${p.name}`, object: p };
    }
  }
}
