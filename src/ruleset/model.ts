/** RulesetModel: the full content of one nftables table as plain data, keyed for cheap diffs.
 * The agent renders what it means into one, keeps another for what the kernel holds, and the
 * read-back of the kernel converts into the same shape. */
import { sameRuleBody } from '../nft/canonical';
import { sameTypeof } from '../nft/objects/set-udata';
import { NFT_SET_EVAL, NFT_SET_TIMEOUT, NFT_TABLE_F_DORMANT, NFT_TABLE_F_OWNER, NFT_TABLE_F_PERSIST } from '../nft/constants';
import { Chain, NftSet, Rule, SetElement, Table, TableContents } from '../nft/types';
import { typeText } from '../nft/values';

export interface ChainModel {
  chain: Chain;
  rules: Rule[];
}

export interface SetModel {
  set: NftSet;
  /** Elements by elementKey. */
  elements: Map<string, SetElement>;
}

export interface RulesetModel {
  table: Table;
  chains: Map<string, ChainModel>;
  sets: Map<string, SetModel>;
}

export function emptyModel(table: Table): RulesetModel {
  return { table, chains: new Map(), sets: new Map() };
}

/** Identity of an element within its set: key, and range end for intervals. Data (a map's value)
 * is not part of the identity. */
export function elementKey(e: SetElement): string {
  return e.keyEnd && !e.keyEnd.equals(e.key) ? `${hex(e.key)}-${hex(e.keyEnd)}` : hex(e.key);
}

const HEX_BYTES = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));

/** Lower-case hex of a key. Short keys (an IPv4 address, a port) are spelt in JavaScript: a
 * full sync spells one per element, and Buffer's toString is a call into C++ each time. Past 6
 * bytes a string joined in JavaScript is a tree of pieces (V8 joins 13 characters or more
 * lazily), which a model keeps for each of its keys (a hairpin element: 8 bytes): toString's is
 * one flat string. */
function hex(b: Buffer): string {
  if (b.length > 6) return b.toString('hex');
  let s = '';
  for (let i = 0; i < b.length; i++) s += HEX_BYTES[b[i]];
  return s;
}

/** Whether two elements map to the same value (map data or verdict). */
export function sameElementValue(a: SetElement, b: SetElement): boolean {
  if (a.verdict || b.verdict) return !!a.verdict && !!b.verdict && a.verdict.kind === b.verdict.kind && verdictChain(a) === verdictChain(b);
  if (a.data && b.data) return a.data.equals(b.data);
  return !a.data && !b.data;
}

function verdictChain(e: SetElement): string | undefined {
  return e.verdict && 'chain' in e.verdict ? e.verdict.chain : undefined;
}

export function elementMap(elements: SetElement[]): Map<string, SetElement> {
  return new Map(elements.map((e) => [elementKey(e), e]));
}

/** Whether two set definitions are the same (key and data types, flags, timeout). */
export function sameSetDefinition(a: NftSet, b: NftSet): boolean {
  return (
    a.key.length === b.key.length &&
    a.key.every((f, i) => f === b.key[i]) &&
    (a.data === undefined ? null : typeText(a.data)) === (b.data === undefined ? null : typeText(b.data)) &&
    (a.flags ?? 0) === (b.flags ?? 0) &&
    a.timeout === b.timeout &&
    sameTypeof(a.typeof, b.typeof) &&
    exprKinds(a) === exprKinds(b)
  );
}

/** The kinds of a set's per-element expressions: their state (a template counter's values) is
 * not part of the definition. */
function exprKinds(s: NftSet): string {
  return s.exprs?.map((e) => (e.type === 'opaque' ? e.name : e.type)).join(' ') ?? '';
}

/** Whether the packet path owns a set's elements: a dynamic set whose elements time out (session
 * affinity). A dynamic set without timeouts holds what the agent put there; rules only update
 * its elements' stateful expressions (per-address counters). */
export function packetOwnedElements(s: NftSet): boolean {
  const flags = s.flags ?? 0;
  return (flags & NFT_SET_EVAL) !== 0 && (flags & NFT_SET_TIMEOUT) !== 0;
}

/** Whether two chain definitions are the same (base chain hook, priority, policy, type). */
export function sameChainDefinition(a: Chain, b: Chain): boolean {
  if (!a.base || !b.base) return !a.base && !b.base;
  return a.base.hook === b.base.hook && a.base.priority === b.base.priority && a.base.type === b.base.type && a.base.policy === b.base.policy && a.base.device === b.base.device;
}

/** Rule lists equal in order, by canonical rule key. */
export function sameRules(a: Rule[], b: Rule[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (!sameRuleBody(a[i], b[i])) return false;
  return true;
}

/** Why a table read back cannot enforce as it is, or undefined: table flags are not part of the
 * model, and a dormant table's base chains see no packets at all. Owner and persist are how the
 * agent holds its table (src/nft/ownership.ts), not a problem. */
export function tableFlagsProblem(t: Table): string | undefined {
  const flags = (t.flags ?? 0) & ~(NFT_TABLE_F_OWNER | NFT_TABLE_F_PERSIST);
  if (flags === 0) return undefined;
  const names: string[] = [];
  if (flags & NFT_TABLE_F_DORMANT) names.push('dormant');
  const rest = flags & ~NFT_TABLE_F_DORMANT;
  if (rest) names.push(`0x${rest.toString(16)}`);
  return `table ${t.family} ${t.name} has flags ${names.join(', ')}`;
}

export function modelFromKernel(t: TableContents): RulesetModel {
  const m = emptyModel({ family: t.table.family, name: t.table.name });
  for (const c of t.chains) m.chains.set(c.name, { chain: stripChain(c), rules: [] });
  for (const r of t.rules) m.chains.get(r.chain)?.rules.push(r);
  for (const s of t.sets) m.sets.set(s.name, { set: stripSet(s), elements: elementMap(t.elements.get(s.name) ?? []) });
  return m;
}

function stripChain(c: Chain): Chain {
  const out: Chain = { family: c.family, table: c.table, name: c.name };
  if (c.base) out.base = c.base;
  return out;
}

function stripSet(s: NftSet): NftSet {
  const out: NftSet = { family: s.family, table: s.table, name: s.name, key: s.key, flags: s.flags ?? 0 };
  if (s.data) out.data = s.data;
  if (s.timeout !== undefined) out.timeout = s.timeout;
  if (s.typeof) out.typeof = s.typeof;
  if (s.exprs) out.exprs = s.exprs;
  return out;
}

export function countElements(m: RulesetModel): number {
  let n = 0;
  for (const s of m.sets.values()) n += s.elements.size;
  return n;
}

export function countRules(m: RulesetModel): number {
  let n = 0;
  for (const c of m.chains.values()) n += c.rules.length;
  return n;
}

/** The model in read-back form, for the nft-syntax formatter. */
export function modelToContents(m: RulesetModel): TableContents {
  const chains = [...m.chains.values()];
  return {
    table: m.table,
    chains: chains.map((c) => c.chain),
    rules: chains.flatMap((c) => c.rules),
    sets: [...m.sets.values()].map((s) => s.set),
    elements: new Map([...m.sets].map(([k, s]) => [k, [...s.elements.values()]])),
  };
}
