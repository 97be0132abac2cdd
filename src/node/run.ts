/** The node: the enabled features over one source of cluster state and one sync pipeline, until
 * stopped or, with --once, until the first sync is committed. `nfkube agent` is this with its
 * flags; a library user runs the same thing with option values of their own. */
import { buildInfo } from '../build-info';
import type { ClusterSnapshot } from '../k8s/source';
import { createLogger } from '../log';
import type { Netns } from '../netlink/netns';
import { NetlinkSocket } from '../netlink/socket';
import { listTables } from '../nft/readback';
import type { AgentMetrics } from '../observe/metrics';
import { DEFAULT_METRICS_ADDR, parseMetricsAddress, startObserveServer } from '../observe/server';
import type { OptionTable, OptionValues } from '../options/table';
import { denyAction, nodeName as nodeNameOf, parseDuration, stringOption } from '../options/values';
import { UsageError } from '../options/usage-error';
import { Agent, DEFAULT_TABLE_CHECK_MS } from '../pipeline/agent';
import { batchTestHooks } from '../pipeline/batches';
import { tableText } from '../pipeline/component';
import type { Feature, FeatureContext, FeatureRun } from '../pipeline/feature';
import { ProgrammingLatency } from '../pipeline/programming-latency';
import { enabledFeatures, kindsOf } from './enabled';
import { describeSource, openSource, prepareSource } from './source';

/** The node's own options, beside the source's and each feature's. */
export const NODE_OPTIONS = {
  once: { type: 'boolean', description: 'sync once, exit 0 when the kernel committed it' },
  timeout: { type: 'string', value: 'DURATION', description: 'with --once: fail (exit 1) when the first sync is not committed this long after the process started', default: '60s' },
  'resync-period': { type: 'string', value: 'DURATION', description: 'read the whole table back and repair drift this often (e.g. 30s, 5m, 1h)', default: '5m' },
  'no-hold-table': { type: 'boolean', description: "do not hold the table with the kernel's owner flag: other programs may then change or delete it while the agent runs (drift is repaired at the next table check or resync)" },
  'metrics-addr': { type: 'string', value: 'ADDR', description: "serve /metrics, /healthz and /readyz on host:port, [ipv6]:port, :port (every address), or '' (off)", default: DEFAULT_METRICS_ADDR },
} as const satisfies OptionTable;

/** /healthz turns red once syncs have kept failing this long (or one resync period, if shorter):
 * retries back off up to 30 s, so by then at least two more attempts failed in a row. */
const FAILING_LIMIT_MS = 60_000;

export interface NodeRunContext {
  /** Closes a resource when the node stops, however it stops; the last registered first. */
  defer(close: () => unknown): void;
  /** When it settles, a long-running node stops (default: SIGTERM or SIGINT). */
  stopped?: Promise<unknown>;
  /** The network namespace to program (default: the process's own). */
  netns?: Netns | string;
  /** The features to choose from (default: every feature, src/node/features.ts). */
  features?: readonly Feature<unknown>[];
}

