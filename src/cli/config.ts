/** One configuration for every command, from the same option tables as the flags. Precedence:
 * flags > NFKUBE_* environment variables > the --config file > the defaults. The file is YAML,
 * versioned as kube-proxy's KubeProxyConfiguration is:
 *
 *   apiVersion: nfkube.io/v1alpha1
 *   kind: NfkubeConfiguration
 *   denyAction: reject      # --deny-action: each field is an option's name in camelCase
 *   logDrops: true
 *
 * A field no command knows is an error naming it; a field another command knows is left to it. */
import { readFileSync } from 'node:fs';
import { UsageError, didYouMean } from './usage-error';
import type { OptionInfo, OptionTable } from './option-table';

export const CONFIG_API_VERSION = 'nfkube.io/v1alpha1';
export const CONFIG_KIND = 'NfkubeConfiguration';
export const CONFIG_ENV = 'NFKUBE_CONFIG';

export const CONFIG_OPTION: OptionInfo = {
  type: 'string',
  value: 'FILE',
  description: `read options from a ${CONFIG_KIND} YAML file (apiVersion: ${CONFIG_API_VERSION}; fields are the options in camelCase); flags > NFKUBE_<OPTION> environment variables > file > defaults`,
  default: `$${CONFIG_ENV}`,
};

export type OptionValues = Record<string, string | boolean | undefined>;

/** --log-drops -> NFKUBE_LOG_DROPS */
export function envName(option: string): string {
  return `NFKUBE_${option.toUpperCase().replace(/-/g, '_')}`;
}

/** --deny-action -> denyAction */
export function fieldName(option: string): string {
  return option.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

function booleanText(text: string, where: string): boolean {
  if (/^(true|1|yes)$/i.test(text)) return true;
  if (/^(false|0|no|)$/i.test(text)) return false;
  throw new UsageError(`${where}: "${text}" is not true or false`);
}

/** The table's options set in `env`. A boolean set false is absent, as the flag not given. */
export function envValues(table: OptionTable, env: NodeJS.ProcessEnv): OptionValues {
  const out: OptionValues = {};
  for (const [name, o] of Object.entries(table)) {
    const text = env[envName(name)];
    if (text === undefined) continue;
    if (o.type === 'string') out[name] = text;
    else if (booleanText(text.trim(), envName(name))) out[name] = true;
  }
  return out;
}

/** The options a config file sets, by option name, checked against `known` (every command's
 * options): the file's own problems are errors naming the file and field. */
export function readConfigFile(path: string, known: OptionTable): OptionValues {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    throw new UsageError(`--config ${path}: ${(err as Error).message}`);
  }
  return parseConfig(text, path, known);
}

export function parseConfig(text: string, path: string, known: OptionTable): OptionValues {
  const { parse } = require('yaml') as typeof import('yaml');
  let doc: unknown;
  try {
    doc = parse(text, { uniqueKeys: true, prettyErrors: false });
  } catch (err) {
    throw new UsageError(`--config ${path}: not YAML: ${(err as Error).message.split('\n')[0]}`);
  }
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) throw new UsageError(`--config ${path}: expected a ${CONFIG_KIND} object`);
  const { apiVersion, kind, ...fields } = doc as Record<string, unknown>;
  if (apiVersion !== CONFIG_API_VERSION) throw new UsageError(`--config ${path}: apiVersion: ${JSON.stringify(apiVersion)} is not ${CONFIG_API_VERSION}`);
  if (kind !== CONFIG_KIND) throw new UsageError(`--config ${path}: kind: ${JSON.stringify(kind)} is not ${CONFIG_KIND}`);
  const byField = new Map(Object.entries(known).filter(([name]) => name !== 'config').map(([name, o]) => [fieldName(name), { name, o }]));
  const out: OptionValues = {};
  for (const [field, value] of Object.entries(fields)) {
    const option = byField.get(field);
    if (!option) throw new UsageError(`--config ${path}: unknown field "${field}"${didYouMean(field, byField.keys())}`);
    const where = `--config ${path}: ${field}`;
    if (option.o.type === 'boolean') {
      if (typeof value !== 'boolean') throw new UsageError(`${where}: ${JSON.stringify(value)} is not true or false`);
      if (value) out[option.name] = true;
    } else if (typeof value === 'string' || typeof value === 'number') out[option.name] = String(value);
    else if (Array.isArray(value) && value.every((x) => typeof x === 'string')) out[option.name] = value.join(',');
    else throw new UsageError(`${where}: ${JSON.stringify(value)} is not a string`);
  }
  return out;
}

/** Flags over environment over file, for the options of `table`. */
export function layered(flags: OptionValues, table: OptionTable, env: NodeJS.ProcessEnv, file: OptionValues): OptionValues {
  const out: OptionValues = {};
  const fromEnv = envValues(table, env);
  for (const name of Object.keys(table)) {
    const v = flags[name] ?? fromEnv[name] ?? file[name];
    if (v !== undefined) out[name] = v;
  }
  return out;
}
