/** A Service, its EndpointSlice and a Node as manifests (raw JSON), shared by the source and CLI
 * tests of the service proxy. */
import type { KObject } from '../helpers/apiserver';

export const web: KObject = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { namespace: 'x', name: 'web', annotations: { note: 'ignored' } },
  spec: {
    type: 'LoadBalancer',
    clusterIP: '198.19.0.10',
    clusterIPs: ['198.19.0.10', '2001:db8:f::a'],
    ipFamilies: ['IPv4', 'IPv6'],
    ports: [
      { name: 'http', port: 80, targetPort: 'http', nodePort: 30080 },
      { name: 'dns', protocol: 'UDP', port: 53, targetPort: 5353, nodePort: 30053 },
    ],
    externalIPs: ['198.18.200.1'],
    externalTrafficPolicy: 'Local',
    healthCheckNodePort: 32000,
    sessionAffinity: 'ClientIP',
    loadBalancerSourceRanges: ['198.18.100.0/24'],
  },
  status: { loadBalancer: { ingress: [{ ip: '198.18.201.1' }, { ip: '198.18.201.2', ipMode: 'Proxy' }, { hostname: 'lb.example' }] } },
};

export const webSlice: KObject = {
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: {
    namespace: 'x',
    name: 'web-abc',
    labels: { 'kubernetes.io/service-name': 'web' },
    annotations: { 'endpoints.kubernetes.io/last-change-trigger-time': '2026-01-01T00:00:00Z' },
  },
  addressType: 'IPv4',
  ports: [
    { name: 'http', port: 8080, protocol: 'TCP' },
    { name: 'dns', port: 5353, protocol: 'UDP' },
  ],
  endpoints: [
    { addresses: ['198.18.1.10'], conditions: { ready: true }, nodeName: 'node-1', zone: 'a', hints: { forZones: [{ name: 'a' }] } },
    { addresses: ['198.18.1.11'], conditions: { ready: false, serving: true, terminating: true }, nodeName: 'node-2' },
  ],
};

export const node1: KObject = {
  apiVersion: 'v1',
  kind: 'Node',
  metadata: { name: 'node-1', labels: { 'topology.kubernetes.io/zone': 'a', other: 'x' } },
  spec: { podCIDR: '198.18.1.0/24', podCIDRs: ['198.18.1.0/24', '2001:db8:1::/64'] },
  status: {
    addresses: [
      { type: 'InternalIP', address: '198.18.0.1' },
      { type: 'InternalIP', address: '2001:db8::1' },
      { type: 'Hostname', address: 'node-1' },
    ],
    conditions: [{ type: 'Ready', status: 'True', lastHeartbeatTime: '2026-01-01T00:00:00Z' }],
  },
};
