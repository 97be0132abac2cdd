/** `nfkube agent`: enforce NetworkPolicy for this node's pods until stopped (or once). */
import { PolicyComponent } from '../../policy/component';
import type { AgentMetrics } from '../../observe/metrics';
import { ProgrammingLatency } from '../../pipeline/programming-latency';
import { DEFAULT_METRICS_ADDR, parseMetricsAddress, startObserveServer } from '../../observe/server';
import { logCoexistence } from '../../policy/coexist';
import { createLogger } from '../../log';
import { NetlinkSocket } from '../../netlink/socket';
import { listTables } from '../../nft/readback';
import { Agent, AgentObserver, DEFAULT_TABLE_CHECK_MS } from '../../pipeline/agent';
import { batchTestHooks } from '../../pipeline/batches';
import { Command, RunContext } from '../command';
import { UsageError } from '../usage-error';
import { policyRecord, proxyRecord } from '../table-record';
import { denyAction, nodeName, OptionTable, parse, parseDuration, tableName, usageText } from '../options';
import { describeSource, openSource, prepareSource, SOURCE_OPTIONS, warnNoPods } from '../source';
import type { Component } from '../../pipeline/component';
import { PROXY_AGENT_OPTIONS, PROXY_CLI_OPTIONS, proxyChoice, proxyComponent, proxyEvents, proxyServing } from '../proxy-options';
import { dropLogOptions, modeAnnotationWarner, policyModes } from '../deny-options';
import { PolicyModes } from '../../policy/modes';
import { buildInfo } from '../../build-info';
import type { ClusterSnapshot } from '../../k8s/source';
import type { Logger } from 'pino';
import { DEFAULT_IPAM_METRICS_ADDR, DEFAULT_IPAM_STATE_DIR, ipamArgs, runIpamOnly, startIpam } from '../../ipam/start';
import { DEFAULT_IPAM_SOCKET } from '../../ipam/server';

const options = {
  ...SOURCE_OPTIONS,
  once: { type: 'boolean', description: 'sync once, exit 0 when the kernel committed it' },
  timeout: { type: 'string', value: 'DURATION', description: 'with --once: fail (exit 1) when the first sync is not committed this long after the process started', default: '60s' },
  'resync-period': { type: 'string', value: 'DURATION', description: 'read the whole table back and repair drift this often (e.g. 30s, 5m, 1h)', default: '5m' },
  'no-hold-table': { type: 'boolean', description: "do not hold the table with the kernel's owner flag: other programs may then change or delete it while the agent runs (drift is repaired at the next table check or resync)" },
  'metrics-addr': { type: 'string', value: 'ADDR', description: "serve /metrics, /healthz and /readyz on host:port, [ipv6]:port, :port (every address), or '' (off)", default: DEFAULT_METRICS_ADDR },
  ...PROXY_CLI_OPTIONS,
  ...PROXY_AGENT_OPTIONS,
  ipam: { type: 'boolean', description: 'serve the CNI IPAM plugin nfkube-cni-ipam: addresses from per-node blocks of the IPPools, claimed through the API' },
  'no-policy': { type: 'boolean', description: 'do not enforce NetworkPolicy: run the proxy (--proxy) and/or IPAM (--ipam) alone' },
  'ipam-socket': { type: 'string', value: 'PATH', description: 'the unix socket the CNI plugin talks to', default: DEFAULT_IPAM_SOCKET },
  'ipam-state-dir': { type: 'string', value: 'DIR', description: "the node's write-ahead record of its allocations (fsync'd before an address is handed out)", default: DEFAULT_IPAM_STATE_DIR },
  'ipam-metrics-addr': { type: 'string', value: 'ADDR', description: "IPAM's /metrics while policy enforcement serves its own on --metrics-addr", default: DEFAULT_IPAM_METRICS_ADDR },
  'ipam-gc-interval': { type: 'string', value: 'DURATION', description: 'how often allocations are reconciled with the pod list and the Nodes', default: '1m' },
} as const satisfies OptionTable;
const usage = usageText('nfkube agent [--kubeconfig PATH | --manifests DIR] [options]', options, "Enforces NetworkPolicy for this node's pods until SIGTERM/SIGINT (the rules stay in place).");

/** /healthz turns red once syncs have kept failing this long (or one resync period, if shorter):
 * retries back off up to 30 s, so by then at least two more attempts failed in a row. */
const FAILING_LIMIT_MS = 60_000;

