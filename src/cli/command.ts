/** The shape every `nfkube <command>` module exports. */
import type { OptionTable } from './options';

export interface Command {
  /** One line for `nfkube help`. */
  summary: string;
  /** `--help` text; generated from `options` by usageText. */
  usage: string;
  /** Every flag the command accepts, with description and default (test/cli/identity.test.ts
   * requires it of every command). */
  options?: OptionTable;
  /** Returns the process exit code. A thrown error is fatal: the runner reports it, closes what
   * the command registered with `ctx.defer` and exits non-zero. */
  run(args: string[], ctx: RunContext): Promise<number>;
}

export interface RunContext {
  /** Registers a resource to close when the command ends, however it ends; the last registered
   * is closed first. */
  defer(close: () => unknown): void;
  /** Every command by name (registry.ts, which loads this module's users), for the commands
   * that describe the others: completion. */
  readonly commands: Readonly<Record<string, () => Command>>;
}
