/** The service proxy's command-line options, with kube-proxy's names and meanings:
 * --proxy, --no-policy, --cluster-cidr CIDR[,CIDR], --nodeport-addresses CIDR,...|primary,
 * --masquerade-all, --proxy-table T, and --allowed-external-ip-cidrs CIDR,... (what operators
 * enforce with admission for kube-proxy: externalIPs outside them are refused),
 * --healthz-bind-address ADDR (kube-proxy's /healthz and /livez) and --kube-proxy-metric-names. */
import type { Logger } from 'pino';
import type { ProxyComponent, ProxyOptions } from './component';
import { DEFAULT_PROXY_TABLE } from './render';
import type { MetricPrefix } from './metrics';
import { DEFAULT_HEALTHZ_BIND_ADDRESS } from './proxier-health';
import { ListenAddress, parseListenAddress } from '../observe/server';
import type { OptionTable, OptionValues } from '../options/table';
import { cidrList, stringOption, tableName } from '../options/values';

export const PROXY_CLI_OPTIONS = {
  proxy: { type: 'boolean', description: "run the service proxy (kube-proxy's nftables semantics) beside NetworkPolicy enforcement; with --no-policy, alone" },
  'cluster-cidr': { type: 'string', value: 'CIDR[,CIDR]', description: 'pod ranges; traffic from outside them to a service is masqueraded', default: "the Nodes' spec.podCIDRs" },
  'nodeport-addresses': { type: 'string', value: 'CIDR,...|primary', description: 'the addresses NodePorts answer on', default: 'primary' },
  'masquerade-all': { type: 'boolean', description: 'masquerade all traffic to services' },
  'proxy-table': { type: 'string', value: 'NAME', description: "name of the service proxy's table (family inet)", default: DEFAULT_PROXY_TABLE },
  'allowed-external-ip-cidrs': { type: 'string', value: 'CIDR,...', description: 'externalIPs a Service may use; others are refused (warning, metric, Event)', default: 'all' },
} as const satisfies OptionTable;

/** What only the long-running agent serves for the proxy. */
export const PROXY_AGENT_OPTIONS = {
  'healthz-bind-address': { type: 'string', value: 'ADDR', description: "kube-proxy's /healthz and /livez on host:port or [ipv6]:port, '' off", default: DEFAULT_HEALTHZ_BIND_ADDRESS },
  'kube-proxy-metric-names': { type: 'boolean', description: "name the proxy's metrics kubeproxy_* as kube-proxy does (default nfkube_proxy_*)" },
} as const satisfies OptionTable;

/** Where the agent serves kube-proxy's /healthz and /livez (none when off), and its metric names. */
export function proxyServing(v: OptionValues): { healthzAddress?: ListenAddress; metricPrefix: MetricPrefix } {
  if (v.proxy !== true) for (const flag of Object.keys(PROXY_AGENT_OPTIONS)) if (v[flag] !== undefined) throw new Error(`--${flag} applies to --proxy only`);
  const healthz = (stringOption(v, 'healthz-bind-address') ?? DEFAULT_HEALTHZ_BIND_ADDRESS).trim();
  return {
    healthzAddress: healthz === '' ? undefined : parseListenAddress(healthz, '--healthz-bind-address'),
    metricPrefix: v['kube-proxy-metric-names'] === true ? 'kubeproxy_' : 'nfkube_proxy_',
  };
}

/** The proxy's options (without the node name) from the flags; undefined without --proxy. */
export function proxySettings(v: OptionValues): Omit<ProxyOptions, 'nodeName'> | undefined {
  const proxy = v.proxy === true;
  for (const flag of ['cluster-cidr', 'nodeport-addresses', 'masquerade-all', 'proxy-table', 'allowed-external-ip-cidrs']) {
    if (!proxy && v[flag] !== undefined) throw new Error(`--${flag} applies to --proxy only`);
  }
  if (!proxy) return undefined;
  const np = stringOption(v, 'nodeport-addresses');
  const clusterCidrs = stringOption(v, 'cluster-cidr');
  const externalIpCidrs = stringOption(v, 'allowed-external-ip-cidrs');
  return {
    table: tableName(stringOption(v, 'proxy-table') ?? DEFAULT_PROXY_TABLE),
    clusterCIDRs: clusterCidrs !== undefined ? cidrList(clusterCidrs, '--cluster-cidr') : undefined,
    nodePortAddresses: np === undefined || np.trim() === 'primary' ? 'primary' : cidrList(np, '--nodeport-addresses'),
    masqueradeAll: v['masquerade-all'] === true,
    allowedExternalIPCIDRs: externalIpCidrs !== undefined ? cidrList(externalIpCidrs, '--allowed-external-ip-cidrs') : [],
  };
}

/** The proxy's Event writer when the agent reads an API server (none over manifests). */
export function proxyEvents(v: OptionValues, nodeName: string, logger: Logger): ProxyOptions['events'] {
  if (v.manifests !== undefined) return undefined;
  const { loadKubeConfig } = require('../k8s/informer-source') as typeof import('../k8s/informer-source');
  const { EventWriter, kubeConfigTransport } = require('../k8s/event-writer') as typeof import('../k8s/event-writer');
  let kc: ReturnType<typeof loadKubeConfig>;
  try {
    kc = loadKubeConfig(stringOption(v, 'kubeconfig'));
  } catch {
    // No cluster to reach: opening the source reports it, with the flags to pass.
    return undefined;
  }
  return new EventWriter(kubeConfigTransport(kc), { component: 'nfkube-proxy', host: nodeName }, logger);
}

export function proxyComponent(
  opts: Omit<ProxyOptions, 'nodeName'>,
  nodeName: string,
  extra: Pick<ProxyOptions, 'conntrack' | 'logger' | 'metrics' | 'health' | 'events' | 'proxierHealth'> = {},
): ProxyComponent {
  // Loaded only when the proxy runs: the policy agent alone never pays for it.
  const { ProxyComponent } = require('./component') as typeof import('./component');
  return new ProxyComponent({ ...opts, nodeName, ...extra });
}
