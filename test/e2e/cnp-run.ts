/** What a ClusterNetworkPolicy conformance step needs around its policies: the houses' pods as a
 * topology, the manifests the agent reads for a step's state, the full reachability matrix the
 * reference evaluator expects for it, and the step's upstream pokes checked against that matrix. */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { cnpWorld, decide, describeDecision, type CnpWorld, type NodeInfo } from '../helpers/cnp-spec';
import { cellName, Matrix, NODE, slicesOf, type Cell, type ServedPorts } from '../helpers/prober';
import type { PodEndpoint, PodPlacement, Topology } from '../helpers/topology';

/** What the manifests and the evaluator need of a topology (no namespaces need exist). */
export type PodLayout = Pick<Topology, 'pods' | 'nodeIPv4' | 'nodeIPv6'>;
import { CNP_PORTS, HOST_NETWORK_PORTS, HOUSE_PODS, HOUSES, houseNamespace, parsePoke, type CnpCase, type CnpState, type CnpStep, type PodAddresses } from './cnp-cases';
import { agentUnavailable, REPO_ROOT } from './harness';
import { clusterObjects, pod, type ContainerPort, type K8sObject } from './manifests';

export const CNP_SERVED: ServedPorts = CNP_PORTS;

/** Two pods per house, as the upstream StatefulSets have. */
export const HOUSE_PLACEMENTS: PodPlacement[] = HOUSES.flatMap((h) => [0, 1].map((i) => ({ namespace: houseNamespace(h), name: `${HOUSE_PODS[h]}-${i}` })));

/** The upstream containers' ports: only 80 (web) and 53 (dns) are declared, and named. */
const HOUSE_CONTAINER_PORTS: ContainerPort[] = [
  { name: 'web', containerPort: 80, protocol: 'TCP' },
  { name: 'dns', containerPort: 53, protocol: 'UDP' },
];

/** The host-network centaurs' named ports, on the host network ports. */
const CENTAUR_PORTS: ContainerPort[] = [
  { name: `web-${HOST_NETWORK_PORTS[0]}`, containerPort: HOST_NETWORK_PORTS[0], protocol: 'TCP' },
  { name: `web-${HOST_NETWORK_PORTS[1]}`, containerPort: HOST_NETWORK_PORTS[1], protocol: 'TCP' },
  { name: `dns-${HOST_NETWORK_PORTS[2]}`, containerPort: HOST_NETWORK_PORTS[2], protocol: 'UDP' },
  { name: `dns-${HOST_NETWORK_PORTS[4]}`, containerPort: HOST_NETWORK_PORTS[4], protocol: 'UDP' },
];

const houseOf = (namespace: string): string => namespace.replace('network-policy-conformance-', '');

export function initialState(c: CnpCase): CnpState {
  return structuredClone({ clusterPolicies: c.policies, networkPolicies: c.networkPolicies ?? [], namespaceLabels: {} });
}

/** The cluster objects of a state: namespaces and pods labelled conformance-house=<house> (a
 * relabelled namespace carries only its new labels), and the node (for `nodes` peers). */
export function stateClusterObjects(t: PodLayout, nodeName: string, s: CnpState): K8sObject[] {
  const namespaceLabels = Object.fromEntries(HOUSES.map((h) => [houseNamespace(h), s.namespaceLabels[houseNamespace(h)] ?? { 'conformance-house': h }]));
  const forest = houseNamespace('forbidden-forrest');
  const centaurs = [0, 1].map((i) => pod({ namespace: forest, name: `centaur-${i}`, ips: [t.nodeIPv4, t.nodeIPv6] }, {
    nodeName, hostNetwork: true, labels: { 'conformance-house': 'forbidden-forrest' }, ports: CENTAUR_PORTS,
  }));
  const objects = clusterObjects(t.pods, nodeName, {
    namespaceLabels: { ...namespaceLabels, [forest]: { 'conformance-house': 'forbidden-forrest' } },
    extraNamespaces: [forest],
    containerPorts: HOUSE_CONTAINER_PORTS,
    pods: Object.fromEntries(t.pods.map((p) => [p.id, { labels: { 'conformance-house': houseOf(p.namespace) } }])),
    extraObjects: [nodeObject(t, nodeName), ...centaurs],
  });
  // The harness's own `ns` label would survive a relabelling; upstream replaces every label.
  for (const o of objects) {
    const meta = o.metadata as { name: string; labels: Record<string, string> };
    if (o.kind === 'Namespace' && s.namespaceLabels[meta.name]) meta.labels = { 'kubernetes.io/metadata.name': meta.name, ...s.namespaceLabels[meta.name] };
  }
  return objects;
}