/** Runs the node; returns the exit code (--once: 1 when some input could not be read). */
export async function runNode(values: OptionValues, ctx: NodeRunContext): Promise<number> {
  const enabled = enabledFeatures(values, ctx.features);
  const logger = createLogger(stringOption(values, 'log-level') ?? 'info');
  const once = values.once === true;
  const resyncMs = parseDuration(stringOption(values, 'resync-period') ?? '5m', '--resync-period');
  const metricsAddr = parseMetricsAddress(stringOption(values, 'metrics-addr') ?? DEFAULT_METRICS_ADDR);
  if (values.timeout !== undefined && !once) throw new UsageError('--timeout applies to --once only');
  const deadlineMs = once ? parseDuration(stringOption(values, 'timeout') ?? '60s', '--timeout') : undefined;
  const node = nodeNameOf(stringOption(values, 'node-name'));

  const alone = enabled.length === 1 ? enabled[0] : undefined;
  if (alone?.feature.runAlone) return alone.feature.runAlone(alone.settings, { values, nodeName: node, logger });

  if (!enabled.some(({ feature }) => feature.ownedTable)) throw new Error(`${enabled.map((e) => e.feature.name).join(', ')} own no table: enable NetworkPolicy (drop --no-policy) or --proxy`);
  const { version, revision } = buildInfo();
  const tables = enabled.flatMap(({ feature }) => feature.ownedTable?.(values) ?? []).map(tableText);
  logger.info({ version, revision, node, source: describeSource(values), tables, resyncPeriod: values['resync-period'] ?? '5m', denyAction: denyAction(stringOption(values, 'deny-action')), metricsAddress: metricsAddr ? `${metricsAddr.host}:${metricsAddr.port}` : 'off' }, `nfkube ${version} agent starting`);
  const socket = NetlinkSocket.open({ netns: ctx.netns });
  ctx.defer(() => socket.close());
  // One small dump first: without CAP_NET_ADMIN this fails at once, before anything else runs.
  await listTables(socket, 'inet');

  // Made whenever the agent keeps running, or a feature counts into it: `agent --once` over a
  // manifests directory starts without prom-client.
  const needsMetrics = !once || enabled.some(({ feature, settings }) => feature.needsMetrics?.(settings));
  const metrics: AgentMetrics | undefined = needsMetrics ? new (require('../observe/metrics') as typeof import('../observe/metrics')).AgentMetrics() : undefined;
  const featureContext: FeatureContext = { values, nodeName: node, logger, once, socket, netns: ctx.netns, metrics, defer: (close) => ctx.defer(close) };
  const runs: FeatureRun[] = [];
  for (const { feature, settings } of enabled) runs.push(await feature.open(settings, featureContext));

  const latency = new ProgrammingLatency((kind, sinceChange, sinceArrival) => metrics?.observeProgramming(kind, sinceChange, sinceArrival));
  const bridge = metrics ? (require('../policy/metrics-bridge') as typeof import('../policy/metrics-bridge')) : undefined;
  const observer = runs.reduce((o, r) => r.observe?.(o) ?? o, metrics && bridge ? bridge.metricsObserver(metrics, latency) : undefined);
  const components = runs.flatMap((r) => (r.component ? [r.component] : []));
  const records = Object.fromEntries(runs.flatMap((r) => (r.component && r.record !== undefined ? [[r.component.name, r.record]] : [])));
  const batchHooks = batchTestHooks(process.env);
  const killAfter = batchHooks.killAfterBatch;
  const agent = new Agent({
    socket,
    logger,
    components,
    holdTable: !values['no-hold-table'],
    recordedOptions: records,
    batchLimits: batchHooks.batchLimits,
    ...(killAfter === undefined ? {} : { afterBatch: (index: number) => void (index === killAfter && process.kill(process.pid, 'SIGKILL')) }),
    observer,
    once,
    ...(once ? {} : { resyncPeriodMs: resyncMs, tableCheckMs: Math.min(DEFAULT_TABLE_CHECK_MS, resyncMs) }),
  });

  let lastSourceError: string | undefined;
  let sourceErrors = 0;
  if (!enabled.some(({ feature }) => feature.loadsApiClient)) await prepareSource(values);
  const source = openSource(
    values,
    {
      onChange: (c) => {
        for (const r of runs) r.apply?.(c);
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
    },
    kindsOf(enabled),
  );
  ctx.defer(() => source.stop());
  ctx.defer(() => agent.stop());

  /** The first sync, the same with --once or not: `read` is told once the initial state is in. */
  const firstSync = async (read: (snapshot: ClusterSnapshot) => void) => {
    const snapshot = await source.start();
    read(snapshot);
    for (const { feature } of enabled) for (const text of feature.snapshotWarnings?.(snapshot, node) ?? []) logger.warn({ node }, text);
    for (const r of runs) r.load?.(snapshot);
    await agent.start(snapshot);
    for (const r of runs) await r.started?.(agent);
  };

  if (deadlineMs !== undefined) {
    let initialErrors = 0;
    let stage = "the cluster's initial state was not complete";
    await withDeadline(
      deadlineMs,
      async () => {
        await firstSync(() => {
          initialErrors = sourceErrors;
          stage = 'the first sync was not committed';
        });
        await agent.idle();
        for (const r of runs) await r.settle?.();
      },
      () => `agent --once: not done within --timeout ${values.timeout ?? '60s'} of starting: ${stage}${lastSourceError ? `; last source error: ${lastSourceError}` : ''}`,
    );
    // What could be read is enforced; the exit code says that something could not.
    return initialErrors > 0 ? 1 : 0;
  }

  // Past --once: the metrics were made.
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
        drops: runs.find((r) => r.drops)?.drops,
      })
    : undefined;
  if (server) {
    ctx.defer(() => server.close());
    // Counters are read on their own socket so a scrape never queues behind a sync.
    const counterSocket = NetlinkSocket.open({ netns: ctx.netns });
    ctx.defer(() => counterSocket.close());
    for (const r of runs) r.serving?.(served, counterSocket);
    logger.info({ address: `${server.address.host}:${server.address.port}` }, 'serving /metrics, /healthz, /readyz');
  }
  await firstSync(() => undefined);
  ready = true;
  await (ctx.stopped ?? stopSignal(logger));
  return 0;
}

/** Settles on the first SIGTERM or SIGINT, with a log line saying the rules stay. */
function stopSignal(logger: import('pino').Logger): Promise<void> {
  return new Promise<void>((resolve) => {
    const shutdown = (signal: string) => {
      logger.info({ signal }, 'stopping; the enforced rules stay in place');
      resolve();
    };
    process.once('SIGTERM', shutdown);
    process.once('SIGINT', shutdown);
  });
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
