/** `nfkube agent`: enforce NetworkPolicy for this node's pods until stopped (or once). */
import { PolicyComponent } from '../../agent/policy-component';
import { metricsObserver, policyCounterReader } from '../../agent/metrics-bridge';
import { AgentMetrics } from '../../observe/metrics';
import { DEFAULT_METRICS_ADDR, parseListenAddress, startObserveServer } from '../../observe/server';
import { logCoexistence } from '../../agent/coexist';
import { createLogger } from '../../log';
import { NetlinkSocket } from '../../netlink/socket';
import { listTables } from '../../nft/readback';
import { Agent, DEFAULT_TABLE_CHECK_MS } from '../../pipeline/agent';
import { Command } from '../command';
import { denyAction, nodeName, parse, parseDuration, tableName } from '../options';
import { openSource, SOURCE_OPTIONS } from '../source';
import { ConntrackClient } from '../../conntrack/client';
import type { Component } from '../../pipeline/component';
import { PROXY_CLI_OPTIONS, PROXY_USAGE, proxyChoice, proxyComponent } from '../proxy-options';
import { ProxyMetrics } from '../../proxy/metrics';
import { HealthCheckServer } from '../../proxy/health';

const usage = `usage: nfkube agent [--kubeconfig P | --manifests DIR] [--node-name N] [--table T] [--once] [--timeout D]
                    [--resync-period D] [--deny-action drop|reject] [--log-level L] [--metrics-addr A]
                    ${PROXY_USAGE}`;

/** /healthz turns red once syncs have kept failing this long (or one resync period, if shorter):
 * retries back off up to 30 s, so by then at least two more attempts failed in a row. */
const FAILING_LIMIT_MS = 60_000;

