/** IPAM as a feature of the node: serves the CNI plugin from per-node blocks claimed through
 * the API. It owns no table; alone (--ipam --no-policy) it runs without the sync pipeline. */
import { UsageError } from '../options/usage-error';
import { stringOption } from '../options/values';
import { DEFAULT_METRICS_ADDR } from '../observe/server';
import type { Feature } from '../pipeline/feature';
import { DEFAULT_IPAM_METRICS_ADDR, IPAM_DETAIL_OPTIONS, IPAM_OPTIONS, ipamSettings, type IpamSettings } from './options';

export const ipamFeature: Feature<IpamSettings> = {
  name: 'ipam',
  options: { ...IPAM_OPTIONS, ...IPAM_DETAIL_OPTIONS },
  kinds: [],
  settings(v) {
    const settings = ipamSettings(v);
    // Checked before IPAM writes its first file: its blocks and claims live in the API.
    if (settings && v.manifests) throw new UsageError('--ipam needs an API server (its IPPools, blocks and claims are custom resources): use --kubeconfig, $KUBECONFIG, ~/.kube/config or in-cluster configuration, not --manifests');
    return settings;
  },
  // Its custom resources need client-node's generated API: the whole package.
  loadsApiClient: true,
  async open(s, ctx) {
    const { startIpam } = require('./start') as typeof import('./start');
    const handle = await startIpam({ kubeconfig: stringOption(ctx.values, 'kubeconfig'), nodeName: ctx.nodeName, socketPath: s.socketPath, stateDir: s.stateDir, logger: ctx.logger, metricsAddr: s.metricsAddr ?? DEFAULT_IPAM_METRICS_ADDR, gcIntervalMs: s.gcIntervalMs });
    ctx.defer(() => handle.stop());
    return {};
  },
  runAlone(s, ctx) {
    const { runIpamOnly } = require('./start') as typeof import('./start');
    return runIpamOnly(s, { kubeconfig: stringOption(ctx.values, 'kubeconfig'), nodeName: ctx.nodeName, metricsAddr: stringOption(ctx.values, 'metrics-addr') ?? DEFAULT_METRICS_ADDR }, ctx.logger);
  },
};
