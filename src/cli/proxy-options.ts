/** The service proxy's command-line options, with kube-proxy's names and meanings:
 * --proxy, --no-policy, --cluster-cidr CIDR[,CIDR], --nodeport-addresses CIDR,...|primary,
 * --masquerade-all, --proxy-table T. */
import { POLICY_KINDS, PROXY_KINDS, type ObjectKind } from '../k8s/source';
import { parseCidr } from '../policy/ip';
import { ProxyComponent, ProxyOptions } from '../proxy/component';
import { DEFAULT_PROXY_TABLE } from '../proxy/render';
import { tableName } from './options';

export const PROXY_CLI_OPTIONS = {
  proxy: { type: 'boolean' },
  'no-policy': { type: 'boolean' },
  'cluster-cidr': { type: 'string' },
  'nodeport-addresses': { type: 'string' },
  'masquerade-all': { type: 'boolean' },
  'proxy-table': { type: 'string' },
} as const;

export const PROXY_USAGE = '[--proxy [--no-policy] [--cluster-cidr CIDR[,CIDR]] [--nodeport-addresses CIDR,...|primary] [--masquerade-all] [--proxy-table T]]';

function cidrList(text: string, flag: string): string[] {
  const list = text.split(',').map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) throw new Error(`${flag}: no CIDR given`);
  for (const c of list) if (!parseCidr(c)) throw new Error(`${flag}: "${c}" is not a CIDR`);
  return list;
}

/** What the flags ask for: which components run, and the proxy's options (without the node name). */
export function proxyChoice(v: Record<string, string | boolean | undefined>): { policy: boolean; proxy?: Omit<ProxyOptions, 'nodeName'>; kinds: ObjectKind[] } {
  const proxy = v.proxy === true;
  const policy = v['no-policy'] !== true;
  for (const flag of ['cluster-cidr', 'nodeport-addresses', 'masquerade-all', 'proxy-table']) {
    if (!proxy && v[flag] !== undefined) throw new Error(`--${flag} applies to --proxy only`);
  }
  if (!policy && !proxy) throw new Error('--no-policy without --proxy leaves nothing to run');
  const kinds: ObjectKind[] = [...(policy ? POLICY_KINDS : []), ...(proxy ? PROXY_KINDS : [])];
  if (!proxy) return { policy, kinds };
  const np = v['nodeport-addresses'] as string | undefined;
  return {
    policy,
    kinds,
    proxy: {
      table: tableName((v['proxy-table'] as string | undefined) ?? DEFAULT_PROXY_TABLE),
      clusterCIDRs: v['cluster-cidr'] !== undefined ? cidrList(v['cluster-cidr'] as string, '--cluster-cidr') : undefined,
      nodePortAddresses: np === undefined || np.trim() === 'primary' ? 'primary' : cidrList(np, '--nodeport-addresses'),
      masqueradeAll: v['masquerade-all'] === true,
    },
  };
}

export function proxyComponent(
  opts: Omit<ProxyOptions, 'nodeName'>,
  nodeName: string,
  extra: Pick<ProxyOptions, 'conntrack' | 'logger' | 'metrics' | 'health'> = {},
): ProxyComponent {
  return new ProxyComponent({ ...opts, nodeName, ...extra });
}
