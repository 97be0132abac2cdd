/** The manifests a conformance case hands the agent (`--manifests DIR`): Namespaces labelled
 * `ns=<name>`, the topology's pods labelled `pod=<name>` (on this node, Running, dual-stack IPs,
 * named container ports), any extra objects the case needs, and the case's NetworkPolicies. */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { PodEndpoint } from '../helpers/topology';

export type K8sObject = Record<string, unknown>;

export interface ContainerPort {
  name?: string;
  containerPort: number;
  protocol: 'TCP' | 'UDP' | 'SCTP';
}

/** The ports every conformance pod declares; named policy ports resolve against these. */
export const SERVED_CONTAINER_PORTS: ContainerPort[] = [
  { name: 'serve-80-tcp', containerPort: 80, protocol: 'TCP' },
  { name: 'serve-81-tcp', containerPort: 81, protocol: 'TCP' },
  { name: 'serve-80-udp', containerPort: 80, protocol: 'UDP' },
  { name: 'serve-81-udp', containerPort: 81, protocol: 'UDP' },
];

/** What a case changes about the standard cluster. */
export interface ClusterTweaks {
  /** Extra labels per Kubernetes namespace name. */
  namespaceLabels?: Record<string, Record<string, string>>;
  /** Namespaces that exist without any pods. */
  extraNamespaces?: string[];
  /** Per pod id (`x/a`): extra labels, extra container ports, another node. */
  pods?: Record<string, { labels?: Record<string, string>; extraPorts?: ContainerPort[]; nodeName?: string }>;
  /** Objects added as they are (e.g. hostNetwork or pending pods). */
  extraObjects?: K8sObject[];
  /** The serving container's ports of every pod, instead of SERVED_CONTAINER_PORTS. */
  containerPorts?: ContainerPort[];
}

const AGNHOST = 'registry.k8s.io/e2e-test-images/agnhost:2.47';

export function namespace(name: string, extraLabels: Record<string, string> = {}): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'kubernetes.io/metadata.name': name, ns: name, ...extraLabels } },
  };
}

export function pod(
  p: Pick<PodEndpoint, 'namespace' | 'name'> & { ips: string[] },
  opts: {
    nodeName: string;
    labels?: Record<string, string>;
    ports?: ContainerPort[];
    sidecarPorts?: ContainerPort[];
    phase?: string;
    hostNetwork?: boolean;
  },
): K8sObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: p.name, namespace: p.namespace, labels: { pod: p.name, ...opts.labels } },
    spec: {
      nodeName: opts.nodeName,
        ...(opts.hostNetwork ? { hostNetwork: true } : {}),
      containers: [
        { name: 'serve', image: AGNHOST, ports: opts.ports ?? SERVED_CONTAINER_PORTS },
        // Extra named ports live in a second container, as a sidecar's would.
        ...(opts.sidecarPorts?.length ? [{ name: 'sidecar', image: AGNHOST, ports: opts.sidecarPorts }] : []),
      ],
    },
    status: {
      phase: opts.phase ?? 'Running',
      ...(p.ips.length > 0 ? { podIP: p.ips[0], podIPs: p.ips.map((ip) => ({ ip })) } : {}),
    },
  };
}

/** A NetworkPolicy named `name` in namespace `ns` with the given spec. */
export function netpol(ns: string, name: string, spec: K8sObject): K8sObject {
  return { apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { name, namespace: ns }, spec };
}

export function clusterObjects(pods: PodEndpoint[], nodeName: string, tweaks: ClusterTweaks = {}): K8sObject[] {
  const namespaces = [...new Set(pods.map((p) => p.namespace)), ...(tweaks.extraNamespaces ?? [])];
  return [
    ...namespaces.map((ns) => namespace(ns, tweaks.namespaceLabels?.[ns])),
    ...pods.map((p) => {
      const t = tweaks.pods?.[p.id] ?? {};
      return pod({ ...p, ips: [p.ipv4, p.ipv6] }, {
        nodeName: t.nodeName ?? nodeName,
        labels: t.labels,
        ports: tweaks.containerPorts,
        sidecarPorts: t.extraPorts,
      });
    }),
    ...(tweaks.extraObjects ?? []),
  ];
}

function toYaml(objects: K8sObject[]): string {
  return objects.map((o) => `---\n${stringify(o)}`).join('');
}

/** Replaces the directory's content with cluster.yaml and policies.yaml. */
export function writeManifests(dir: string, cluster: K8sObject[], policies: K8sObject[]): void {
  mkdirSync(dir, { recursive: true });
  for (const name of readdirSync(dir)) rmSync(join(dir, name), { recursive: true, force: true });
  writeFileSync(join(dir, 'cluster.yaml'), toYaml(cluster));
  writeFileSync(join(dir, 'policies.yaml'), policies.length > 0 ? toYaml(policies) : '# no policies\n');
}
