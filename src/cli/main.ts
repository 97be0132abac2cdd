/** `nfkube` entry point: dispatches to one module per command, and is the one place that ends a
 * command: what it opened is closed, and a fatal error is reported once and exits non-zero
 * within a second, whatever is still pending. */
import { NetlinkError } from '../netlink/errors';
import { Command, RunContext } from './command';

// Loaded lazily so a command never pays for another's dependencies.
const commands: Record<string, () => Command> = {
  agent: () => require('./commands/agent').default,
  render: () => require('./commands/render').default,
  verify: () => require('./commands/verify').default,
  cleanup: () => require('./commands/cleanup').default,
  ipset: () => require('./commands/ipset').default,
  install: () => require('./commands/install').default,
  uninstall: () => require('./commands/uninstall').default,
  demo: () => require('./commands/demo').default,
  version: () => require('./commands/version').default,
  ipam: () => require('./commands/ipam').default,
  explain: () => require('./commands/explain').default,
};

/** Commands a person runs at a terminal, or that stand in for a text tool (`ipset restore`),
 * report a fatal error as one plain `nfkube: ...` line; the others as one pino error line, like
 * the rest of their logs. */
const TEXT_ERRORS = new Set(['ipset', 'install', 'uninstall', 'demo', 'explain']);

/** How long closing what a command opened may take after it ended. */
const CLOSE_LIMIT_MS = 500;
/** After a fatal error, the process exits this long after closing even if something (a timer, a
 * connection being retried) would keep it alive. */
const EXIT_GRACE_MS = 200;

function help(): string {
  const lines = Object.entries(commands).map(([name, load]) => `  ${name.padEnd(10)} ${load().summary}`);
  return `usage: nfkube <command> [options]\n\ncommands:\n${lines.join('\n')}\n`;
}

export async function main(argv: string[]): Promise<number> {
  const [first, ...rest] = argv;
  const name = first === '--version' || first === '-V' ? 'version' : first;
  if (!name || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(help());
    return name ? 0 : 2;
  }
  const load = commands[name];
  if (!load) {
    process.stderr.write(`nfkube: unknown command "${name}"\n${help()}`);
    return 2;
  }
  const command = load();
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  const resources = new Resources();
  try {
    return await command.run(rest, resources);
  } catch (err) {
    reportFatal(name, err, TEXT_ERRORS.has(name));
    return 1;
  } finally {
    await resources.closeAll(CLOSE_LIMIT_MS);
  }
}

/** Runs `nfkube ARGV` as the process: sets the exit code, and after a failure makes sure the
 * process ends promptly. */
export function cli(argv: string[]): void {
  main(argv).then(
    (code) => {
      process.exitCode = code;
      if (code !== 0) setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
    },
    (err: unknown) => {
      // Only a failure of the runner itself (reportFatal, closing) gets here.
      process.stderr.write(`nfkube: ${err instanceof Error ? err.message : String(err)}\n`);
      process.exit(1);
    },
  );
}

/** The cause in words, with what to do about a missing privilege. */
export function fatalMessage(err: unknown): string {
  const text = err instanceof Error ? err.message : String(err);
  const code = err instanceof NetlinkError ? err.code : (err as NodeJS.ErrnoException | undefined)?.code;
  if (code === 'EPERM') return `${text}: the kernel refused (EPERM); nfkube needs CAP_NET_ADMIN in this network namespace (run it as root or grant the capability)`;
  return text;
}

function reportFatal(command: string, err: unknown, asText: boolean): void {
  const message = fatalMessage(err);
  if (asText) {
    process.stderr.write(`nfkube: ${message}\n`);
    return;
  }
  // Whatever --log-level says: a fatal error is always reported.
  // pino is loaded only here and by the commands that log: `--version` and `--help` stay fast.
  (require('../log') as typeof import('../log')).createLogger('error').error({ command, err }, message);
}

class Resources implements RunContext {
  private readonly closers: (() => unknown)[] = [];

  defer(close: () => unknown): void {
    this.closers.push(close);
  }

  /** Closes in reverse order; a close that fails or takes too long is left behind. */
  async closeAll(limitMs: number): Promise<void> {
    const all = (async () => {
      for (const close of this.closers.reverse()) {
        try {
          await close();
        } catch {
          // Closing is best effort: the command's own outcome is what is reported.
        }
      }
    })();
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<void>((resolve) => (timer = setTimeout(resolve, limitMs)));
    await Promise.race([all, limit]);
    clearTimeout(timer);
  }
}
