/** IPAM's options in `nfkube agent`; --kubeconfig, --node-name and --log-level are the node's. */
import type { OptionTable, OptionValues } from '../options/table';
import { parseDuration } from '../options/values';
import { DEFAULT_IPAM_SOCKET } from './server';

export const DEFAULT_IPAM_STATE_DIR = '/var/lib/nfkube/ipam';
export const DEFAULT_IPAM_METRICS_ADDR = '127.0.0.1:9477';

export const IPAM_OPTIONS = {
  ipam: { type: 'boolean', description: 'serve the CNI IPAM plugin nfkube-cni-ipam: addresses from per-node blocks of the IPPools, claimed through the API' },
} as const satisfies OptionTable;

/** Placed after the node's --no-policy in the agent's table, as --help has always listed them. */
export const IPAM_DETAIL_OPTIONS = {
  'ipam-socket': { type: 'string', value: 'PATH', description: 'the unix socket the CNI plugin talks to', default: DEFAULT_IPAM_SOCKET },
  'ipam-state-dir': { type: 'string', value: 'DIR', description: "the node's write-ahead record of its allocations (fsync'd before an address is handed out)", default: DEFAULT_IPAM_STATE_DIR },
  'ipam-metrics-addr': { type: 'string', value: 'ADDR', description: "IPAM's /metrics while policy enforcement serves its own on --metrics-addr", default: DEFAULT_IPAM_METRICS_ADDR },
  'ipam-gc-interval': { type: 'string', value: 'DURATION', description: 'how often allocations are reconciled with the pod list and the Nodes', default: '1m' },
} as const satisfies OptionTable;

export interface IpamSettings {
  socketPath: string;
  stateDir: string;
  metricsAddr?: string;
  gcIntervalMs?: number;
}

/** IPAM's settings from the parsed values; undefined without --ipam. */
export function ipamSettings(v: OptionValues): IpamSettings | undefined {
  const text = (name: string) => {
    const value = v[name];
    if (value === '') throw new Error(`--${name} needs a value`);
    return typeof value === 'string' ? value : undefined;
  };
  const gc = text('ipam-gc-interval');
  const settings: IpamSettings = {
    socketPath: text('ipam-socket') ?? DEFAULT_IPAM_SOCKET,
    stateDir: text('ipam-state-dir') ?? DEFAULT_IPAM_STATE_DIR,
    metricsAddr: text('ipam-metrics-addr'),
    gcIntervalMs: gc === undefined ? undefined : parseDuration(gc, '--ipam-gc-interval'),
  };
  return v.ipam === true ? settings : undefined;
}
