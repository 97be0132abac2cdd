/** Builders of normalized Services, EndpointSlices and Nodes for proxy tests, and a random
 * cluster of them. Addresses: services 198.19.0.0/16 and 2001:db8:f::/64, pods 198.18.x.0/24 and
 * 2001:db8:x::/64, nodes 198.18.0.x. */
import { defaultedService, type EndpointInfo, type EndpointSliceInfo, type NodeInfo, type ServiceInfo, type ServicePortInfo } from '../../src/k8s/service-model';
import type { ClusterChange, ClusterSnapshot } from '../../src/k8s/source';

export const NODE = 'node-1';

export function service(ns: string, name: string, over: Partial<ServiceInfo> = {}): ServiceInfo {
  return defaultedService(ns, name, { ports: [{ name: 'http', protocol: 'TCP', port: 80, targetPort: 8080 }], ...over });
}

export function port(name: string, protocol: ServicePortInfo['protocol'], p: number, extra: Partial<ServicePortInfo> = {}): ServicePortInfo {
  return { name, protocol, port: p, targetPort: p, ...extra };
}

export function endpoint(address: string, nodeName: string, over: Partial<EndpointInfo> = {}): EndpointInfo {
  return { address, ready: true, serving: true, terminating: false, nodeName, ...over };
}

export function slice(ns: string, name: string, serviceName: string, over: Partial<EndpointSliceInfo> = {}): EndpointSliceInfo {
  return { namespace: ns, name, serviceName, addressType: 'IPv4', ports: [{ name: 'http', protocol: 'TCP', port: 8080 }], endpoints: [], ...over };
}

export function node(name: string, over: Partial<NodeInfo> = {}): NodeInfo {
  return { name, addresses: [], podCIDRs: [], ...over };
}

export function snapshotOf(services: ServiceInfo[], slices: EndpointSliceInfo[], nodes: NodeInfo[]): ClusterSnapshot {
  return {
    pods: new Map(),
    namespaces: new Map(),
    policies: new Map(),
    services: new Map(services.map((s) => [`${s.namespace}/${s.name}`, s])),
    endpointSlices: new Map(slices.map((s) => [`${s.namespace}/${s.name}`, s])),
    nodes: new Map(nodes.map((n) => [n.name, n])),
  };
}

/** A random cluster of services, slices and nodes that changes one object at a time. */
export class ServiceWorld {
  readonly services = new Map<string, ServiceInfo>();
  readonly slices = new Map<string, EndpointSliceInfo>();
  readonly nodes = new Map<string, NodeInfo>();

  constructor(private readonly rand: () => number) {}