const command: Command = {
  summary: 'enforce NetworkPolicy for the pods on this node, with --proxy serve Services, with --ipam hand out addresses (--once: sync and exit)',
  usage,
  options,
  async run(args, ctx) {
    const v = parse(args, options, usage);
    const choice = proxyChoice(v);
    const logger = createLogger((v['log-level'] as string | undefined) ?? 'info');
    const resyncMs = parseDuration((v['resync-period'] as string | undefined) ?? '5m', '--resync-period');
    const metricsAddr = parseMetricsAddress((v['metrics-addr'] as string | undefined) ?? DEFAULT_METRICS_ADDR);
    if (v.timeout !== undefined && !v.once) throw new UsageError('--timeout applies to --once only');
    const deadlineMs = v.once ? parseDuration((v.timeout as string | undefined) ?? '60s', '--timeout') : undefined;
    const ipam = ipamArgs(v);
    // Checked before IPAM writes its first file: its blocks and claims live in the API.
    if (ipam.enabled && v.manifests) throw new UsageError('--ipam needs an API server (its IPPools, blocks and claims are custom resources): use --kubeconfig, $KUBECONFIG, ~/.kube/config or in-cluster configuration, not --manifests');
    if (ipam.noPolicy && !choice.proxy) {
      return runIpamOnly(ipam, { kubeconfig: v.kubeconfig as string | undefined, nodeName: nodeName(v['node-name']), metricsAddr: (v['metrics-addr'] as string | undefined) ?? DEFAULT_METRICS_ADDR }, logger);
    }
    if (ipam.enabled) {
      const handle = await startIpam({ kubeconfig: v.kubeconfig as string | undefined, nodeName: nodeName(v['node-name']), socketPath: ipam.socketPath, stateDir: ipam.stateDir, logger, metricsAddr: ipam.metricsAddr ?? DEFAULT_IPAM_METRICS_ADDR, gcIntervalMs: ipam.gcIntervalMs });
      ctx.defer(() => handle.stop());
    }
    const table = tableName(v.table);
    const { version, revision } = buildInfo();
    const node = nodeName(v['node-name']);
    const modes = policyModes(v, [], (namespace, value) => logger.warn({ object: `Namespace ${namespace}`, field: 'metadata.annotations["nfkube.io/policy-mode"]', value }, 'not enforce or audit; enforcing'));
    const log = dropLogOptions(v);
    const warnMode = modeAnnotationWarner(modes, logger);
    const policy = new PolicyComponent({ nodeName: node, table, denyAction: denyAction(v['deny-action']), log, modes, logger });
    logger.info({ version, revision, node, source: describeSource(v), tables: [...(choice.policy ? [`inet ${table}`] : []), ...(choice.proxy ? [`inet ${choice.proxy.table}`] : [])], resyncPeriod: v['resync-period'] ?? '5m', denyAction: denyAction(v['deny-action']), metricsAddress: metricsAddr ? `${metricsAddr.host}:${metricsAddr.port}` : 'off' }, `nfkube ${version} agent starting`);
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    // One small dump first: without CAP_NET_ADMIN this fails at once, before anything else runs.
    await listTables(socket, policy.table.family);
    if (choice.policy) await logCoexistence(socket, table, logger);
    const components: Component[] = choice.policy ? [policy] : [];
    // Metrics, drop logging and the proxy are loaded only when used: `agent --once` over a
    // manifests directory starts without prom-client, the drop log or the proxy's modules.
    // (Made whenever the agent keeps running, or something registers its own metrics in it.)
    const metrics: AgentMetrics | undefined = v.once && !log && !choice.proxy ? undefined : new (require('../../observe/metrics') as typeof import('../../observe/metrics')).AgentMetrics();
    const drops = log ? await (require('../../policy/droplog') as typeof import('../../policy/droplog')).startDropLogging({ log, nodeName: node, modes: modes ?? new PolicyModes(), denyAction: denyAction(v['deny-action']), logger, registry: metrics!.registry }) : undefined;
    if (drops) ctx.defer(() => drops.close());
    const proxyModules = choice.proxy ? { ...(require('../../proxy/metrics') as typeof import('../../proxy/metrics')), ...(require('../../proxy/health') as typeof import('../../proxy/health')) } : undefined;
    const serving = proxyServing(v);
    const proxyMetrics = proxyModules ? new proxyModules.ProxyMetrics(metrics!.registry, serving.metricPrefix) : undefined;
    let proxyOnce: import('../../proxy/component').ProxyComponent | undefined;
    if (choice.proxy && proxyModules) {
      const health = v.once ? undefined : new proxyModules.HealthCheckServer();
      if (health) ctx.defer(() => health.close());
      const proxierHealth = v.once || !serving.healthzAddress ? undefined : await startProxierHealth(serving.healthzAddress, proxyMetrics!, logger);
      if (proxierHealth) ctx.defer(() => proxierHealth.close());
      const proxy = proxyComponent(choice.proxy, node, { conntrack: new (require('../../conntrack/client') as typeof import('../../conntrack/client')).ConntrackClient(socket), logger: logger.child({ component: 'proxy' }), metrics: proxyMetrics, health, events: proxyEvents(v, node, logger), proxierHealth });
      if (proxy.table.name === table && proxy.table.family === policy.table.family && choice.policy) throw new Error(`--proxy-table ${proxy.table.name}: the policy table has that name`);
      components.push(proxy);
      proxyOnce = v.once ? proxy : undefined;
    }
    const latency = new ProgrammingLatency((kind, sinceChange, sinceArrival) => metrics?.observeProgramming(kind, sinceChange, sinceArrival));
    const bridge = metrics ? (require('../../policy/metrics-bridge') as typeof import('../../policy/metrics-bridge')) : undefined;
    const observer = metrics && bridge ? bridge.metricsObserver(metrics, latency) : undefined;
    const batchHooks = batchTestHooks(process.env);
    const killAfter = batchHooks.killAfterBatch;
    const agent = new Agent({
      socket,
      logger,
      components,
      holdTable: !v['no-hold-table'],
      recordedOptions: { policy: policyRecord({ denyAction: denyAction(v['deny-action']), log, policyMode: v['policy-mode'] as string | undefined }), ...(choice.proxy ? { proxy: proxyRecord(choice.proxy) } : {}) },
      batchLimits: batchHooks.batchLimits,
      ...(killAfter === undefined ? {} : { afterBatch: (index: number) => void (index === killAfter && process.kill(process.pid, 'SIGKILL')) }),
      observer: observer && proxyModules && proxyMetrics ? proxyModules.withProxyMetrics(observer, proxyMetrics) : observer,
      ...(v.once ? {} : { resyncPeriodMs: resyncMs, tableCheckMs: Math.min(DEFAULT_TABLE_CHECK_MS, resyncMs) }),
    });
    let lastSourceError: string | undefined;
    let sourceErrors = 0;
    // IPAM has loaded the whole client-node already (its custom resources need the generated API).
    if (!ipam.enabled) await prepareSource(v);
    const source = openSource(v, {
      onChange: (c) => {
        drops?.apply(c);
        if (c.kind === 'Namespace' && c.type === 'upsert') warnMode(c.object);
        latency.deliver(c, () => agent.onChange(c));
      },
      onWarning: (w) => logger.warn({ object: w.object, file: w.file, document: w.document }, w.message),
      onNotice: (message) => logger.info(message),
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
        if (choice.policy) warnNoPods(snapshot, node, (text) => logger.warn({ node }, text));
        for (const ns of snapshot.namespaces.values()) warnMode(ns);
        drops?.load(snapshot);
        initialErrors = sourceErrors;
        stage = 'the first sync was not committed';
        await agent.start(snapshot);
        if (choice.policy) await watchNeighbours(agent, policy, logger, ctx);
        await agent.idle();
        await proxyOnce?.settle();
      }, () => `agent --once: not done within --timeout ${v.timeout ?? '60s'} of starting: ${stage}${lastSourceError ? `; last source error: ${lastSourceError}` : ''}`);
      // What could be read is enforced; the exit code says that something could not.
      return initialErrors > 0 ? 1 : 0;
    }
    // Past --once: metrics and the bridge were made.
    const served = metrics as AgentMetrics;
    let ready = false;
    const failingLimitMs = Math.min(FAILING_LIMIT_MS, resyncMs);
    const server = metricsAddr
      ? await startObserveServer({
          address: metricsAddr,
          metrics: () => served.expose(),
          lastSuccessfulSync: () => served.lastSuccessfulSyncMs(),
          resyncPeriodMs: resyncMs,
          ready: () => ready,
          notAlive: () => agent.unhealthy(failingLimitMs),
          drops: drops?.ring,
        })
      : undefined;
    if (server) {
      ctx.defer(() => server.close());
      // Counters are read on their own socket so a scrape never queues behind a sync.
      const counterSocket = NetlinkSocket.open();
      ctx.defer(() => counterSocket.close());
      if (choice.policy) served.setPolicyCounterReader(bridge!.policyCounterReader(counterSocket, table, (address, dir) => policy.podAt(address, dir)), (err: unknown) => logger.warn({ err }, 'reading policy counters failed'));
      logger.info({ address: `${server.address.host}:${server.address.port}` }, 'serving /metrics, /healthz, /readyz');
    }
    const snapshot = await source.start();
    if (choice.policy) warnNoPods(snapshot, node, (text) => logger.warn({ node }, text));
    for (const ns of snapshot.namespaces.values()) warnMode(ns);
    drops?.load(snapshot);
    await agent.start(snapshot);
    if (choice.policy) await watchNeighbours(agent, policy, logger, ctx);
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

/** Binds local pods' addresses to their MACs from the node's neighbour table (source-check.ts)
 * for as long as the agent runs. */
async function watchNeighbours(agent: Agent, policy: PolicyComponent, logger: Logger, ctx: RunContext): Promise<void> {
  const { bindNeighbours } = require('../../policy/neighbour-watch') as typeof import('../../policy/neighbour-watch');
  const watch = await bindNeighbours(agent, policy, { logger });
  ctx.defer(() => watch.close());
}

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

/** kube-proxy's /healthz and /livez; a port that cannot be had is logged, and the agent runs on
 * without it (the proxy itself does not depend on it). */
async function startProxierHealth(address: { host: string; port: number }, metrics: import('../../proxy/metrics').ProxyMetrics, logger: Logger) {
  const { ProxierHealth } = require('../../proxy/proxier-health') as typeof import('../../proxy/proxier-health');
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