export function nodeObject(t: PodLayout, nodeName: string): K8sObject {
  return {
    apiVersion: 'v1', kind: 'Node',
    metadata: { name: nodeName, labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': nodeName } },
    status: { addresses: [{ type: 'InternalIP', address: t.nodeIPv4 }, { type: 'InternalIP', address: t.nodeIPv6 }, { type: 'Hostname', address: nodeName }] },
  };
}

export function statePolicies(s: CnpState): K8sObject[] {
  return [...s.networkPolicies, ...(s.clusterPolicies as unknown as K8sObject[])];
}

/** The evaluator's world, read from the very manifests the agent gets (through the project's
 * normalize functions for the built-in kinds; ClusterNetworkPolicies as written). */
export function stateWorld(t: PodLayout, nodeName: string, s: CnpState): CnpWorld {
  const objects = stateClusterObjects(t, nodeName, s);
  const nodes: NodeInfo[] = objects.filter((o) => o.kind === 'Node').map((o) => {
    const meta = o.metadata as { name: string; labels: Record<string, string> };
    const addresses = ((o.status as { addresses: { type: string; address: string }[] }).addresses).filter((a) => a.type !== 'Hostname').map((a) => a.address);
    return { name: meta.name, labels: meta.labels, addresses };
  });
  return cnpWorld({
    node: nodeName,
    namespaces: objects.filter((o) => o.kind === 'Namespace').map((o) => normalizeNamespace(o)),
    pods: objects.filter((o) => o.kind === 'Pod').map((o) => normalizePod(o)),
    nodes,
    policies: s.networkPolicies.map((o) => normalizeNetworkPolicy(o)),
    clusterPolicies: s.clusterPolicies,
  });
}

/** The whole matrix as the evaluator decides it, with the harness's conventions: the node reaches
 * every pod (kubelet probes) and a pod always reaches itself. `why` names what decided a cell. */
export function evaluatorMatrix(t: PodLayout, w: CnpWorld, ports: ServedPorts = CNP_SERVED, opts: { nodeTarget?: boolean } = {}): { matrix: Matrix; why: (c: Cell) => string } {
  const pods = t.pods.map((p) => p.id);
  const byId = new Map(t.pods.map((p) => [p.id, p]));
  const model = new Map(w.pods.map((p) => [`${p.namespace}/${p.name}`, p]));
  const matrix = new Matrix([NODE, ...pods], [...pods, ...(opts.nodeTarget ? [NODE] : [])], true, slicesOf(ports));
  // The node (and its host-network pods) is an address, never a subject or a pods peer.
  const end = (id: string, family: 4 | 6) => {
    if (id === NODE) return { ip: family === 4 ? t.nodeIPv4 : t.nodeIPv6 };
    const e: PodEndpoint = byId.get(id)!;
    return { ip: family === 4 ? e.ipv4 : e.ipv6, pod: model.get(id) };
  };
  const query = (c: Cell) => ({ src: end(c.from, c.family), dst: end(c.to, c.family), protocol: c.protocol.toUpperCase() as 'TCP' | 'UDP' | 'SCTP', port: c.port });
  for (const c of matrix.allCells()) {
    if (c.from === NODE || c.from === c.to) continue;
    matrix.set(c, decide(w, query(c)).allowed);
  }
  const why = (c: Cell): string => {
    const v = decide(w, query(c));
    return `egress: ${describeDecision(v.egress)}; ingress: ${describeDecision(v.ingress)}`;
  };
  return { matrix, why };
}

/** The step's upstream pokes that the matrix answers otherwise, on either address family. */
export function pokeDisagreements(step: CnpStep, matrix: Matrix): string[] {
  const out: string[] = [];
  for (const raw of step.pokes) {
    const p = parsePoke(raw);
    for (const family of [4, 6] as const) {
      const cell: Cell = { from: p.from, to: p.to, protocol: p.protocol, port: p.port, family };
      if (matrix.get(cell) !== p.allowed) out.push(`${cellName(cell)}: upstream expects ${p.allowed ? 'allowed' : 'blocked'}`);
    }
  }
  return out;
}

/** Pod addresses as the topology assigns them (placement order), for the CIDR subtests. */
export function addressesOf(t: Pick<Topology, 'pods'>): PodAddresses {
  const byId = new Map(t.pods.map((p) => [p.id, p]));
  return { ipv4: (id) => byId.get(id)!.ipv4, ipv6: (id) => byId.get(id)!.ipv6 };
}

/** Why the agent cannot be tested on ClusterNetworkPolicy yet, or undefined when it can: its
 * source layer (dist/src/k8s) must know the kind, which branch s9-cnp adds. */
export function clusterNetworkPolicyUnavailable(): string | undefined {
  const dir = join(REPO_ROOT, 'dist', 'src', 'k8s');
  if (!existsSync(dir)) return `the agent is not built yet (${dir} missing)`;
  const knows = readdirSync(dir).some((f) => f.endsWith('.js') && readFileSync(join(dir, f), 'utf8').includes('ClusterNetworkPolicy'));
  return knows ? agentUnavailable() : 'the agent does not read ClusterNetworkPolicy yet (src/k8s knows no such kind)';
}
