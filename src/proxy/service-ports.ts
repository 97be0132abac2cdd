/** Joins a Service with its EndpointSlices into what the proxy programs per service port and
 * address family, as kube-proxy's service and endpoint-slice caches do: a slice port belongs to
 * the service port of the same name and protocol; an endpoint is keyed by address and port (the
 * first slice naming it wins, unless a later one says it is not terminating); only the family of
 * the slice's addressType. Headless, ExternalName and other proxies' services yield nothing. */
import { canonicalIp, ipInCidr, parseCidr, parseIp, type IpFamily } from '../net/ip';
import type { EndpointSliceInfo, ServiceInfo, ServicePortInfo } from '../k8s/service-model';
import type { ProxyEndpoint } from './endpoints';

export interface ServicePortView {
  /** `namespace/name/protocol/portName`, kube-proxy's service port name (protocol lower case). */
  name: string;
  fam: IpFamily;
  service: ServiceInfo;
  port: ServicePortInfo;
  clusterIP: string;
  externalIPs: string[];
  loadBalancerIPs: string[];
  /** The family's loadBalancerSourceRanges. */
  sourceRanges: string[];
  /** Sorted by address then port, so a render never depends on event order. */
  endpoints: ProxyEndpoint[];
  /** Endpoint addresses refused (endpointAddressRefusal), with the reason. */
  refusedEndpoints: string[];
}

/** Addresses an endpoint may not have, as the API server validates EndpointSlices (ValidateEndpointIP,
 * CVE-2021-25737), which kube-proxy relies on: DNAT to them would reach the node's own loopback
 * services or link-local neighbours. Manifests bypass that validation, so the proxy applies it. */
const SPECIAL_ENDPOINT_RANGES: [string, string][] = [
  ['0.0.0.0/32', 'unspecified'],
  ['::/128', 'unspecified'],
  ['127.0.0.0/8', 'loopback'],
  ['::1/128', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['fe80::/10', 'link-local'],
  ['224.0.0.0/24', 'link-local multicast'],
  ['ff02::/16', 'link-local multicast'],
];
const SPECIAL_ENDPOINT_CIDRS = SPECIAL_ENDPOINT_RANGES.map(([c, why]) => [parseCidr(c)!, why] as const);

/** Why an endpoint address is refused, or undefined when it is usable. */
export function endpointAddressRefusal(ip: string): string | undefined {
  const parsed = parseIp(ip);
  if (!parsed) return 'not an address';
  for (const [c, why] of SPECIAL_ENDPOINT_CIDRS) if (c.family === parsed.family && ipInCidr(parsed, c)) return why;
  return undefined;
}

export const familyOf = (ip: string): IpFamily => (ip.includes(':') ? 'v6' : 'v4');

/** Whether the proxy programs anything for this service. */
export function isProxied(svc: ServiceInfo): boolean {
  return svc.type !== 'ExternalName' && !svc.headless && svc.proxyName === undefined && !svc.headlessLabel && svc.clusterIPs.length > 0;
}

export function servicePortViews(svc: ServiceInfo, slices: Iterable<EndpointSliceInfo>, nodeName: string): ServicePortView[] {
  if (!isProxied(svc)) return [];
  const sorted = [...slices].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const out: ServicePortView[] = [];
  for (const clusterIP of svc.clusterIPs) {
    const fam = familyOf(clusterIP);
    const addressType = fam === 'v4' ? 'IPv4' : 'IPv6';
    const ofFamily = (ip: string) => familyOf(ip) === fam;
    for (const port of svc.ports) {
      const all: ProxyEndpoint[] = [];
      const refused = new Set<string>();
      for (const slice of sorted) {
        if (slice.addressType !== addressType) continue;
        // Every slice port of the name and protocol contributes (endpointInfoByServicePort).
        for (const sp of slice.ports) {
          if (sp.name !== port.name || sp.protocol !== port.protocol || sp.port === undefined) continue;
          for (const ep of slice.endpoints) {
            const why = endpointAddressRefusal(ep.address);
            if (why !== undefined) {
              refused.add(`${ep.address} (${why}, EndpointSlice ${slice.namespace}/${slice.name})`);
              continue;
            }
            const pe: ProxyEndpoint = { ip: ep.address, port: sp.port, ready: ep.ready, serving: ep.serving, terminating: ep.terminating, local: ep.nodeName === nodeName };
            if (ep.zoneHints) pe.zoneHints = ep.zoneHints;
            if (ep.nodeHints) pe.nodeHints = ep.nodeHints;
            all.push(pe);
          }
        }
      }
      out.push({
        name: `${svc.namespace}/${svc.name}/${port.protocol.toLowerCase()}/${port.name}`,
        fam,
        service: svc,
        port,
        clusterIP,
        externalIPs: svc.externalIPs.filter(ofFamily),
        loadBalancerIPs: svc.loadBalancerIPs.filter(ofFamily),
        sourceRanges: svc.loadBalancerSourceRanges.filter((c) => parseCidr(c)?.family === fam),
        endpoints: distinctEndpoints(all),
        refusedEndpoints: [...refused],
      });
    }
  }
  return out;
}

/** Sorted, one per address and port. One address and port in two slices (an endpoint moving, or
 * a pod IP reused while the old pod terminates): the first, unless a later one is not terminating
 * (EndpointSliceCache.addEndpoints). The sort is stable, so equal ones stay in slice order. */
function distinctEndpoints(all: ProxyEndpoint[]): ProxyEndpoint[] {
  all.sort(compareEndpoints);
  const out: ProxyEndpoint[] = [];
  for (const ep of all) {
    const last = out.length > 0 ? out[out.length - 1] : undefined;
    if (last === undefined || last.ip !== ep.ip || last.port !== ep.port) out.push(ep);
    else if (!ep.terminating) out[out.length - 1] = ep;
  }
  return out;
}

function compareEndpoints(a: ProxyEndpoint, b: ProxyEndpoint): number {
  if (a.ip !== b.ip) return a.ip < b.ip ? -1 : 1;
  return a.port - b.port;
}

/** The canonical family of an address or CIDR text, or undefined. */
export function familyOfText(text: string): IpFamily | undefined {
  const c = text.includes('/') ? parseCidr(text) : canonicalIp(text);
  return c ? c.family : undefined;
}
