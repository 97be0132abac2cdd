/** `nfkube agent`: enforce NetworkPolicy for this node's pods until stopped (or once). */
import { Agent } from '../../agent/agent';
import { createLogger } from '../../log';
import { NetlinkSocket } from '../../netlink/socket';
import { Command } from '../command';
import { denyAction, nodeName, parse, parseDuration, tableName } from '../options';
import { openSource, SOURCE_OPTIONS } from '../source';

const usage = `usage: nfkube agent [--kubeconfig P | --manifests DIR] [--node-name N] [--table T] [--once]
                    [--resync-period D] [--deny-action drop|reject] [--log-level L] [--metrics-addr A]`;

const command: Command = {
  summary: 'enforce NetworkPolicy for the pods on this node (--once: sync and exit)',
  usage,
  async run(args) {
    const v = parse(args, { ...SOURCE_OPTIONS, once: { type: 'boolean' }, 'resync-period': { type: 'string' }, 'metrics-addr': { type: 'string' } }, usage);
    const logger = createLogger((v['log-level'] as string | undefined) ?? 'info');
    const resyncMs = parseDuration((v['resync-period'] as string | undefined) ?? '5m', '--resync-period');
    const socket = NetlinkSocket.open();
    const agent = new Agent({ socket, nodeName: nodeName(v['node-name']), table: tableName(v.table), denyAction: denyAction(v['deny-action']), logger });
    const source = openSource(v, {
      onChange: (c) => agent.onChange(c),
      onError: (e) => logger.error({ object: e.object, field: e.field, file: e.file, document: e.document }, e.message),
    });
    const snapshot = await source.start();
    await agent.start(snapshot);
    if (v.once) {
      await source.stop();
      await agent.idle();
      await agent.stop();
      await socket.close();
      return 0;
    }
    const timer = setInterval(() => void agent.resync().catch((err) => logger.error({ err }, 'resync failed')), resyncMs);
    await new Promise<void>((resolve) => {
      const shutdown = (signal: string) => {
        logger.info({ signal }, 'stopping; the enforced rules stay in place');
        resolve();
      };
      process.once('SIGTERM', shutdown);
      process.once('SIGINT', shutdown);
    });
    clearInterval(timer);
    await source.stop();
    await agent.stop();
    await socket.close();
    return 0;
  },
};

export default command;
