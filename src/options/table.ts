/** The shape of a command's options: below the parser and the config file (src/cli), and below
 * the features (src/policy, src/proxy, src/ipam), which each declare their own. */
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

/** Parsed option values by name: flags, NFKUBE_* variables and the --config file, layered. */
export type OptionValues = Record<string, string | boolean | undefined>;

/** What an option of this kind parses to; a table whose types are not literal gives the union. */
interface ValueOfType {
  string: string;
  boolean: boolean;
}

/** Parsed values typed from their table (declared `as const satisfies OptionTable`). */
export type ValuesOf<T extends OptionTable> = { [K in keyof T]?: ValueOfType[T[K]['type']] };