  private pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.rand() * list.length)];
  }

  private chance(p: number): boolean {
    return this.rand() < p;
  }

  snapshot(): ClusterSnapshot {
    return snapshotOf([...this.services.values()], [...this.slices.values()], [...this.nodes.values()]);
  }

  private randomService(ns: string, name: string, i: number): ServiceInfo {
    const type = this.pick(['ClusterIP', 'ClusterIP', 'NodePort', 'LoadBalancer', 'ExternalName'] as const);
    const headless = type !== 'ExternalName' && this.chance(0.15);
    const families = this.pick([['v4'], ['v6'], ['v4', 'v6']] as const);
    const clusterIPs = type === 'ExternalName' || headless ? [] : families.map((f) => (f === 'v4' ? `198.19.0.${i}` : `2001:db8:f::${i.toString(16)}`));
    const ports: ServicePortInfo[] = [port('http', 'TCP', 80)];
    if (this.chance(0.5)) ports.push(port('dns', 'UDP', 53));
    if (type === 'NodePort' || type === 'LoadBalancer') ports.forEach((p, k) => (p.nodePort = 30000 + i * 2 + k));
    const svc = service(ns, name, {
      type,
      clusterIPs,
      headless,
      ports,
      externalIPs: this.chance(0.2) ? [this.pick(['198.18.200.1', '198.18.200.2', '2001:db8:c8::1'])] : [],
      externalTrafficPolicy: type !== 'ClusterIP' && type !== 'ExternalName' && this.chance(0.4) ? 'Local' : 'Cluster',
      internalTrafficPolicy: this.chance(0.2) ? 'Local' : 'Cluster',
      sessionAffinity: this.chance(0.2) ? 'ClientIP' : 'None',
    });
    if (svc.sessionAffinity === 'ClientIP') svc.affinityTimeoutSeconds = this.pick([10, 10800]);
    if (type === 'LoadBalancer') {
      svc.loadBalancerIPs = [this.pick(['198.18.201.1', '198.18.201.2', '2001:db8:c9::1'])];
      if (this.chance(0.5)) svc.loadBalancerSourceRanges = this.pick([['198.18.100.0/24'], ['198.18.0.0/16', '198.18.100.0/24'], ['2001:db8::/32']]);
    }
    return svc;
  }

  private randomSlice(ns: string, svcName: string, k: number): EndpointSliceInfo {
    const v6 = this.chance(0.4);
    const n = Math.floor(this.rand() * 4);
    const endpoints: EndpointInfo[] = [];
    for (let e = 0; e < n; e++) {
      const host = 1 + Math.floor(this.rand() * 6);
      const nodeName = this.pick([NODE, 'node-2', 'node-3']);
      const ready = this.chance(0.7);
      const ep = endpoint(v6 ? `2001:db8:1::${host}` : `198.18.1.${host}`, nodeName, { ready, serving: ready || this.chance(0.5), terminating: !ready && this.chance(0.7) });
      if (this.chance(0.2)) ep.zoneHints = [this.pick(['a', 'b'])];
      if (this.chance(0.1)) ep.nodeHints = [this.pick([NODE, 'node-2'])];
      endpoints.push(ep);
    }
    return slice(ns, `${svcName}-${k}`, svcName, {
      addressType: v6 ? 'IPv6' : 'IPv4',
      ports: [
        { name: 'http', protocol: 'TCP', port: this.pick([8080, 8081]) },
        { name: 'dns', protocol: 'UDP', port: 5353 },
      ],
      endpoints,
      triggerTimeMs: 1,
    });
  }

  /** One random change, applied to the world. */
  change(): ClusterChange {
    const r = this.rand();
    const ns = this.pick(['x', 'y']);
    const i = 1 + Math.floor(this.rand() * 8);
    const name = `s${i}`;
    const svcKey = `${ns}/${name}`;
    if (r < 0.25) {
      const old = this.services.get(svcKey);
      if (old && this.chance(0.3)) {
        this.services.delete(svcKey);
        return { kind: 'Service', type: 'delete', key: svcKey, object: old };
      }
      const svc = this.randomService(ns, name, i + (ns === 'y' ? 100 : 0));
      this.services.set(svcKey, svc);
      return { kind: 'Service', type: 'upsert', key: svcKey, object: svc };
    }
    if (r < 0.9) {
      const key = `${ns}/${name}-${Math.floor(this.rand() * 2)}`;
      const old = this.slices.get(key);
      if (old && this.chance(0.2)) {
        this.slices.delete(key);
        return { kind: 'EndpointSlice', type: 'delete', key, object: old };
      }
      const s = this.randomSlice(ns, name, Number(key.slice(-1)));
      this.slices.set(key, s);
      return { kind: 'EndpointSlice', type: 'upsert', key, object: s };
    }
    const nodeName = this.pick([NODE, 'node-2']);
    const old = this.nodes.get(nodeName);
    if (old && this.chance(0.2)) {
      this.nodes.delete(nodeName);
      return { kind: 'Node', type: 'delete', key: nodeName, object: old };
    }
    const idx = nodeName === NODE ? 1 : 2;
    const n = node(nodeName, {
      addresses: [{ type: 'InternalIP', address: `198.18.0.${idx}` }, ...(this.chance(0.5) ? [{ type: 'InternalIP', address: `2001:db8::${idx}` }] : [])],
      podCIDRs: this.chance(0.7) ? [`198.18.${idx}.0/24`, `2001:db8:${idx}::/64`] : [],
    });
    if (this.chance(0.6)) n.zone = this.pick(['a', 'b']);
    this.nodes.set(nodeName, n);
    return { kind: 'Node', type: 'upsert', key: nodeName, object: n };
  }
}
