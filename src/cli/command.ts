/** The shape every `nfkube <command>` module exports. */
export interface Command {
  /** One line for `nfkube help`. */
  summary: string;
  usage: string;
  /** Returns the process exit code. */
  run(args: string[]): Promise<number>;
}
