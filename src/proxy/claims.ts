/** Who owns a service address or port on this node. A ClusterIP belongs to its Service: another
 * Service listing it as an external or load-balancer IP would take its traffic (the pattern of
 * CVE-2020-8554), so that IP is refused for the other Service. Two Services claiming one cluster
 * IP, one `external IP . protocol . port`, one node port or one health-check node port: the older
 * (creation timestamp, then namespace/name) keeps it and the later one is refused it. External
 * IPs outside --allowed-external-ip-cidrs are refused too. Every Service's claims are indexed, so
 * a change re-decides only the Services that share a claim with it. */
import { ipInCidr, parseCidr, parseIp, ParsedCidr } from '../net/ip';
import type { ServiceInfo } from '../k8s/service-model';

export type RefusalKind = 'cluster-ip' | 'external-ip' | 'load-balancer-ip' | 'node-port' | 'health-check-node-port' | 'external-ip-not-allowed' | 'endpoint-address';

/** One claim a Service was refused. */
export interface Refusal {
  kind: RefusalKind;
  /** `namespace/name` of the refused Service. */
  service: string;
  /** What was refused: an address, `address protocol/port` or `protocol/port`. */
  value: string;
  /** `namespace/name` of the Service that holds it, when another one does. */
  holder?: string;
  /** Why, in words, naming both objects. */
  message: string;
}

/** What a Service is refused, by question. */
export interface Decision {
  refusals: Refusal[];
  clusterIP(ip: string): boolean;
  /** Whether the external or load-balancer IP may serve this protocol and port. */
  externalIP(ip: string, protocol: string, port: number): boolean;
  nodePort(protocol: string, port: number): boolean;
  healthCheckNodePort(): boolean;
}

const key = {
  cluster: (ip: string) => `c ${ip}`,
  external: (ip: string) => `x ${ip}`,
  externalPort: (ip: string, protocol: string, port: number) => `xp ${ip} ${protocol} ${port}`,
  nodePort: (protocol: string, port: number) => `n ${protocol} ${port}`,
  health: (port: number) => `h ${port}`,
};

/** Keys whose holders a change of this key can affect besides its own: an external IP and the
 * cluster IP it may collide with; a health-check port and the TCP node port it may collide with. */
function related(k: string): string[] {
  const [t, a, b] = k.split(' ');
  if (t === 'c') return [key.external(a)];
  if (t === 'x') return [key.cluster(a)];
  if (t === 'h') return [key.nodePort('TCP', Number(a))];
  if (t === 'n' && a === 'TCP') return [key.health(Number(b))];
  return [];
}

function claimKeys(svc: ServiceInfo): string[] {
  const out = new Set<string>();
  for (const ip of svc.clusterIPs) out.add(key.cluster(ip));
  for (const ip of [...svc.externalIPs, ...svc.loadBalancerIPs]) {
    out.add(key.external(ip));
    for (const p of svc.ports) out.add(key.externalPort(ip, p.protocol, p.port));
  }
  for (const p of svc.ports) if (p.nodePort !== undefined) out.add(key.nodePort(p.protocol, p.nodePort));
  if (svc.healthCheckNodePort !== undefined) out.add(key.health(svc.healthCheckNodePort));
  return [...out];
}

export class ClaimIndex {
  private readonly holders = new Map<string, Set<string>>();
  private readonly services = new Map<string, { svc: ServiceInfo; keys: string[] }>();
  private readonly allowedExternal: ParsedCidr[];

  /** `allowedExternalCIDRs`: empty allows every external IP. */
  constructor(allowedExternalCIDRs: readonly string[] = []) {
    this.allowedExternal = allowedExternalCIDRs.map((c) => {
      const parsed = parseCidr(c);
      if (!parsed) throw new Error(`--allowed-external-ip-cidrs: "${c}" is not a CIDR`);
      return parsed;
    });
  }

  clear(): void {
    this.holders.clear();
    this.services.clear();
  }

  /** Records a Service's claims (undefined: it is gone, or claims nothing); returns the other
   * Services whose decision may have changed (none collected when `affects` is false: a start
   * decides every Service anyway). */
  put(service: string, svc: ServiceInfo | undefined, affects = true): Set<string> {
    const old = this.services.get(service);
    const keys = svc ? claimKeys(svc) : [];
    const affected = new Set<string>();
    const touch = (k: string) => {
      if (!affects) return;
      for (const other of [k, ...related(k)]) for (const h of this.holders.get(other) ?? []) affected.add(h);
    };
    for (const k of old?.keys ?? []) {
      touch(k);
      const set = this.holders.get(k)!;
      set.delete(service);
      if (set.size === 0) this.holders.delete(k);
    }
    if (svc) this.services.set(service, { svc, keys });
    else this.services.delete(service);
    for (const k of keys) {
      let set = this.holders.get(k);
      if (!set) this.holders.set(k, (set = new Set()));
      set.add(service);
      touch(k);
    }
    affected.delete(service);
    return affected;
  }

