/** `nfkube demo`: see NetworkPolicy enforced on real traffic in one command, without a cluster. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { DemoAborted, runDemo } from '../../demo/run';
import { createLogger } from '../../log';
import { Command } from '../command';
import { COMMON_OPTIONS, denyAction, OptionTable, parse, tableName, usageText } from '../options';

// dist/src/cli/commands -> the package root, where examples/ lives in a checkout.
const EXAMPLES = join(__dirname, '..', '..', '..', '..', 'examples');

const options = {
  manifests: { ...COMMON_OPTIONS.manifests, description: 'directory of Namespaces, Pods and NetworkPolicies to run', default: "the package's examples/" },
  'node-name': { ...COMMON_OPTIONS['node-name'], description: 'run the pods of this node', default: 'node-1' },
  table: COMMON_OPTIONS.table,
  'deny-action': COMMON_OPTIONS['deny-action'],
  'probe-timeout': { type: 'string', value: 'MS', description: 'how long one TCP connect may take before it counts as a timeout (50..60000)', default: '1000' },
  'no-color': { type: 'boolean', description: 'plain text, no ANSI colours (also when NO_COLOR is set or stdout is not a terminal)' },
  'log-level': { ...COMMON_OPTIONS['log-level'], default: 'warn' },
} as const satisfies OptionTable;
const usage = usageText('nfkube demo [options]', options, `Runs the pods of node N (default node-1) from DIR (default: the examples/ directory) as network
namespaces, measures TCP reachability between them, shows a ClusterIP Service over two of them
answering from its endpoints (the service proxy), enforces the NetworkPolicies and measures
again. Needs root (CAP_NET_ADMIN and CAP_SYS_ADMIN for namespaces); leaves nothing behind.`);

const SIGNAL_EXIT = { SIGINT: 130, SIGTERM: 143 } as const;

const command: Command = {
  summary: 'show NetworkPolicy enforced on real traffic between sandboxed pods (root, no cluster)',
  usage,
  options,
  async run(args) {
    const v = parse(args, options, usage);
    const manifests = v.manifests ?? EXAMPLES;
    if (!existsSync(manifests)) throw new Error(`--manifests ${manifests}: no such directory`);
    const timeout = Number(v['probe-timeout'] ?? '1000');
    if (!Number.isInteger(timeout) || timeout < 50 || timeout > 60_000) throw new Error(`--probe-timeout: "${v['probe-timeout']}" is not a whole number of milliseconds in 50..60000`);
    const color = !v['no-color'] && !process.env.NO_COLOR && process.stdout.isTTY === true;

    const abort = new AbortController();
    let received: keyof typeof SIGNAL_EXIT | undefined;
    const onSignal = (signal: keyof typeof SIGNAL_EXIT) => {
      received = signal;
      process.stderr.write(`nfkube demo: ${signal}, cleaning up\n`);
      abort.abort();
    };
    const handlers = { SIGINT: () => onSignal('SIGINT'), SIGTERM: () => onSignal('SIGTERM') };
    process.once('SIGINT', handlers.SIGINT);
    process.once('SIGTERM', handlers.SIGTERM);
    try {
      await runDemo({
        manifests,
        nodeName: v['node-name'] ?? 'node-1',
        table: tableName(v.table),
        denyAction: denyAction(v['deny-action']),
        probeTimeoutMs: timeout,
        color,
        logger: createLogger(v['log-level'] ?? 'warn'),
        signal: abort.signal,
        write: (text) => process.stdout.write(text),
      });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'EPERM') {
        throw new Error(`demo needs root (CAP_SYS_ADMIN to create network namespaces, CAP_NET_ADMIN to configure them): ${(err as Error).message}`);
      }
      if (!(err instanceof DemoAborted)) throw err;
    } finally {
      process.removeListener('SIGINT', handlers.SIGINT);
      process.removeListener('SIGTERM', handlers.SIGTERM);
    }
    return received ? SIGNAL_EXIT[received] : 0;
  },
};

export default command;
