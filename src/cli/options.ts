/** Option parsing shared by the commands: node:util parseArgs plus the value checks. Each
 * command declares its options once, as an OptionTable; parsing and `--help` both come from it. */
import { hostname } from 'node:os';
import { parseArgs } from 'node:util';
import { CONFIG_ENV, CONFIG_OPTION, layered, OptionValues, readConfigFile } from './config';
import type { OptionInfo, OptionTable } from './option-table';
import { didYouMean, UsageError } from './usage-error';
import type { DenyAction } from '../policy/modes';

export type { OptionInfo, OptionTable } from './option-table';

/** Every option of every command, for the --config file (one file configures them all): the
 * command registry, which loads the commands and so sits above this module, supplies it. */
let everyOption: () => OptionTable = () => ({});

export function knowEveryOption(all: () => OptionTable): void {
  everyOption = all;
}

export function parse(args: string[], table: OptionTable, usage: string): OptionValues {
  return parseWithPositionals(args, table, usage, false).values;
}

/** parse, for commands that also take operands (`explain SRC DST`). Options the flags leave out
 * come from NFKUBE_* environment variables, then from the --config file (config.ts). */
export function parseWithPositionals(args: string[], table: OptionTable, usage: string, allowPositionals = true, env: NodeJS.ProcessEnv = process.env): { values: OptionValues; positionals: string[] } {
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
  const configPath = (flags.config as string | undefined) ?? (env[CONFIG_ENV] || undefined);
  const file = configPath ? readConfigFile(configPath, { ...everyOption(), ...table }) : {};
  return { values: layered(flags, table, env, file), positionals: r.positionals };
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

/** "300ms", "30s", "5m", "1h" -> milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text);
  if (!m) throw new Error(`${flag}: "${text}" is not a duration like 30s, 5m or 1h`);
  const n = Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  if (n <= 0) throw new Error(`${flag}: must be positive`);
  return n;
}

/** "67108864", "64Mi", "1Gi" -> bytes (binary suffixes, as Kubernetes quantities write them). */
export function parseByteSize(text: string, flag: string): number {
  const m = /^(\d+)(Ki|Mi|Gi)?$/.exec(text);
  if (!m) throw new Error(`${flag}: "${text}" is not a size like 67108864, 64Mi or 1Gi`);
  const unit = { Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3 }[m[2] as 'Ki' | 'Mi' | 'Gi'] ?? 1;
  const n = Number(m[1]) * unit;
  if (n <= 0 || !Number.isSafeInteger(n)) throw new Error(`${flag}: must be a positive size`);
  return n;
}

export function denyAction(v: string | boolean | undefined): DenyAction {
  const a = (v as string | undefined) ?? 'drop';
  if (a !== 'drop' && a !== 'reject') throw new Error(`--deny-action: "${a}" is not drop or reject`);
  return a;
}

export function nodeName(v: string | boolean | undefined): string {
  return (v as string | undefined) ?? process.env.NODE_NAME ?? hostname();
}

export function tableName(v: string | boolean | undefined): string {
  const t = (v as string | undefined) ?? 'nfkube';
  if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/.test(t)) throw new Error(`--table: "${t}" is not a valid table name`);
  return t;
}

/** Options every command takes (main.ts reads --log-format before the command runs). */
export const GLOBAL_OPTIONS: OptionTable = {
  'log-format': { type: 'string', value: 'json|text', description: 'how logs and errors are written on stderr: JSON lines, or one readable line each', default: 'text on a terminal, else json for agent, render, verify, cleanup and ipam' },
  config: CONFIG_OPTION,
};

/** -o text|json of the operator commands (status, drops). */
export const OUTPUT_OPTION: OptionInfo = { type: 'string', short: 'o', value: 'text|json', description: 'print for people, or JSON (drops: one object a line)', default: 'text' };

export function outputFormat(v: string | boolean | undefined): 'text' | 'json' {
  const o = (v as string | undefined) ?? 'text';
  if (o !== 'text' && o !== 'json') throw new UsageError(`--output: "${o}" is not text or json`);
  return o;
}

/** Options several commands share, described once. */
export const COMMON_OPTIONS = {
  manifests: { type: 'string', value: 'DIR', description: 'read Namespaces, Pods and NetworkPolicies from this directory of manifests instead of an API server' },
  'manifests-max-bytes': { type: 'string', value: 'SIZE', description: 'the most bytes the --manifests files may hold together; a file that would cross it is not read, named in an error', default: '64Mi' },
  kubeconfig: { type: 'string', value: 'PATH', description: 'kubeconfig of the API server to watch', default: 'in-cluster configuration' },
  'node-name': { type: 'string', value: 'NAME', description: 'enforce for the pods of this node', default: '$NODE_NAME, else the hostname' },
  table: { type: 'string', value: 'NAME', description: "name of nfkube's own nftables table (family inet)", default: 'nfkube' },
  'deny-action': { type: 'string', value: 'drop|reject', description: 'what happens to traffic no policy allows to or from an isolated pod', default: 'drop' },
  'log-level': { type: 'string', value: 'LEVEL', description: 'fatal, error, warn, info, debug, trace or silent', default: 'info' },
} as const satisfies OptionTable;