  /** The oldest other holder of `k` that is older than `service`, if any. */
  private olderHolder(k: string, service: string): string | undefined {
    let best: string | undefined;
    for (const h of this.holders.get(k) ?? []) {
      if (h !== service && this.older(h, best ?? service)) best = h;
    }
    return best;
  }

  private anyOther(k: string, service: string): string | undefined {
    const all = [...(this.holders.get(k) ?? [])].filter((h) => h !== service);
    return all.sort((a, b) => (this.older(a, b) ? -1 : 1))[0];
  }

  /** Whether a is older than b: creation timestamp (one without comes last), then key. */
  private older(a: string, b: string): boolean {
    const ta = this.services.get(a)?.svc.createdMs ?? Infinity;
    const tb = this.services.get(b)?.svc.createdMs ?? Infinity;
    return ta !== tb ? ta < tb : a < b;
  }

  /** What `service` (recorded by put) is refused. */
  decide(service: string): Decision {
    const svc = this.services.get(service)?.svc;
    const refusals: Refusal[] = [];
    const refuse = (kind: RefusalKind, value: string, holder: string | undefined, why: string) =>
      refusals.push({ kind, service, value, ...(holder !== undefined ? { holder } : {}), message: `Service ${service}: ${kind} ${value} refused: ${why}` });
    const refusedClusterIPs = new Set<string>();
    const refusedIPs = new Set<string>();
    const refusedPorts = new Set<string>();
    let healthRefused = false;
    for (const ip of svc?.clusterIPs ?? []) {
      const h = this.olderHolder(key.cluster(ip), service);
      if (h === undefined) continue;
      refusedClusterIPs.add(ip);
      refuse('cluster-ip', ip, h, `it is the cluster IP of the older Service ${h}`);
    }
    const externals: [string, RefusalKind][] = [...(svc?.externalIPs ?? []).map((ip) => [ip, 'external-ip'] as [string, RefusalKind]), ...(svc?.loadBalancerIPs ?? []).map((ip) => [ip, 'load-balancer-ip'] as [string, RefusalKind])];
    for (const [ip, kind] of externals) {
      if (refusedIPs.has(ip)) continue;
      const owner = svc!.clusterIPs.includes(ip) ? undefined : this.anyOther(key.cluster(ip), service);
      if (owner !== undefined) {
        refusedIPs.add(ip);
        refuse(kind, ip, owner, `it is the cluster IP of Service ${owner}`);
        continue;
      }
      if (kind === 'external-ip' && this.allowedExternal.length > 0) {
        const parsed = parseIp(ip);
        if (!parsed || !this.allowedExternal.some((c) => ipInCidr(parsed, c))) {
          refusedIPs.add(ip);
          refuse('external-ip-not-allowed', ip, undefined, 'it is outside --allowed-external-ip-cidrs');
          continue;
        }
      }
      for (const p of svc!.ports) {
        const pk = key.externalPort(ip, p.protocol, p.port);
        if (refusedPorts.has(pk)) continue;
        const h = this.olderHolder(pk, service);
        if (h === undefined) continue;
        refusedPorts.add(pk);
        refuse(kind, `${ip} ${p.protocol}/${p.port}`, h, `the older Service ${h} serves it`);
      }
    }
    for (const p of svc?.ports ?? []) {
      if (p.nodePort === undefined) continue;
      const pk = key.nodePort(p.protocol, p.nodePort);
      if (refusedPorts.has(pk)) continue;
      const h = this.olderHolder(pk, service);
      if (h === undefined) continue;
      refusedPorts.add(pk);
      refuse('node-port', `${p.protocol}/${p.nodePort}`, h, `the older Service ${h} has node port ${p.protocol}/${p.nodePort}`);
    }
    const hc = svc?.healthCheckNodePort;
    if (hc !== undefined) {
      const h = this.olderHolder(key.health(hc), service);
      const np = this.anyOther(key.nodePort('TCP', hc), service);
      if (h !== undefined) refuse('health-check-node-port', `TCP/${hc}`, h, `the older Service ${h} has health-check node port ${hc}`);
      else if (np !== undefined) refuse('health-check-node-port', `TCP/${hc}`, np, `Service ${np} has node port TCP/${hc}`);
      healthRefused = h !== undefined || np !== undefined;
    }
    return {
      refusals,
      clusterIP: (ip) => !refusedClusterIPs.has(ip),
      externalIP: (ip, protocol, port) => !refusedIPs.has(ip) && !refusedPorts.has(key.externalPort(ip, protocol, port)),
      nodePort: (protocol, port) => !refusedPorts.has(key.nodePort(protocol, port)),
      healthCheckNodePort: () => !healthRefused,
    };
  }
}
