/** Where nf_tables objects live, as the pipeline sees it: read with the generation the read saw,
 * commit a transaction all or nothing, guarded by a generation. The kernel is one
 * (kernel-store.ts); FakeTableStore (src/pipeline/fake-store.ts) holds the same objects in memory, so code
 * above it is tested without root. */
import type { CommitOptions, CommitResult, Transaction } from './transaction';
import type { Chain, Family, NftSet, Rule, SetElement, Table, TableContents } from './types';

/** A value read in one state of the ruleset, with that state's generation. */
export interface GenerationRead<T> {
  value: T;
  genId: number;
}

export interface TableStore {
  /** This writer's identity, as a table's owner records it (NFTA_TABLE_OWNER). */
  readonly portId: number;
  /** The ruleset generation: bumped by every commit that changed something. */
  generation(): Promise<number>;
  listTables(family?: Family): Promise<Table[]>;
  /** The tables of a family, read in one state. */
  readTables(family: Family): Promise<GenerationRead<Table[]>>;
  /** Everything in one table, read in one state; undefined when it does not exist. */
  readTable(family: Family, name: string): Promise<GenerationRead<TableContents | undefined>>;
  listChains(family: Family, table: string): Promise<Chain[]>;
  listRules(family: Family, table: string, chain?: string): Promise<Rule[]>;
  /** The rules of several chains of one table, by chain name. */
  listChainRules(family: Family, table: string, chains: string[]): Promise<Map<string, Rule[]>>;
  listSets(family: Family, table: string): Promise<NftSet[]>;
  listElements(set: NftSet): Promise<SetElement[]>;
  /** Applies tx as one batch, all or nothing (a NetlinkError names the refused operation);
   * `opts.genId` refuses it with ERESTART when the generation moved since. */
  commit(tx: Transaction, opts?: CommitOptions): Promise<CommitResult>;
}
