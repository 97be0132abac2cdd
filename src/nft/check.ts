/** Checks a transaction before it is sent, for mistakes the kernel would accept or refuse
 * without saying why: element keys and data whose length does not fit their set's types, and
 * address matches whose family is not the set's (`ip6 saddr @v4set` commits, and never matches).
 * After a refusal (ENOENT, EINVAL), names the reference that does not exist by resolving the
 * failing operation's table, chain, sets and jump targets against the transaction and the
 * kernel. */
import { formatElement } from './format';
import { operationReferences } from './objects';
import { Chain, Expr, Family, NftSet, NftTypeName, Operation, SetElement, Table } from './types';
import { dataLength, keyLength, typeText } from './values';

/** A value that does not fit the set it is meant for. Nothing was sent. */
export class SetTypeError extends Error {
  constructor(
    /** `inet demo peers` */
    readonly set: string,
    /** The element (or the rule's match, e.g. `ip6 saddr`) that does not fit. */
    readonly element: string,
    /** The set's type, e.g. `ipv4_addr` or `ipv4_addr . inet_service`. */
    readonly setType: string,
    /** The value's type or size, e.g. `ipv6_addr` or `16 bytes`. */
    readonly valueType: string,
    detail?: string,
  ) {
    super(`set ${set}: ${element} is ${valueType}, but the set's ${detail ?? 'key'} type is ${setType}`);
    this.name = 'SetTypeError';
  }
}

const setName = (s: NftSet) => `${s.family} ${s.table} ${s.name}`;

/** What a byte length most likely holds, for messages. */
function sizeName(n: number): string {
  const guess = ({ 4: 'ipv4_addr', 16: 'ipv6_addr', 6: 'ether_addr', 2: 'inet_service', 1: 'inet_proto' } as Record<number, string>)[n];
  return `${n} bytes${guess ? ` (${guess}?)` : ''}`;
}

function describeElement(set: NftSet, e: SetElement): string {
  try {
    return `element ${formatElement({ key: set.key }, { key: e.key, keyEnd: e.keyEnd })}`;
  } catch {
    return `element 0x${e.key.toString('hex')}`;
  }
}

/** Each element's key (and range end) is as long as the set's key type, and a map's elements
 * carry data of its data type. */
export function checkElements(set: NftSet, elements: SetElement[], removing = false): void {
  const klen = keyLength(set.key);
  const keyType = set.key.join(' . ');
  const dataLen = set.data && set.data !== 'verdict' ? dataLength(set.data) : 0;
  // Runs over every element of every batch: no allocation on the path where all is well.
  for (let i = 0; i < elements.length; i++) {
    const e = elements[i];
    const bad = e.key.length !== klen ? e.key : e.keyEnd !== undefined && e.keyEnd.length !== klen ? e.keyEnd : undefined;
    if (bad) throw new SetTypeError(setName(set), `element 0x${e.key.toString('hex')}`, `${keyType} (${klen} bytes)`, sizeName(bad.length));
    if (removing) continue;
    if (!set.data) {
      if (e.data || e.verdict) throw new SetTypeError(setName(set), describeElement(set, e), 'none (a set, not a map)', e.verdict ? 'a verdict' : sizeName(e.data!.length), 'data');
    } else if (set.data === 'verdict') {
      if (!e.verdict) throw new SetTypeError(setName(set), describeElement(set, e), 'verdict', e.data ? sizeName(e.data.length) : 'missing', 'data');
    } else if (!e.data || e.data.length !== dataLen) {
      throw new SetTypeError(setName(set), describeElement(set, e), `${typeText(set.data)} (${dataLen} bytes)`, e.data ? sizeName(e.data.length) : 'missing', 'data');
    }
  }
}

/** Network-header loads whose type is known: the address matches nft writes. */
const ADDRESS_LOADS: { offset: number; len: number; name: string; type: NftTypeName }[] = [
  { offset: 12, len: 4, name: 'ip saddr', type: 'ipv4_addr' },
  { offset: 16, len: 4, name: 'ip daddr', type: 'ipv4_addr' },
  { offset: 8, len: 16, name: 'ip6 saddr', type: 'ipv6_addr' },
  { offset: 24, len: 16, name: 'ip6 daddr', type: 'ipv6_addr' },
];
const ADDRESS_TYPES = new Set<NftTypeName>(['ipv4_addr', 'ipv6_addr']);

function addressLoad(offset: number, len: number): (typeof ADDRESS_LOADS)[number] | undefined {
  for (const a of ADDRESS_LOADS) if (a.offset === offset && a.len === len) return a;
  return undefined;
}

/** An address loaded into a register and then looked up in a set whose (first) key field is an
 * address of the other family. */
export function checkRuleLookups(exprs: Expr[], setOf: (name: string) => NftSet | undefined): void {
  // Most rules of a batch look nothing up: they need no register tracking at all.
  let lookups = false;
  for (let i = 0; i < exprs.length && !lookups; i++) lookups = exprs[i].type === 'lookup';
  if (!lookups) return;
  const loaded = new Map<number, (typeof ADDRESS_LOADS)[number]>();
  for (const e of exprs) {
    if (e.type === 'payload' && e.dreg !== undefined) {
      const known = e.base === 'network' ? addressLoad(e.offset, e.len) : undefined;
      if (known) loaded.set(e.dreg, known);
      else loaded.delete(e.dreg);
    } else if (e.type === 'lookup') {
      const src = loaded.get(e.sreg);
      const set = setOf(e.set);
      if (src && set && ADDRESS_TYPES.has(set.key[0]) && set.key[0] !== src.type) {
        throw new SetTypeError(setName(set), src.name, set.key.join(' . '), src.type);
      }
    } else if ('dreg' in e && typeof e.dreg === 'number') {
      loaded.delete(e.dreg);
    }
  }
}

