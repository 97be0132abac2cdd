/** Starting IPAM inside `nfkube agent --ipam`: the options it takes from the command line, the
 * service over client-node, its socket and its metrics endpoint. */
import type { Logger } from 'pino';
import { parseListenAddress, startObserveServer } from '../observe/server';
import type { IpamService } from './service';
import type { IpamMetrics } from './metrics';
import { DEFAULT_IPAM_SOCKET, serveIpamSocket } from './server';
import type { IpamSettings } from './options';

import { DEFAULT_IPAM_STATE_DIR } from './options';

export { DEFAULT_IPAM_METRICS_ADDR, DEFAULT_IPAM_STATE_DIR } from './options';

export interface StartIpamOptions {
  kubeconfig?: string;
  nodeName: string;
  socketPath?: string;
  stateDir?: string;
  logger: Logger;
  /** Serve /metrics, /healthz, /readyz for IPAM here (host:port); none when undefined. */
  metricsAddr?: string;
  gcIntervalMs?: number;
  nodeGraceMs?: number;
}

export interface IpamHandle {
  service: IpamService;
  metrics: IpamMetrics;
  socketPath: string;
  /** Where /metrics, /healthz and /readyz are served (the real port when 0 was asked for). */
  observeAddress?: { host: string; port: number };
  stop(): Promise<void>;
}

export async function startIpam(o: StartIpamOptions): Promise<IpamHandle> {
  // Loaded here, not with the module: every `nfkube agent` reads the IPAM options, few run IPAM.
  const { ClientNodeApi, loadKubeConfig } = require('./api') as typeof import('./api');
  const { IpamService } = require('./service') as typeof import('./service');
  const { IpamMetrics } = require('./metrics') as typeof import('./metrics');
  const metrics = new IpamMetrics();
  const api = new ClientNodeApi({ kubeConfig: loadKubeConfig(o.kubeconfig), onRequest: (verb, resource) => metrics.apiRequests.inc({ verb, resource }) });
  const service = new IpamService({
    api,
    nodeName: o.nodeName,
    stateDir: o.stateDir ?? DEFAULT_IPAM_STATE_DIR,
    logger: o.logger,
    metrics,
    gcIntervalMs: o.gcIntervalMs,
    nodeGraceMs: o.nodeGraceMs,
  });
  await service.start();
  const socketPath = o.socketPath ?? DEFAULT_IPAM_SOCKET;
  const server = await serveIpamSocket(socketPath, (req) => service.handle(req));
  const observe = o.metricsAddr
    ? await startObserveServer({
        address: parseListenAddress(o.metricsAddr, '--ipam-metrics-addr'),
        metrics: () => metrics.expose(),
        // IPAM has no sync loop: it is healthy and ready while it can record allocations.
        lastSuccessfulSync: () => Date.now(),
        resyncPeriodMs: 60_000,
        notAlive: () => service.problem,
        ready: () => service.problem === undefined,
      })
    : undefined;
  o.logger.info({ socket: socketPath, metrics: o.metricsAddr }, 'ipam serving the CNI plugin');
  return {
    service,
    metrics,
    socketPath,
    observeAddress: observe?.address,
    async stop() {
      await server.close();
      await observe?.close();
      await service.stop();
    },
  };
}

/** `nfkube agent --ipam --no-policy`: IPAM alone until SIGTERM/SIGINT. */
export async function runIpamOnly(ipam: IpamSettings, values: { kubeconfig?: string; nodeName: string; metricsAddr: string }, logger: Logger): Promise<number> {
  const handle = await startIpam({
    kubeconfig: values.kubeconfig,
    nodeName: values.nodeName,
    socketPath: ipam.socketPath,
    stateDir: ipam.stateDir,
    logger,
    metricsAddr: ipam.metricsAddr ?? values.metricsAddr,
    gcIntervalMs: ipam.gcIntervalMs,
  });
  await new Promise<void>((resolve) => {
    process.once('SIGTERM', () => resolve());
    process.once('SIGINT', () => resolve());
  });
  logger.info('stopping ipam; allocations stay recorded');
  await handle.stop();
  return 0;
}
