/** The proxy benches' cluster: n ClusterIP services of one TCP port, each with one EndpointSlice
 * of `perService` ready endpoints (the first on this node), as the component's objects and as
 * the Kubernetes objects an API server or a manifests directory holds. */
import type { EndpointSliceInfo, ServiceInfo } from '../src/k8s/service-model';
import { endpoint, NODE, service, slice } from '../test/proxy/fixtures';

export { NODE };
const vip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`;

export function cluster(n: number, perService: number): { services: ServiceInfo[]; slices: EndpointSliceInfo[] } {
  const services: ServiceInfo[] = [];
  const slices: EndpointSliceInfo[] = [];
  for (let i = 0; i < n; i++) {
    services.push(service('ns', `s${i}`, { clusterIPs: [vip(i + 1)] }));
    const eps = [];
    for (let k = 0; k < perService; k++) {
      const id = i * perService + k;
      eps.push(endpoint(`100.${64 + ((id >> 16) & 63)}.${(id >> 8) & 255}.${id & 255}`, k === 0 ? NODE : 'node-2'));
    }
    slices.push(slice('ns', `s${i}-a`, `s${i}`, { endpoints: eps }));
  }
  return { services, slices };
}

/** This Node, then each Service and its EndpointSlice. */
export function proxyObjects(services: ServiceInfo[], slices: EndpointSliceInfo[]): Record<string, unknown>[] {
  const objs: Record<string, unknown>[] = [
    { apiVersion: 'v1', kind: 'Node', metadata: { name: NODE }, spec: { podCIDRs: ['100.64.0.0/10'] }, status: { addresses: [{ type: 'InternalIP', address: '198.18.0.1' }] } },
  ];
  services.forEach((svc, i) => {
    objs.push({ apiVersion: 'v1', kind: 'Service', metadata: { namespace: svc.namespace, name: svc.name }, spec: { clusterIP: svc.clusterIPs[0], clusterIPs: svc.clusterIPs, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] } });
    objs.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { namespace: svc.namespace, name: `${svc.name}-a`, labels: { 'kubernetes.io/service-name': svc.name } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      endpoints: slices[i].endpoints.map((e) => ({ addresses: [e.address], conditions: { ready: true }, nodeName: e.nodeName })),
    });
  });
  return objs;
}