const key3 = (family: Family, table: string, name: string) => `${family} ${table} ${name}`;

/** Runs both checks over a transaction; sets are resolved among those it adds, then among
 * `known` (e.g. the kernel's, see kernelSetsReferenced). */
export function checkTransaction(operations: readonly Operation[], known: readonly NftSet[] = []): void {
  // Sets by table (`family table`), then by name: a rule resolves its lookups in its own table.
  const sets = new Map<string, Map<string, NftSet>>();
  const put = (s: NftSet) => {
    const table = `${s.family} ${s.table}`;
    let byName = sets.get(table);
    if (!byName) sets.set(table, (byName = new Map()));
    byName.set(s.name, s);
  };
  known.forEach(put);
  let table = '';
  let byName: Map<string, NftSet> | undefined;
  const setOf = (name: string) => byName?.get(name);
  for (const op of operations) {
    if (op.kind === 'set' && (op.verb === 'add' || op.verb === 'create')) put(op.set);
    else if (op.kind === 'element') checkElements(op.set, op.elements, op.verb === 'delete' || op.verb === 'destroy');
    else if (op.kind === 'rule' && op.verb !== 'delete' && op.verb !== 'destroy') {
      const r = op.rule;
      const t = `${r.family} ${r.table}`;
      if (t !== table || !byName) {
        table = t;
        byName = sets.get(t);
      }
      checkRuleLookups(r.exprs, setOf);
    }
  }
}

/** What the checks read of the store a transaction goes to (a TableStore is one). */
export interface ReferenceReader {
  listTables(family?: Family): Promise<Table[]>;
  listChains(family: Family, table: string): Promise<Chain[]>;
  listSets(family: Family, table: string): Promise<NftSet[]>;
}

/** The definitions, read from the store, of the sets the transaction's rules look up without
 * adding them: one set dump per table concerned, only when some rule looks an address up. */
export async function kernelSetsReferenced(reader: ReferenceReader, operations: readonly Operation[]): Promise<NftSet[]> {
  const added = new Set<string>();
  const tables = new Map<string, { family: Family; table: string }>();
  for (const op of operations) {
    if (op.kind === 'set' && (op.verb === 'add' || op.verb === 'create')) added.add(key3(op.set.family, op.set.table, op.set.name));
    if (op.kind !== 'rule' || op.verb === 'delete' || op.verb === 'destroy') continue;
    const r = op.rule;
    const loadsAddress = r.exprs.some((e) => e.type === 'payload' && e.base === 'network' && ADDRESS_LOADS.some((a) => a.offset === e.offset && a.len === e.len));
    if (!loadsAddress) continue;
    for (const e of r.exprs) {
      if (e.type === 'lookup' && !added.has(key3(r.family, r.table, e.set))) tables.set(`${r.family} ${r.table}`, { family: r.family, table: r.table });
    }
  }
  const out: NftSet[] = [];
  for (const t of tables.values()) {
    try {
      out.push(...(await reader.listSets(t.family, t.table)));
    } catch {
      // A table that does not exist yet has no sets to check against.
    }
  }
  return out;
}

/** The first object operation `index` refers to that neither exists in the store nor is
 * created earlier in the transaction, described in words; undefined when all exist (or the
 * store cannot be read). The batch failed, so the store still holds the state before it. */
export async function findMissingReference(reader: ReferenceReader, operations: readonly Operation[], index: number): Promise<string | undefined> {
  const refs = operationReferences(operations[index]);
  if (refs.length === 0) return undefined;
  const exists = new Map<string, boolean>();
  const id = (kind: string, family: Family, table: string, name: string) => `${kind} ${family} ${table} ${name}`;
  try {
    for (const family of new Set(refs.map((r) => r.family))) {
      for (const table of await reader.listTables(family)) {
        exists.set(id('table', family, table.name, table.name), true);
        if (!refs.some((r) => r.table === table.name && r.kind !== 'table')) continue;
        for (const c of await reader.listChains(family, table.name)) exists.set(id('chain', family, table.name, c.name), true);
        for (const s of await reader.listSets(family, table.name)) exists.set(id('set', family, table.name, s.name), true);
      }
    }
  } catch {
    return undefined;
  }
  // Replay what the transaction did before the failing operation.
  for (const op of operations.slice(0, index)) {
    const created = op.verb === 'add' || op.verb === 'create';
    const removed = op.verb === 'delete' || op.verb === 'destroy';
    if (!created && !removed) continue;
    if (op.kind === 'table') exists.set(id('table', op.table.family, op.table.name, op.table.name), created);
    else if (op.kind === 'chain') exists.set(id('chain', op.chain.family, op.chain.table, op.chain.name), created);
    else if (op.kind === 'set') exists.set(id('set', op.set.family, op.set.table, op.set.name), created);
    if (op.kind === 'table' && removed) {
      for (const k of exists.keys()) if (k.startsWith(`chain ${op.table.family} ${op.table.name} `) || k.startsWith(`set ${op.table.family} ${op.table.name} `)) exists.set(k, false);
    }
  }
  for (const r of refs) {
    if (exists.get(id(r.kind, r.family, r.table, r.name))) continue;
    const where = r.kind === 'table' ? `table ${r.family} ${r.name}` : `${r.kind} ${r.name} in table ${r.family} ${r.table}`;
    return `${where} (${r.role}) does not exist, and the transaction does not create it before this operation`;
  }
  return undefined;
}
