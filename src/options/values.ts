/** The value checks the option tables share: each names the flag in its error. */
import { hostname } from 'node:os';
import { parseCidr } from '../net/ip';
import type { OptionValues } from './table';

/** A string option from values typed by no one table (the agent's, a table record): a value of
 * the other type means a table and its reader disagree, so it fails rather than guessing. */
export function stringOption(values: OptionValues, name: string): string | undefined {
  const v = values[name];
  if (v !== undefined && typeof v !== 'string') throw new Error(`--${name}: expected a value, got ${String(v)}`);
  return v;
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

/** What happens to traffic no policy allows: --deny-action. */
export type DenyAction = 'drop' | 'reject';

export function denyAction(v: string | undefined): DenyAction {
  const a = v ?? 'drop';
  if (a !== 'drop' && a !== 'reject') throw new Error(`--deny-action: "${a}" is not drop or reject`);
  return a;
}

export function nodeName(v: string | undefined): string {
  return v ?? process.env.NODE_NAME ?? hostname();
}

export function tableName(v: string | undefined): string {
  const t = v ?? 'nfkube';
  if (!/^[A-Za-z_][A-Za-z0-9_.-]{0,63}$/.test(t)) throw new Error(`--table: "${t}" is not a valid table name`);
  return t;
}

/** A comma-separated list of CIDRs, at least one. */
export function cidrList(text: string, flag: string): string[] {
  const list = text.split(',').map((s) => s.trim()).filter(Boolean);
  if (list.length === 0) throw new Error(`${flag}: no CIDR given`);
  for (const c of list) if (!parseCidr(c)) throw new Error(`${flag}: "${c}" is not a CIDR`);
  return list;
}

/** A whole number from `min` to `max`; `def` when the option is absent. */
export function boundedInteger(v: string | boolean | undefined, flag: string, def: number, min: number, max: number): number {
  if (v === undefined) return def;
  const n = Number(v);
  if (typeof v !== 'string' || !/^\d+$/.test(v) || n < min || n > max) throw new Error(`${flag}: "${v}" is not an integer from ${min} to ${max}`);
  return n;
}
