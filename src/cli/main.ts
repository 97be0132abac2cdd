/** `nfkube` entry point: dispatches to one module per command, and is the one place that ends a
 * command: what it opened is closed, and a fatal error is reported once and exits non-zero
 * within a second, whatever is still pending. */
import { chooseLogFormat, LogFormat, setLogFormat } from '../log-format';
import { Command, RunContext } from './command';
import { COMMANDS as commands } from './registry';
import { didYouMean, UsageError } from './usage-error';
import { fatalMessage } from './fatal-message';

/** Commands whose stderr usually goes to a log pipeline (a unit, a pod, a Job) write JSON lines
 * when stderr is not a terminal; the others write text. --log-format decides for every command,
 * and a fatal error is written in the same format as the command's logs. */
const JSON_WHEN_PIPED = new Set(['agent', 'render', 'verify', 'cleanup', 'ipam', 'version']);

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
  const load = Object.hasOwn(commands, name) ? commands[name] : undefined;
  if (!load) {
    process.stderr.write(`nfkube: unknown command "${name}"${didYouMean(name, Object.keys(commands))} (see nfkube help)\n`);
    return 2;
  }
  const command = load();
  if (rest.includes('--help') || rest.includes('-h')) {
    process.stdout.write(`${command.usage}\n`);
    return 0;
  }
  const resources = new Resources(commands);
  let format: LogFormat = 'text';
  try {
    format = chooseLogFormat(givenLogFormat(rest), JSON_WHEN_PIPED.has(name) ? 'json' : 'text');
    setLogFormat(format);
    return await command.run(rest, resources);
  } catch (err) {
    reportFatal(name, err, format);
    return 1;
  } finally {
    await resources.closeAll(CLOSE_LIMIT_MS);
  }
}

/** Runs `nfkube ARGV` as the process: sets the exit code, and after a failure makes sure the
 * process ends promptly. */
export function cli(argv: string[]): void {
  // A reader that stopped reading (`nfkube explain ... | head`) ends the command quietly.
  process.stdout.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(0);
    throw err;
  });
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

/** --log-format's value among a command's arguments, before they are parsed. */
function givenLogFormat(args: string[]): string | undefined {
  const at = args.findIndex((a) => a === '--log-format' || a.startsWith('--log-format='));
  if (at < 0) return undefined;
  return args[at].includes('=') ? args[at].slice('--log-format='.length) : args[at + 1];
}

/** Programming errors keep their stack; every other failure is its message alone. */
const BUGS = [TypeError, RangeError, ReferenceError, SyntaxError];

function reportFatal(command: string, err: unknown, format: LogFormat): void {
  const message = fatalMessage(err);
  const bug = BUGS.some((t) => err instanceof t);
  if (format === 'text') {
    process.stderr.write(`nfkube ${command}: ${message}\n${bug ? `${(err as Error).stack}\n` : ''}`);
    return;
  }
  const code = (err as { code?: unknown } | undefined)?.code;
  // Whatever --log-level says: a fatal error is always reported.
  // pino is loaded only here and by the commands that log: `--version` and `--help` stay fast.
  (require('../log') as typeof import('../log')).createLogger('error').error({ command, ...(typeof code === 'string' ? { code } : {}), ...(bug ? { err } : {}), ...(err instanceof UsageError ? { usage: true } : {}) }, message);
}

class Resources implements RunContext {
  private readonly closers: (() => unknown)[] = [];

  constructor(readonly commands: Readonly<Record<string, () => Command>>) {}

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
