/** Which tables nfkube may change: only those it created. Each table nfkube creates carries a mark
 * in its user data (the comment `nft list` shows); a table of the same name without it belongs to
 * someone else and is never modified or deleted, whatever `--table` says.
 *
 * A running agent also holds its table with the kernel's ownership flags: NFT_TABLE_F_OWNER
 * makes every other netlink socket's change to it fail with EPERM (`nft delete table`, `nft add
 * rule`, a dormant flag; `nft flush ruleset` skips it), and NFT_TABLE_F_PERSIST (Linux 6.9) keeps
 * it, ownerless, when the agent's socket closes, until the next start adopts it again. What this
 * does and does not protect is in docs/coexistence.md. */
import { release } from 'node:os';
import { isGenerationMismatch } from '../netlink/errors';
import { NetlinkSocket } from '../netlink/socket';
import * as C from './constants';
import { getGeneration } from './generation';
import { listTable, listTables } from './readback';
import type { GenerationRead, TableStore } from './table-store';
import { commit, Transaction } from './transaction';
import { Family, Table, TableContents } from './types';

/** The comment that marks a table as nfkube's. */
export const TABLE_MARK = 'managed by nfkube';

/** The flags a running agent holds its table with. */
export const HOLD_FLAGS = C.NFT_TABLE_F_OWNER | C.NFT_TABLE_F_PERSIST;

/** Whether a kernel release has NFT_TABLE_F_PERSIST (6.9). Without it an owned table dies with
 * its owner, so older kernels get the mark but no hold. A distribution kernel that backported the
 * flag is treated as not having it: the safe side. */
export function kernelCanHold(kernelRelease = release()): boolean {
  const m = /^(\d+)\.(\d+)/.exec(kernelRelease);
  return !!m && (Number(m[1]) > 6 || (Number(m[1]) === 6 && Number(m[2]) >= 9));
}

const CAN_HOLD = kernelCanHold();

/** A table nfkube will not change: not its own, or held by another running process. */
export class ForeignTableError extends Error {
  constructor(
    readonly table: string,
    readonly reason: 'unmarked' | 'held',
  ) {
    super(
      reason === 'unmarked'
        ? `table ${table} exists and is not nfkube's (it lacks the comment "${TABLE_MARK}" nfkube gives the tables it creates): nfkube never modifies or deletes it; choose another --table, or, if it is a leftover of an nfkube version that did not mark its tables, delete it yourself (nft delete table ${table})`
        : `table ${table} is held by another running process (NFT_TABLE_F_OWNER): the kernel refuses any change to it until that process exits; is another nfkube agent running?`,
    );
    this.name = 'ForeignTableError';
  }
}

export function isNfkubeTable(t: Table): boolean {
  return t.comment === TABLE_MARK;
}

/** Throws ForeignTableError unless the table carries nfkube's mark (enough to read and compare it). */
export function checkMarked(t: Table): void {
  if (!isNfkubeTable(t)) throw new ForeignTableError(`${t.family} ${t.name}`, 'unmarked');
}

/** A netlink writer, as a table's owner names it. */
type Writer = Pick<TableStore, 'portId'>;

/** Throws ForeignTableError unless nfkube may change this table from `writer`. */
export function checkOwnTable(t: Table, writer: Writer): void {
  checkMarked(t);
  if ((t.flags ?? 0) & C.NFT_TABLE_F_OWNER && t.owner !== writer.portId) throw new ForeignTableError(`${t.family} ${t.name}`, 'held');
}

/** Whether `writer` holds the table: no other socket can change it, so a plan made from reading
 * it stays valid whatever else on the node commits meanwhile. */
export function heldBy(t: Table, writer: Writer): boolean {
  return ((t.flags ?? 0) & C.NFT_TABLE_F_OWNER) !== 0 && t.owner === writer.portId;
}

/** The table as nfkube creates it: marked, and held by the creating socket when `hold`. */
export function markedTable(t: Pick<Table, 'family' | 'name'>, hold = false): Table {
  const out: Table = { family: t.family, name: t.name, comment: TABLE_MARK };
  if (hold && CAN_HOLD) out.flags = HOLD_FLAGS;
  return out;
}

async function findTable(socket: NetlinkSocket, family: Family, name: string): Promise<Table | undefined> {
  return (await listTables(socket, family)).find((t) => t.name === name);
}

/** Checks the table (when it exists) is nfkube's and, with `hold`, makes `store`'s writer its
 * owner: an ownerless table a previous run left is adopted (one NEWTABLE message). Returns the
 * table. */
export async function takeOwnTable(store: TableStore, family: Family, name: string, hold = false): Promise<Table | undefined> {
  const t = (await store.listTables(family)).find((t) => t.name === name);
  return t && adoptOwnTable(store, family, name, t, hold);
}

/** takeOwnTable for a table already listed. */
async function adoptOwnTable(store: TableStore, family: Family, name: string, t: Table, hold: boolean): Promise<Table> {
  checkOwnTable(t, store);
  if (hold && CAN_HOLD && ((t.flags ?? 0) & HOLD_FLAGS) !== HOLD_FLAGS) {
    await store.commit(new Transaction().addTable(markedTable(t, true)), { echo: false });
    return (await store.listTables(family)).find((t) => t.name === name) ?? t;
  }
  return t;
}

/** readTable for a table nfkube is about to change: refuses (ForeignTableError) a table that is
 * not its own, before reading the contents, so even one whose rules cannot be decoded is checked. */
export async function readOwnTable(store: TableStore, family: Family, name: string, hold = false): Promise<GenerationRead<TableContents | undefined>> {
  // The table list alone, at one generation: a first start (no table yet) needs no more.
  const tables = await store.readTables(family);
  const own = tables.value.find((t) => t.name === name);
  if (!own) return { value: undefined, genId: tables.genId };
  // That list serves the ownership check too: takeOwnTable would list the tables again.
  await adoptOwnTable(store, family, name, own, hold);
  const read = await store.readTable(family, name);
  // Created or replaced by someone else between the two reads: the generation guard on the
  // commit that follows would refuse it anyway, this says why.
  if (read.value) checkOwnTable(read.value.table, store);
  return read;
}

/** listTable for a table nfkube only reads (verify): refuses one without its mark, before the
 * contents are read, so what is compared is always nfkube's table. */
export async function listMarkedTable(socket: NetlinkSocket, family: Family, name: string): Promise<TableContents | undefined> {
  const t = await findTable(socket, family, name);
  if (t) checkMarked(t);
  const contents = await listTable(socket, family, name);
  if (contents) checkMarked(contents.table);
  return contents;
}

/** Deletes nfkube's own table: 'absent' when there is none; ForeignTableError when the table of
 * that name is not nfkube's or another process holds it. One guarded transaction, so a table
 * created under the name between the check and the delete is never the one deleted. */
export async function deleteOwnTable(socket: NetlinkSocket, family: Family, name: string): Promise<'deleted' | 'absent'> {
  for (let attempt = 0; ; attempt++) {
    const genId = await getGeneration(socket);
    const t = await findTable(socket, family, name);
    if (!t) return 'absent';
    checkOwnTable(t, socket);
    try {
      await commit(socket, new Transaction().deleteTable(t), { echo: false, genId });
      return 'deleted';
    } catch (err) {
      if (isGenerationMismatch(err) && attempt < 5) continue;
      throw err;
    }
  }
}