const command: Command = {
  summary: 'enforce NetworkPolicy for the pods on this node, and with --proxy serve Services (--once: sync and exit)',
  usage,
  async run(args, ctx) {
    const v = parse(args, { ...SOURCE_OPTIONS, ...PROXY_CLI_OPTIONS, once: { type: 'boolean' }, timeout: { type: 'string' }, 'resync-period': { type: 'string' }, 'metrics-addr': { type: 'string' } }, usage);
    const choice = proxyChoice(v);
    const logger = createLogger((v['log-level'] as string | undefined) ?? 'info');
    const resyncMs = parseDuration((v['resync-period'] as string | undefined) ?? '5m', '--resync-period');
    const metricsAddr = parseListenAddress((v['metrics-addr'] as string | undefined) ?? DEFAULT_METRICS_ADDR);
    if (v.timeout !== undefined && !v.once) throw new Error(`--timeout applies to --once only\n${usage}`);
    const deadlineMs = v.once ? parseDuration((v.timeout as string | undefined) ?? '60s', '--timeout') : undefined;
    const table = tableName(v.table);
    const policy = new PolicyComponent({ nodeName: nodeName(v['node-name']), table, denyAction: denyAction(v['deny-action']), logger });
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    // One small dump first: without CAP_NET_ADMIN this fails at once, before anything else runs.
    await listTables(socket, policy.table.family);
    if (choice.policy) await logCoexistence(socket, table, logger);
    const components: Component[] = choice.policy ? [policy] : [];
    const metrics = new AgentMetrics();
    const proxyMetrics = choice.proxy ? new ProxyMetrics(metrics.registry) : undefined;
    if (choice.proxy) {
      const health = v.once ? undefined : new HealthCheckServer({ logger });
      if (health) ctx.defer(() => health.close());
      const proxy = proxyComponent(choice.proxy, nodeName(v['node-name']), { conntrack: new ConntrackClient(socket), logger: logger.child({ component: 'proxy' }), metrics: proxyMetrics, health });
      if (proxy.table.name === table && proxy.table.family === policy.table.family && choice.policy) throw new Error(`--proxy-table ${proxy.table.name}: the policy table has that name`);
      components.push(proxy);
    }
    const observer = metricsObserver(metrics);
    const agent = new Agent({
      socket,
      logger,
      components,
      observer: proxyMetrics
        ? {
            ...observer,
            synced: (r) => {
              observer.synced?.(r);
              if (r.component === 'proxy') proxyMetrics.synced(r.durationMs);
            },
            // The pipeline does not say which table failed: counted when the proxy runs alone.
            failed: (kind, err) => {
              observer.failed?.(kind, err);
              if (!choice.policy) proxyMetrics.syncFailures.inc();
            },
          }
        : observer,
      ...(v.once ? {} : { resyncPeriodMs: resyncMs, tableCheckMs: Math.min(DEFAULT_TABLE_CHECK_MS, resyncMs) }),
    });
    let lastSourceError: string | undefined;
    let sourceErrors = 0;
    const source = openSource(v, {
      onChange: (c) => agent.onChange(c),
      onError: (e) => {
        lastSourceError = e.message;
        // A lost connection is retried by the source: a warning until --timeout or /healthz
        // says otherwise. A bad object or file is an error.
        if (e.object === undefined && e.file === undefined) return logger.warn(e.message);
        sourceErrors++;
        logger.error({ object: e.object, field: e.field, file: e.file, document: e.document }, e.message);
      },
    }, choice.kinds);
    ctx.defer(() => source.stop());
    ctx.defer(() => agent.stop());
    if (deadlineMs !== undefined) {
      let initialErrors = 0;
      let stage = "the cluster's initial state was not complete";
      await withDeadline(deadlineMs, async () => {
        const snapshot = await source.start();
        initialErrors = sourceErrors;
        stage = 'the first sync was not committed';
        await agent.start(snapshot);
        await agent.idle();
      }, () => `agent --once: not done within --timeout ${v.timeout ?? '60s'} of starting: ${stage}${lastSourceError ? `; last source error: ${lastSourceError}` : ''}`);
      // What could be read is enforced; the exit code says that something could not.
      return initialErrors > 0 ? 1 : 0;
    }
    let ready = false;
    const failingLimitMs = Math.min(FAILING_LIMIT_MS, resyncMs);
    const server = await startObserveServer({
      address: metricsAddr,
      metrics: () => metrics.expose(),
      lastSuccessfulSync: () => metrics.lastSuccessfulSyncMs(),
      resyncPeriodMs: resyncMs,
      ready: () => ready,
      notAlive: () => {
        const f = agent.failing();
        const forMs = f ? Date.now() - f.since : 0;
        if (!f || forMs < failingLimitMs) return undefined;
        return `syncs of table ${f.table} failing for ${(forMs / 1000).toFixed(1)}s (limit ${(failingLimitMs / 1000).toFixed(1)}s): ${f.error instanceof Error ? f.error.message : String(f.error)}`;
      },
    });
    ctx.defer(() => server.close());
    // Counters are read on their own socket so a scrape never queues behind a sync.
    const counterSocket = NetlinkSocket.open();
    ctx.defer(() => counterSocket.close());
    if (choice.policy) metrics.setPolicyCounterReader(policyCounterReader(counterSocket, table), (err: unknown) => logger.warn({ err }, 'reading policy counters failed'));
    logger.info({ address: `${server.address.host}:${server.address.port}` }, 'serving /metrics, /healthz, /readyz');
    await agent.start(await source.start());
    ready = true;
    await new Promise<void>((resolve) => {
      const shutdown = (signal: string) => {
        logger.info({ signal }, 'stopping; the enforced rules stay in place');
        resolve();
      };
      process.once('SIGTERM', shutdown);
      process.once('SIGINT', shutdown);
    });
    return 0;
  },
};

/** Runs `work`, or fails with `message()` when it is not done `ms` after the process started. */
async function withDeadline(ms: number, work: () => Promise<void>, message: () => string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const left = Math.max(0, ms - performance.now());
  const deadline = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message())), left)));
  try {
    await Promise.race([work(), deadline]);
  } finally {
    clearTimeout(timer);
  }
}

export default command;
