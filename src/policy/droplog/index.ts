/** Drop logging for the agent: subscribe to the deny rules' nfnetlink_log group and turn each
 * packet into one log line and a counter. */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ClusterChange, ClusterSnapshot } from '../../k8s/source';
import type { Netns } from '../../netlink/netns';
import { PolicyModes, type DenyAction } from '../modes';
import { DropLogOptions } from '../render/tail';
import { ClusterView } from './cluster-view';
import { DropLog } from './drop-log';
import { DropRing } from './drop-ring';
import { DropLogMetrics } from './metrics';
import { NflogSubscription } from '../../nflog/subscription';

export { ClusterView } from './cluster-view';
export { DropLog, DropRecord, describe as describeDrop } from './drop-log';
export { NflogSubscription } from '../../nflog/subscription';
export { DropRing, TimedDrop } from './drop-ring';

export interface DropLoggingOptions {
  log: DropLogOptions;
  nodeName: string;
  modes: PolicyModes;
  denyAction: DenyAction;
  logger: Logger;
  /** The agent's metrics registry, for the drop counters. */
  registry?: Registry;
  netns?: Netns | string;
}

export interface DropLogging {
  /** Feed it the source's initial state, then every change. */
  load(snapshot: ClusterSnapshot): void;
  apply(change: ClusterChange): void;
  close(): Promise<void>;
  /** The recent drops, for the agent's /drops. */
  ring: DropRing;
}

/** Binds the group first: a group another listener holds fails here, loudly, before anything
 * is enforced. */
export async function startDropLogging(opts: DropLoggingOptions): Promise<DropLogging> {
  const view = new ClusterView(opts.nodeName);
  const metrics = opts.registry ? new DropLogMetrics(opts.registry) : undefined;
  const ring = new DropRing();
  const drops = new DropLog({ view, modes: opts.modes, denyAction: opts.denyAction, logger: opts.logger, metrics, ring });
  let reported = 0;
  const sub = await NflogSubscription.open({
    group: opts.log.group,
    netns: opts.netns,
    onPacket: (p) => drops.handle(p),
    onTrouble: (t) => {
      if (t.kind === 'read') {
        opts.logger.error({ err: t.err }, 'drop log: reading the nfnetlink_log socket failed; denied packets are no longer logged');
        return;
      }
      metrics?.countLost(t.kind, t.count);
      // A burst of trouble is one warning a minute, not one per read.
      const now = Date.now();
      if (now - reported < 60_000) return;
      reported = now;
      opts.logger.warn({ kind: t.kind, count: t.count, err: t.err }, 'drop log: packets lost or unreadable');
    },
  });
  opts.logger.info({ group: opts.log.group, ratePerPod: opts.log.rate, burst: opts.log.burst }, 'logging denied packets over nfnetlink_log');
  return {
    load: (snapshot) => view.load(snapshot),
    apply(change) {
      view.apply(change);
      if (change.kind === 'Pod' && change.type === 'delete') metrics?.forgetPod(change.object.namespace, change.object.name);
    },
    close: () => sub.close(),
    ring,
  };
}
