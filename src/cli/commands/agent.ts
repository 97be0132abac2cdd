/** `nfkube agent`: enforce NetworkPolicy for this node's pods until stopped (or once). */
import { Agent } from '../../agent/agent';
import { metricsObserver, policyCounterReader } from '../../agent/metrics-bridge';
import { ProgrammingLatency } from '../../agent/programming-latency';
import { AgentMetrics } from '../../observe/metrics';
import { DEFAULT_METRICS_ADDR, parseMetricsAddress, startObserveServer } from '../../observe/server';
import { logCoexistence } from '../../agent/coexist';
import { createLogger } from '../../log';
import { NetlinkSocket } from '../../netlink/socket';
import { Command } from '../command';
import { denyAction, nodeName, OptionTable, parse, parseDuration, tableName, usageText } from '../options';
import { describeSource, openSource, SOURCE_OPTIONS } from '../source';
import { buildInfo } from '../../build-info';

const options = {
  ...SOURCE_OPTIONS,
  once: { type: 'boolean', description: 'sync once, exit 0 when the kernel committed it' },
  'resync-period': { type: 'string', value: 'DURATION', description: 'read the whole table back and repair drift this often (e.g. 30s, 5m, 1h)', default: '5m' },
  'metrics-addr': { type: 'string', value: 'ADDR', description: "serve /metrics, /healthz and /readyz on host:port, [ipv6]:port, :port (every address), or '' (off)", default: DEFAULT_METRICS_ADDR },
} as const satisfies OptionTable;
const usage = usageText('nfkube agent [--kubeconfig PATH | --manifests DIR] [options]', options, "Enforces NetworkPolicy for this node's pods until SIGTERM/SIGINT (the rules stay in place).");

/** How often the agent checks that its table is still there and awake (one small dump). */
const TABLE_CHECK_MS = 10_000;

const command: Command = {
  summary: 'enforce NetworkPolicy for the pods on this node (--once: sync and exit)',
  usage,
  options,
  async run(args) {
    const v = parse(args, options, usage);
    const logger = createLogger((v['log-level'] as string | undefined) ?? 'info');
    const resyncMs = parseDuration((v['resync-period'] as string | undefined) ?? '5m', '--resync-period');
    const metricsAddr = parseMetricsAddress((v['metrics-addr'] as string | undefined) ?? DEFAULT_METRICS_ADDR);
    const table = tableName(v.table);
    const { version, revision } = buildInfo();
    const node = nodeName(v['node-name']);
    logger.info({ version, revision, node, source: describeSource(v), tables: [`inet ${table}`], resyncPeriod: v['resync-period'] ?? '5m', denyAction: denyAction(v['deny-action']), metricsAddress: metricsAddr ? `${metricsAddr.host}:${metricsAddr.port}` : 'off' }, `nfkube ${version} agent starting`);
    const socket = NetlinkSocket.open();
    await logCoexistence(socket, table, logger);
    const metrics = new AgentMetrics();
    const latency = new ProgrammingLatency((kind, sinceChange, sinceArrival) => metrics.observeProgramming(kind, sinceChange, sinceArrival));
    const agent = new Agent({ socket, nodeName: node, table, denyAction: denyAction(v['deny-action']), logger, observer: metricsObserver(metrics, latency) });
    const source = openSource(v, {
      onChange: (c) => latency.deliver(c, () => agent.onChange(c)),
      onError: (e) => logger.error({ object: e.object, field: e.field, file: e.file, document: e.document }, e.message),
    });
    let ready = false;
    const server = v.once || !metricsAddr
      ? undefined
      : await startObserveServer({
          address: metricsAddr!,
          metrics: () => metrics.expose(),
          lastSuccessfulSync: () => metrics.lastSuccessfulSyncMs(),
          resyncPeriodMs: resyncMs,
          ready: () => ready,
        });
    if (server) {
      // Counters are read on their own socket so a scrape never queues behind a sync.
      const counterSocket = NetlinkSocket.open();
      metrics.setPolicyCounterReader(policyCounterReader(counterSocket, table), (err: unknown) => logger.warn({ err }, 'reading policy counters failed'));
      logger.info({ address: `${server.address.host}:${server.address.port}` }, 'serving /metrics, /healthz, /readyz');
    }
    const snapshot = await source.start();
    if (![...snapshot.pods.values()].some((p) => p.nodeName === node)) logger.warn({ node }, `no pods are scheduled on node ${node}: nothing to enforce yet (is --node-name right?)`);
    await agent.start(snapshot);
    ready = true;
    if (v.once) {
      await source.stop();
      await agent.idle();
      await agent.stop();
      await socket.close();
      return 0;
    }
    const timer = setInterval(() => void agent.resync().catch((err) => logger.error({ err }, 'resync failed')), resyncMs);
    const tableCheck = setInterval(() => void agent.checkTable().catch((err) => logger.error({ err }, 'table check failed')), Math.min(TABLE_CHECK_MS, resyncMs));
    await new Promise<void>((resolve) => {
      const shutdown = (signal: string) => {
        logger.info({ signal }, 'stopping; the enforced rules stay in place');
        resolve();
      };
      process.once('SIGTERM', shutdown);
      process.once('SIGINT', shutdown);
    });
    clearInterval(timer);
    clearInterval(tableCheck);
    await server?.close();
    await source.stop();
    await agent.stop();
    await socket.close();
    return 0;
  },
};

export default command;
