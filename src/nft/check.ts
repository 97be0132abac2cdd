/** Checks a transaction before it is sent, for mistakes the kernel would accept or refuse
 * without saying why (values that do not fit their set, see set-fit.ts): each operation's codec
 * says what it defines and what it checks, this walks the transaction. After a refusal (ENOENT,
 * EINVAL), names the reference that does not exist by resolving the failing operation's table,
 * chain, sets and jump targets against the transaction and the kernel. */
import { checkOperation, ObjectName, operationDefinition, operationReferences, setsCheckedBy } from './objects';
import { Chain, Family, NftSet, Operation, Table } from './types';

export { checkElements, checkRuleLookups, SetTypeError } from './set-fit';

/** An object's key among its table's: `inet nfkube set peers`. */
const objectId = (o: ObjectName) => `${o.family} ${o.table} ${o.kind} ${o.name}`;

/** Checks each operation's values against their sets; sets are resolved among those the
 * transaction adds before the operation, then among `known` (e.g. the kernel's, see
 * kernelSetsReferenced). */
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
  const setOf = (family: Family, table: string, name: string) => sets.get(`${family} ${table}`)?.get(name);
  for (const op of operations) {
    const declared = operationDefinition(op)?.set;
    if (declared) put(declared);
    checkOperation(op, setOf);
  }
}

/** What the checks read of the store a transaction goes to (a TableStore is one). */
export interface ReferenceReader {
  listTables(family?: Family): Promise<Table[]>;
  listChains(family: Family, table: string): Promise<Chain[]>;
  listSets(family: Family, table: string): Promise<NftSet[]>;
}

/** The definitions, read from the store, of the sets the transaction's checks resolve without
 * the transaction adding them: one set dump per table concerned, only when some rule looks an
 * address up. */
export async function kernelSetsReferenced(reader: ReferenceReader, operations: readonly Operation[]): Promise<NftSet[]> {
  const added = new Set<string>();
  const tables = new Map<string, { family: Family; table: string }>();
  for (const op of operations) {
    const declared = operationDefinition(op);
    if (declared?.set) added.add(objectId(declared));
    for (const r of setsCheckedBy(op)) if (!added.has(objectId(r))) tables.set(`${r.family} ${r.table}`, { family: r.family, table: r.table });
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
  const found = (kind: ObjectName['kind'], family: Family, table: string, name: string) => exists.set(objectId({ kind, family, table, name }), true);
  try {
    for (const family of new Set(refs.map((r) => r.family))) {
      for (const table of await reader.listTables(family)) {
        found('table', family, table.name, table.name);
        if (!refs.some((r) => r.table === table.name && r.kind !== 'table')) continue;
        for (const c of await reader.listChains(family, table.name)) found('chain', family, table.name, c.name);
        for (const s of await reader.listSets(family, table.name)) found('set', family, table.name, s.name);
      }
    }
  } catch {
    return undefined;
  }
  // Replay what the transaction did before the failing operation.
  for (const op of operations.slice(0, index)) {
    const d = operationDefinition(op);
    if (!d) continue;
    if (!d.exists && d.holdsObjects) {
      const inside = `${d.family} ${d.table} `;
      for (const k of exists.keys()) if (k.startsWith(inside)) exists.set(k, false);
    }
    exists.set(objectId(d), d.exists);
  }
  for (const r of refs) {
    if (exists.get(objectId(r))) continue;
    const where = r.kind === 'table' ? `table ${r.family} ${r.name}` : `${r.kind} ${r.name} in table ${r.family} ${r.table}`;
    return `${where} (${r.role}) does not exist, and the transaction does not create it before this operation`;
  }
  return undefined;
}
