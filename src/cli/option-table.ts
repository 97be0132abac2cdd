/** The shape of a command's options, below both the parser (options.ts) and the config file
 * (config.ts), which each read it. */
/** One command-line option: how it parses and how `--help` describes it. */
export interface OptionInfo {
  type: 'string' | 'boolean';
  /** What the option does, one line. */
  description: string;
  /** The placeholder for a string option's value in `--help` (e.g. DIR). */
  value?: string;
  /** The default in words, as `--help` prints it; absent for options that are off by default. */
  default?: string;
  /** A one-letter alias (`-o` for --output). */
  short?: string;
}

export type OptionTable = Record<string, OptionInfo>;
