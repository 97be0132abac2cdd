/** `nfkube agent`: enforce NetworkPolicy for this node's pods until stopped (or once). */
import { Agent } from '../../agent/agent';
import { metricsObserver, policyCounterReader } from '../../agent/metrics-bridge';
import { AgentMetrics } from '../../observe/metrics';
import { DEFAULT_METRICS_ADDR, parseListenAddress, startObserveServer } from '../../observe/server';
import { logCoexistence } from '../../agent/coexist';
import { createLogger } from '../../log';
import { NetlinkSocket } from '../../netlink/socket';
import { Command } from '../command';
import { denyAction, nodeName, parse, parseDuration, tableName } from '../options';
import { openSource, SOURCE_OPTIONS } from '../source';
import { dropLogOptions, modeAnnotationWarner, policyModes } from '../deny-options';
import { startDropLogging } from '../../nflog';
import { PolicyModes } from '../../deny/modes';

const usage = `usage: nfkube agent [--kubeconfig P | --manifests DIR] [--node-name N] [--table T] [--once]
                    [--resync-period D] [--deny-action drop|reject] [--log-level L] [--metrics-addr A]
                    [--log-drops [--log-group G] [--log-rate R] [--log-burst B]] [--policy-mode enforce|audit]`;

/** How often the agent checks that its table is still there and awake (one small dump). */
const TABLE_CHECK_MS = 10_000;

const command: Command = {
  summary: 'enforce NetworkPolicy for the pods on this node (--once: sync and exit)',
  usage,
  async run(args) {
    const v = parse(args, { ...SOURCE_OPTIONS, once: { type: 'boolean' }, 'resync-period': { type: 'string' }, 'metrics-addr': { type: 'string' } }, usage);
    const logger = createLogger((v['log-level'] as string | undefined) ?? 'info');
    const resyncMs = parseDuration((v['resync-period'] as string | undefined) ?? '5m', '--resync-period');
    const metricsAddr = parseListenAddress((v['metrics-addr'] as string | undefined) ?? DEFAULT_METRICS_ADDR);
    const table = tableName(v.table);
    const socket = NetlinkSocket.open();
    await logCoexistence(socket, table, logger);
    const metrics = new AgentMetrics();
    const modes = policyModes(v, [], (namespace, value) => logger.warn({ object: `Namespace ${namespace}`, field: 'metadata.annotations["nfkube.io/policy-mode"]', value }, 'not enforce or audit; enforcing'));
    const log = dropLogOptions(v);
    const warnMode = modeAnnotationWarner(modes, logger);
    const node = nodeName(v['node-name']);
    const drops = log ? await startDropLogging({ log, nodeName: node, modes: modes ?? new PolicyModes(), denyAction: denyAction(v['deny-action']), logger, registry: metrics.registry }) : undefined;
    const agent = new Agent({ socket, nodeName: node, table, denyAction: denyAction(v['deny-action']), log, modes, logger, observer: metricsObserver(metrics) });
    const source = openSource(v, {
      onChange: (c) => {
        drops?.apply(c);
        if (c.kind === 'Namespace' && c.type === 'upsert') warnMode(c.object);
        agent.onChange(c);
      },
      onError: (e) => logger.error({ object: e.object, field: e.field, file: e.file, document: e.document }, e.message),
    });
    let ready = false;
    const server = v.once
      ? undefined
      : await startObserveServer({
          address: metricsAddr,
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
    for (const ns of snapshot.namespaces.values()) warnMode(ns);
    drops?.load(snapshot);
    await agent.start(snapshot);
    ready = true;
    if (v.once) {
      await source.stop();
      await agent.idle();
      await agent.stop();
      await drops?.close();
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
    await drops?.close();
    await socket.close();
    return 0;
  },
};

export default command;
