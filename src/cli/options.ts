/** Option parsing shared by the commands: node:util parseArgs plus the value checks. Each
 * command declares its options once, as an OptionTable; parsing and `--help` both come from it. */
import { parseArgs } from 'node:util';
import { CONFIG_ENV, CONFIG_OPTION, layered, OptionValues, readConfigFile } from './config';
import type { OptionInfo, OptionTable, ValuesOf } from '../options/table';
import { didYouMean, UsageError } from '../options/usage-error';
import { stringOption } from '../options/values';
import { DENY_OPTIONS, POLICY_TABLE_OPTIONS } from '../policy/options';

export type { OptionInfo, OptionTable, ValuesOf } from '../options/table';
export { denyAction, nodeName, parseByteSize, parseDuration, tableName } from '../options/values';

/** Every option of every command, for the --config file (one file configures them all): the
 * command registry, which loads the commands and so sits above this module, supplies it. */
let everyOption: () => OptionTable = () => ({});

export function knowEveryOption(all: () => OptionTable): void {
  everyOption = all;
}

export function parse<T extends OptionTable>(args: string[], table: T, usage: string): ValuesOf<T> {
  return parseWithPositionals(args, table, usage, false).values;
}

/** parse, for commands that also take operands (`explain SRC DST`). Options the flags leave out
 * come from NFKUBE_* environment variables, then from the --config file (config.ts). */
export function parseWithPositionals<T extends OptionTable>(args: string[], table: T, usage: string, allowPositionals = true, env: NodeJS.ProcessEnv = process.env): { values: ValuesOf<T>; positionals: string[] } {
  const full: OptionTable = { ...table, ...GLOBAL_OPTIONS };
  // Only the type: a described default is words for --help, not a value.
  const options = Object.fromEntries(Object.entries(full).map(([name, o]) => [name, { type: o.type, ...(o.short ? { short: o.short } : {}) }]));
  let r;
  try {
    r = parseArgs({ args, options, allowPositionals, strict: true });
  } catch (err) {
    throw usageProblem((err as Error).message, full, usage);
  }
  const flags = r.values as OptionValues;
  const configPath = stringOption(flags, 'config') ?? (env[CONFIG_ENV] || undefined);
  const file = configPath ? readConfigFile(configPath, { ...everyOption(), ...table }) : {};
  // parseArgs, the environment and the config file each give a value of its option's type.
  return { values: layered(flags, table, env, file) as ValuesOf<T>, positionals: r.positionals };
}

/** parseArgs' complaint as one line naming the command, with the option meant when it is a typo. */
function usageProblem(message: string, table: OptionTable, usage: string): UsageError {
  const command = /^usage: (nfkube \S+)/.exec(usage)?.[1] ?? 'nfkube';
  const unknown = /^Unknown option '([^']+)'/.exec(message);
  const text = unknown
    ? `unknown option "${unknown[1]}"${didYouMean(unknown[1].replace(/^-+/, '').split('=')[0], Object.keys(table), (k) => `--${k}`)}`
    : message.split('\n')[0].replace(/\. To specify a positional argument.*$/, '');
  return new UsageError(`${text} (see ${command} --help)`);
}

/** `--help` text: the synopsis, an optional paragraph, then every option with its description
 * and default, aligned. */
export function usageText(synopsis: string, table: OptionTable, about?: string): string {
  table = { ...table, ...GLOBAL_OPTIONS };
  const heads = Object.entries(table).map(([name, o]) => `  ${o.short ? `-${o.short}, ` : ''}--${name}${o.type === 'string' ? ` ${o.value ?? 'VALUE'}` : ''}`);
  const width = Math.max(0, ...heads.map((h) => h.length)) + 2;
  const lines = Object.values(table).map((o, i) => `${heads[i].padEnd(width)}${o.description}${o.default !== undefined ? ` (default: ${o.default})` : ''}`);
  return [`usage: ${synopsis}`, ...(about ? ['', about] : []), ...(lines.length ? ['', 'options:', ...lines] : [])].join('\n');
}

/** Options every command takes (main.ts reads --log-format before the command runs). */
export const GLOBAL_OPTIONS = {
  'log-format': { type: 'string', value: 'json|text', description: 'how logs and errors are written on stderr: JSON lines, or one readable line each', default: 'text on a terminal, else json for agent, render, verify, cleanup and ipam' },
  config: CONFIG_OPTION,
} as const satisfies OptionTable;

/** -o text|json of the operator commands (status, drops). */
export const OUTPUT_OPTION = { type: 'string', short: 'o', value: 'text|json', description: 'print for people, or JSON (drops: one object a line)', default: 'text' } as const satisfies OptionInfo;

export function outputFormat(v: string | undefined): 'text' | 'json' {
  const o = v ?? 'text';
  if (o !== 'text' && o !== 'json') throw new UsageError(`--output: "${o}" is not text or json`);
  return o;
}

/** Options several commands share, described once. */
export const COMMON_OPTIONS = {
  manifests: { type: 'string', value: 'DIR', description: 'read Namespaces, Pods and NetworkPolicies from this directory of manifests instead of an API server' },
  'manifests-max-bytes': { type: 'string', value: 'SIZE', description: 'the most bytes the --manifests files may hold together; a file that would cross it is not read, named in an error', default: '64Mi' },
  kubeconfig: { type: 'string', value: 'PATH', description: 'kubeconfig of the API server to watch', default: 'in-cluster configuration' },
  'node-name': { type: 'string', value: 'NAME', description: 'enforce for the pods of this node', default: '$NODE_NAME, else the hostname' },
  ...POLICY_TABLE_OPTIONS,
  'log-level': { type: 'string', value: 'LEVEL', description: 'fatal, error, warn, info, debug, trace or silent', default: 'info' },
} as const satisfies OptionTable;

/** The options of the commands that read the cluster and the policy table (agent, verify,
 * explain, status): every one that shapes the table, so they all render it alike. */
export const SOURCE_OPTIONS = { ...COMMON_OPTIONS, ...DENY_OPTIONS };
