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

/** kube-proxy's nftables proxier output for these services (one family, ClusterIP only). */
export function kubeProxyText(services: ServiceInfo[], slices: EndpointSliceInfo[]): string {
  const out: string[] = ['table ip kube-proxy {'];
  out.push('  chain nat-prerouting { type nat hook prerouting priority -100; jump services; }');
  out.push('  chain nat-output { type nat hook output priority -100; jump services; }');
  out.push('  chain nat-postrouting { type nat hook postrouting priority 100; jump masquerading; }');
  out.push('  chain mark-for-masquerade { mark set mark or 0x4000; }');
  out.push('  chain masquerading { mark and 0x4000 == 0 return; mark set mark xor 0x4000; masquerade fully-random; }');
  const elements: string[] = [];
  const chains: string[] = [];
  services.forEach((svc, i) => {
    const name = `${svc.namespace}/${svc.name}/tcp/http`;
    const eps = slices[i].endpoints;
    elements.push(`${svc.clusterIPs[0]} . tcp . 80 : goto service-${name}`);
    const vm = eps.map((e, k) => `${k} : goto endpoint-${name}__${e.address}/8080`).join(', ');
    chains.push(`  chain service-${name} { ip daddr ${svc.clusterIPs[0]} tcp dport 80 ip saddr != 100.64.0.0/10 jump mark-for-masquerade; numgen random mod ${eps.length} vmap { ${vm} }; }`);
    for (const e of eps) chains.push(`  chain endpoint-${name}__${e.address}/8080 { ip saddr ${e.address} jump mark-for-masquerade; meta l4proto tcp dnat to ${e.address}:8080; }`);
  });
  for (const chain of chains) out.push(chain);
  out.push(`  map service-ips { type ipv4_addr . inet_proto . inet_service : verdict; elements = { ${elements.join(', ')} } }`);
  out.push('  chain services { ip daddr . meta l4proto . th dport vmap @service-ips; }');
  out.push('}');
  return out.join('\n') + '\n';
}
