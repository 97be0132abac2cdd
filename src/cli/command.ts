/** The shape every `nfkube <command>` module exports. */
export interface Command {
  /** One line for `nfkube help`. */
  summary: string;
  usage: string;
  /** Returns the process exit code. A thrown error is fatal: the runner reports it, closes what
   * the command registered with `ctx.defer` and exits non-zero. */
  run(args: string[], ctx: RunContext): Promise<number>;
}

export interface RunContext {
  /** Registers a resource to close when the command ends, however it ends; the last registered
   * is closed first. */
  defer(close: () => unknown): void;
}
