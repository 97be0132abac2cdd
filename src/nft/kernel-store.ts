/** The kernel as a TableStore: nf_tables over one netlink socket. */
import type { NetlinkSocket } from '../netlink/socket';
import { getGeneration } from './generation';
import { consistentRead, listChainRules, listChains, listElements, listRules, listSets, listTables, readTable } from './readback';
import type { GenerationRead, TableStore } from './table-store';
import { commit, CommitOptions, CommitResult, Transaction } from './transaction';
import type { Chain, Family, NftSet, Rule, SetElement, Table, TableContents } from './types';

export class KernelTableStore implements TableStore {
  constructor(readonly socket: NetlinkSocket) {}

  get portId(): number {
    return this.socket.portId;
  }

  generation(): Promise<number> {
    return getGeneration(this.socket);
  }

  listTables(family?: Family): Promise<Table[]> {
    return listTables(this.socket, family);
  }

  readTables(family: Family): Promise<GenerationRead<Table[]>> {
    return consistentRead(this.socket, () => listTables(this.socket, family));
  }

  readTable(family: Family, name: string): Promise<GenerationRead<TableContents | undefined>> {
    return readTable(this.socket, family, name);
  }

  listChains(family: Family, table: string): Promise<Chain[]> {
    return listChains(this.socket, family, table);
  }

  listRules(family: Family, table: string, chain?: string): Promise<Rule[]> {
    return listRules(this.socket, family, table, chain);
  }

  listChainRules(family: Family, table: string, chains: string[]): Promise<Map<string, Rule[]>> {
    return listChainRules(this.socket, family, table, chains);
  }

  listSets(family: Family, table: string): Promise<NftSet[]> {
    return listSets(this.socket, family, table);
  }

  listElements(set: NftSet): Promise<SetElement[]> {
    return listElements(this.socket, set);
  }

  commit(tx: Transaction, opts?: CommitOptions): Promise<CommitResult> {
    return commit(this.socket, tx, opts);
  }
}
