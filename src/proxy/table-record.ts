/** The options that shape the proxy table, as the agent records them in it. */
import { flagText } from '../options/record';
import type { ProxyOptions } from './component';

export const PROXY_RECORDED = ['cluster-cidr', 'nodeport-addresses', 'masquerade-all', 'allowed-external-ip-cidrs'] as const;

/** The proxy table's record. */
export function proxyRecord(o: Omit<ProxyOptions, 'nodeName'>): string {
  const np = o.nodePortAddresses;
  return flagText([
    ['cluster-cidr', o.clusterCIDRs?.join(',')],
    ['nodeport-addresses', np === undefined || np === 'primary' ? undefined : np.join(',')],
    ['masquerade-all', o.masqueradeAll === true],
    ['allowed-external-ip-cidrs', o.allowedExternalIPCIDRs?.length ? o.allowedExternalIPCIDRs.join(',') : undefined],
  ]);
}
