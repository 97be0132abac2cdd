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
  /** Returns the process exit code. */
  run(args: string[]): Promise<number>;
}
