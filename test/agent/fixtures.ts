/** Cluster objects for agent tests, in the Kubernetes API's own JSON shape. */
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
