/** The service proxy as a feature of the node: kube-proxy's options and semantics, its table,
 * its health check servers, kube-proxy's /healthz and /livez, its metrics and its Events. */
import type { Logger } from 'pino';
import { PROXY_KINDS } from '../k8s/source';
import { stringOption, tableName } from '../options/values';
import type { Feature } from '../pipeline/feature';
import type { ProxyOptions } from './component';
import { PROXY_AGENT_OPTIONS, PROXY_CLI_OPTIONS, proxySettings, proxyComponent, proxyEvents, proxyServing } from './options';
import { DEFAULT_PROXY_TABLE } from './render';
import { proxyRecord } from './table-record';

export type ProxySettings = Omit<ProxyOptions, 'nodeName'>;

export const proxyFeature: Feature<ProxySettings> = {
  name: 'proxy',
  options: { ...PROXY_CLI_OPTIONS, ...PROXY_AGENT_OPTIONS },
  kinds: PROXY_KINDS,
  settings: (v) => {
    proxyServing(v);
    return proxySettings(v);
  },
  ownedTable: (v) => ({ family: 'inet', name: tableName(stringOption(v, 'proxy-table') ?? DEFAULT_PROXY_TABLE) }),
  component: (s, nodeName) => proxyComponent(s, nodeName),
  needsMetrics: () => true,
  async open(s, ctx) {
    // Loaded only when the proxy runs: the policy agent alone never pays for them.
    const { ProxyMetrics, withProxyMetrics } = require('./metrics') as typeof import('./metrics');
    const { HealthCheckServer } = require('./health') as typeof import('./health');
    const { ConntrackClient } = require('../conntrack/client') as typeof import('../conntrack/client');
    const serving = proxyServing(ctx.values);
    const metrics = new ProxyMetrics(ctx.metrics!.registry, serving.metricPrefix);
    const health = ctx.once ? undefined : new HealthCheckServer();
    if (health) ctx.defer(() => health.close());
    const proxierHealth = ctx.once || !serving.healthzAddress ? undefined : await startProxierHealth(serving.healthzAddress, metrics, ctx.logger);
    if (proxierHealth) ctx.defer(() => proxierHealth.close());
    const proxy = proxyComponent(s, ctx.nodeName, { conntrack: new ConntrackClient(ctx.socket), logger: ctx.logger.child({ component: 'proxy' }), metrics, health, events: proxyEvents(ctx.values, ctx.nodeName, ctx.logger), proxierHealth });
    return {
      component: proxy,
      record: proxyRecord(s),
      observe: (observer) => (observer ? withProxyMetrics(observer, metrics) : observer),
      settle: () => proxy.settle(),
    };
  },
};

/** kube-proxy's /healthz and /livez; a port that cannot be had is logged, and the agent runs on
 * without it (the proxy itself does not depend on it). */
async function startProxierHealth(address: { host: string; port: number }, metrics: import('./metrics').ProxyMetrics, logger: Logger) {
  const { ProxierHealth } = require('./proxier-health') as typeof import('./proxier-health');
  const health = new ProxierHealth({ counters: { healthz: metrics.healthz, livez: metrics.livez } });
  try {
    await health.listen(address.host, address.port);
    logger.info({ address: `${address.host}:${address.port}` }, "serving kube-proxy's /healthz and /livez");
    return health;
  } catch (err) {
    logger.error({ err, address: `${address.host}:${address.port}` }, "kube-proxy's /healthz and /livez could not be served (--healthz-bind-address)");
    return undefined;
  }
}
