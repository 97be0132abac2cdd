/** Option parsing shared by the commands: node:util parseArgs plus the value checks. */
import { hostname } from 'node:os';
import { parseArgs, ParseArgsConfig } from 'node:util';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

export function parse(args: string[], options: OptionSpec, usage: string): Record<string, string | boolean | undefined> {
  try {
    return parseArgs({ args, options, allowPositionals: false, strict: true }).values as Record<string, string | boolean | undefined>;
  } catch (err) {
    throw new Error(`${(err as Error).message}\n${usage}`);
  }
}

/** "300ms", "30s", "5m", "1h" -> milliseconds. */
export function parseDuration(text: string, flag: string): number {
  const m = /^(\d+(?:\.\d+)?)(ms|s|m|h)$/.exec(text);
  if (!m) throw new Error(`${flag}: "${text}" is not a duration like 30s, 5m or 1h`);
  const n = Number(m[1]) * { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[m[2] as 'ms' | 's' | 'm' | 'h'];
  if (n <= 0) throw new Error(`${flag}: must be positive`);
  return n;
}

export function denyAction(v: string | boolean | undefined): 'drop' | 'reject' {
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
