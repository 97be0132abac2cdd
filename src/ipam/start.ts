/** Starting IPAM inside `nfkube agent --ipam`: the options it takes from the command line, the
 * service over client-node, its socket and its metrics endpoint. */
import type { Logger } from 'pino';
import { parseListenAddress, startObserveServer } from '../observe/server';
import type { IpamService } from './service';
import type { IpamMetrics } from './metrics';
import { DEFAULT_IPAM_SOCKET, serveIpamSocket } from './server';

export const DEFAULT_IPAM_STATE_DIR = '/var/lib/nfkube/ipam';
export const DEFAULT_IPAM_METRICS_ADDR = '127.0.0.1:9477';

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
  // Loaded here, not with the module: every `nfkube agent` reads ipamArgs, few run IPAM.
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

/** The IPAM settings of `nfkube agent`, from its parsed flags (see the agent's option table).
 * --kubeconfig, --node-name and --log-level are shared with the policy agent. */
export interface IpamArgs {
  enabled: boolean;
  noPolicy: boolean;
  socketPath: string;
  stateDir: string;
  metricsAddr?: string;
  gcIntervalMs?: number;
}

export function ipamArgs(v: Record<string, string | boolean | undefined>): IpamArgs {
  const text = (name: string) => {
    const value = v[name];
    if (value === '') throw new Error(`--${name} needs a value`);
    return typeof value === 'string' ? value : undefined;
  };
  const gc = text('ipam-gc-interval');
  const out: IpamArgs = {
    enabled: v.ipam === true,
    noPolicy: v['no-policy'] === true,
    socketPath: text('ipam-socket') ?? DEFAULT_IPAM_SOCKET,
    stateDir: text('ipam-state-dir') ?? DEFAULT_IPAM_STATE_DIR,
    metricsAddr: text('ipam-metrics-addr'),
    gcIntervalMs: gc === undefined ? undefined : parseMs(gc, '--ipam-gc-interval'),
  };
  return out;
}

function parseMs(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text);
  if (!m) throw new Error(`${flag}: "${text}" is not a duration like 30s or 1m`);
  return Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
}

/** `nfkube agent --ipam --no-policy`: IPAM alone until SIGTERM/SIGINT. */
export async function runIpamOnly(ipam: IpamArgs, values: { kubeconfig?: string; nodeName: string; metricsAddr: string }, logger: Logger): Promise<number> {
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
