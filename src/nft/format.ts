/** nft(8) syntax for nfkube's objects: what `nft list` would print, for dry runs, logs and diffs.
 * Rules are printed expression by expression (see ./print); sets, elements and tables here. */
import * as C from './constants';
import { formatValue, formatVerdict, printRuleBody } from './print';
import { NftSet, NftTypeName, Rule, SetElement, TableContents, Chain } from './types';
import { TYPE_LEN, typeText } from './values';

/** A rule's expressions in nft syntax. */
export const formatRuleBody = printRuleBody;

export function formatRule(r: Rule): string {
  const body = printRuleBody(r.exprs);
  const comment = r.comment !== undefined ? ` comment "${r.comment}"` : '';
  const handle = r.handle !== undefined ? ` # handle ${r.handle}` : '';
  return `${body}${comment}${handle}`;
}

function formatKey(set: Pick<NftSet, 'key' | 'flags'>, key: Buffer): string {
  // nft sends the keys of an interval set in network byte order (the kernel orders them with
  // memcmp) and lists them so, numgen results included.
  if (set.key.length === 1 && set.key[0] === 'integer' && key.length === 4 && (set.flags ?? 0) & C.NFT_SET_INTERVAL) return String(key.readUInt32BE(0));
  if (set.key.length === 1) return formatValue(key, set.key[0]);
  return formatFields(key, set.key);
}

/** A concatenation's fields, each padded to 4 bytes; with `end`, a range as nft writes it: each
 * field's own range, `tcp . 8000-8100`. */
function formatFields(b: Buffer, fields: readonly NftTypeName[], end?: Buffer): string {
  const parts: string[] = [];
  let pos = 0;
  for (const f of fields) {
    const from = b.subarray(pos, pos + TYPE_LEN[f]);
    const to = end?.subarray(pos, pos + TYPE_LEN[f]);
    parts.push(to === undefined || from.equals(to) ? formatValue(from, f) : `${formatValue(from, f)}-${formatValue(to, f)}`);
    pos += (TYPE_LEN[f] + 3) & ~3;
  }
  return parts.join(' . ');
}

export function formatElement(set: Pick<NftSet, 'key' | 'data' | 'flags'>, e: SetElement): string {
  const range = e.keyEnd && !e.keyEnd.equals(e.key) ? e.keyEnd : undefined;
  let s = range && set.key.length > 1 ? formatFields(e.key, set.key, range) : formatKey(set, e.key);
  if (range && set.key.length === 1) s += `-${formatKey(set, range)}`;
  if (e.verdict) s += ` : ${formatVerdict(e.verdict)}`;
  else if (e.data && set.data) s += ` : ${typeof set.data === 'string' ? formatValue(e.data, set.data) : formatFields(e.data, set.data)}`;
  // As nft lists an element's own counter (read back; a rendered element has none).
  for (const x of e.exprs ?? []) if (x.type === 'counter') s += ` counter packets ${x.packets} bytes ${x.bytes}`;
  return s;
}

/** `type ipv4_addr . inet_service : verdict`, or the set's own `typeof` when it has one; nft
 * refuses a bare `integer` key, which nfkube uses only for maps looked up with a numgen result,
 * so an untyped one is written as that expression's type. */
export function setType(s: NftSet): string {
  const data = s.data ? ` : ${typeText(s.data)}` : '';
  if (s.typeof) return `typeof ${s.typeof.key}${s.typeof.data !== undefined ? ` : ${s.typeof.data}` : data}`;
  if (s.key.length === 1 && s.key[0] === 'integer') return `typeof numgen random mod 1${data}`;
  return `type ${s.key.join(' . ')}${data}`;
}

export function setFlagNames(s: NftSet): string[] {
  const names: string[] = [];
  const flags = s.flags ?? 0;
  if (flags & C.NFT_SET_CONSTANT) names.push('constant');
  if (flags & C.NFT_SET_INTERVAL) names.push('interval');
  if (flags & C.NFT_SET_TIMEOUT) names.push('timeout');
  if (flags & C.NFT_SET_EVAL) names.push('dynamic');
  return names;
}

export function formatSet(s: NftSet, elements?: SetElement[], indent = '\t'): string {
  const kind = s.data ? 'map' : 'set';
  const lines = [`${kind} ${s.name} {`, `\t${setType(s)}`];
  const flags = setFlagNames(s);
  if (flags.length) lines.push(`\tflags ${flags.join(',')}`);
  if (s.timeout) lines.push(`\ttimeout ${s.timeout % 1000n === 0n ? `${s.timeout / 1000n}s` : `${s.timeout}ms`}`);
  if (s.exprs?.some((e) => e.type === 'counter')) lines.push('\tcounter');
  if (elements?.length) lines.push(`\telements = { ${elements.map((e) => formatElement(s, e)).join(',\n\t\t     ')} }`);
  lines.push('}');
  return lines.map((l) => indent + l).join('\n');
}

function formatChainHeader(c: Chain): string {
  if (!c.base) return '';
  const b = c.base;
  return `\t\ttype ${b.type} hook ${b.hook}${b.device ? ` device "${b.device}"` : ''} priority ${b.priority}; policy ${b.policy};\n`;
}

export function formatTable(t: TableContents): string {
  const parts: string[] = [];
  for (const s of t.sets) parts.push(formatSet(s, t.elements.get(s.name)));
  for (const c of t.chains) {
    const rules = t.rules.filter((r) => r.chain === c.name).map((r) => `\t\t${formatRule(r)}\n`);
    parts.push(`\tchain ${c.name} {\n${formatChainHeader(c)}${rules.join('')}\t}`);
  }
  const comment = t.table.comment !== undefined ? `\tcomment "${t.table.comment}"\n${parts.length ? '\n' : ''}` : '';
  return `table ${t.table.family} ${t.table.name} {\n${comment}${parts.join('\n\n')}\n}\n`;
}
