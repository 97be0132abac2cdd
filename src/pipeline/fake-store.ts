/** A TableStore in memory, as knftables' Fake is for kube-proxy: the pipeline (and a library
 * user's code) runs against it with no kernel and no root. Batches go through the same commit
 * code as the kernel's (checks, encoding, mapping a refusal back to its operation); only the
 * kernel's side is replaced by fake-tables.ts, whose semantics a kernel test keeps honest.
 *
 * Faults can be queued, each taken by the next batch: a refusal (EBUSY, ERESTART, any errno) of
 * the whole batch or of message N, or a race (another writer commits just before the batch, so
 * a generation guard refuses it). `peer()` is a second writer on the same tables, with its own
 * port id. `pause()` holds commits back, as a slow kernel would. What was committed and read is
 * recorded in order. Not answered: echoes of new rules' handles
 * (CommitResult.ruleHandles stays empty). */
import { constants } from 'node:os';
import { Ack, TransactReply } from '../netlink/socket';
import { decodeNfMessages } from '../netlink/message';
import type { GenerationRead, TableStore } from '../nft/table-store';
import { commitBatch, CommitOptions, CommitResult, storeLookups, Transaction } from '../nft/transaction';
import type { Chain, Family, NftSet, Operation, Rule, SetElement, Table, TableContents } from '../nft/types';
import { modelToContents } from '../ruleset/model';
import { applyBatch, emptyRuleset, FAKE_ERRNO, FakeRefusal, FakeRuleset, fakeTable, fakeTables, releaseWriter } from './fake-tables';

export type FakeFault =
  /** Refuse the batch with errno `refuse` (a name: EBUSY, ENOSPC, ERESTART...): at message
   * `atMessage` (as NetlinkError.msgIndex counts), or the whole batch (its BEGIN) when absent. */
  | { refuse: string; atMessage?: number }
  /** Another writer commits just before the batch arrives: the generation moves. */
  | { race: true };

export interface ReceivedBatch {
  operations: Operation[];
  /** The generation the batch was guarded by. */
  genId?: number;
  /** The port id of the writer that sent it. */
  writer: number;
  /** 'committed', or the name of the errno it was refused with. */
  outcome: string;
}

/** One thing a fake was asked, in the order asked. */
export type FakeEvent = { read: string } | { batch: ReceivedBatch };

/** What every writer of one fake shares: the tables, the queued faults, the records. */
interface FakeKernel {
  state: FakeRuleset;
  faults: FakeFault[];
  journal: FakeEvent[];
  /** Resolves when commits may proceed (pause). */
  open: Promise<void>;
  lastPort: number;
}

export class FakeTableStore implements TableStore {
  readonly portId: number;
  private readonly kernel: FakeKernel;

  constructor(kernel?: FakeKernel) {
    this.kernel = kernel ?? { state: emptyRuleset(), faults: [], journal: [], open: Promise.resolve(), lastPort: 0 };
    this.portId = ++this.kernel.lastPort;
  }

  /** Another writer on the same tables (another process's socket). */
  peer(): FakeTableStore {
    return new FakeTableStore(this.kernel);
  }

  /** This writer's socket closes: the tables it holds go, or stay ownerless when persistent. */
  close(): void {
    this.kernel.state = releaseWriter(this.kernel.state, this.portId);
  }

  /** Queues faults; each is taken by the next batch any writer sends. */
  inject(...faults: FakeFault[]): void {
    for (const f of faults) if ('refuse' in f) errnoOf(f.refuse);
    this.kernel.faults.push(...faults);
  }

  /** Commits wait (a slow kernel) until the function returned is called. */
  pause(): () => void {
    let resume!: () => void;
    const open = new Promise<void>((resolve) => (resume = resolve));
    this.kernel.open = this.kernel.open.then(() => open);
    return resume;
  }

  /** Every read and every batch that reached the store, in order, whoever asked. */
  get journal(): readonly FakeEvent[] {
    return this.kernel.journal;
  }

  /** Every batch that reached the store, in order, whoever sent it. */
  get received(): ReceivedBatch[] {
    return this.kernel.journal.flatMap((e) => ('batch' in e ? [e.batch] : []));
  }

  /** Every read, in order: `tables inet`, `table inet t`, `rules inet t c1,c2`, ... */
  get reads(): string[] {
    return this.kernel.journal.flatMap((e) => ('read' in e ? [e.read] : []));
  }

  /** The whole state, as plain data (read-only: change it with commits). */
  get state(): FakeRuleset {
    return this.kernel.state;
  }

  private read(what: string): FakeRuleset {
    this.kernel.journal.push({ read: what });
    return this.kernel.state;
  }

  async generation(): Promise<number> {
    return this.kernel.state.generation;
  }

  async listTables(family?: Family): Promise<Table[]> {
    return fakeTables(this.read(`tables ${family ?? 'all'}`), family);
  }

  async readTables(family: Family): Promise<GenerationRead<Table[]>> {
    const state = this.read(`tables ${family}`);
    return { value: fakeTables(state, family), genId: state.generation };
  }

  async readTable(family: Family, name: string): Promise<GenerationRead<TableContents | undefined>> {
    const state = this.read(`table ${family} ${name}`);
    const t = fakeTable(state, family, name);
    return { value: t && modelToContents(t), genId: state.generation };
  }

  async listChains(family: Family, table: string): Promise<Chain[]> {
    const t = fakeTable(this.read(`chains ${family} ${table}`), family, table);
    return t ? [...t.chains.values()].map((c) => c.chain) : [];
  }

  async listRules(family: Family, table: string, chain?: string): Promise<Rule[]> {
    const t = fakeTable(this.read(`rules ${family} ${table}${chain ? ` ${chain}` : ''}`), family, table);
    return t ? [...t.chains.values()].filter((c) => !chain || c.chain.name === chain).flatMap((c) => c.rules) : [];
  }

  async listChainRules(family: Family, table: string, chains: string[]): Promise<Map<string, Rule[]>> {
    const t = fakeTable(this.read(`rules ${family} ${table} ${chains.join(',')}`), family, table);
    return new Map(chains.map((name) => [name, t?.chains.get(name)?.rules ?? []]));
  }

  async listSets(family: Family, table: string): Promise<NftSet[]> {
    const t = fakeTable(this.read(`sets ${family} ${table}`), family, table);
    return t ? [...t.sets.values()].map((s) => s.set) : [];
  }

  async listElements(set: NftSet): Promise<SetElement[]> {
    const t = fakeTable(this.read(`elements ${set.family} ${set.table} ${set.name}`), set.family, set.table);
    return [...(t?.sets.get(set.name)?.elements.values() ?? [])];
  }

  async commit(tx: Transaction, opts: CommitOptions = {}): Promise<CommitResult> {
    await this.kernel.open;
    let seq = 0;
    const transport = {
      nextSeq: () => ++seq,
      transact: async ([datagram]: Buffer[]) => this.answer(datagram, tx, opts),
    };
    return commitBatch(transport, tx, opts, storeLookups(this));
  }

  /** The kernel's answer to one batch: acks, or an error for the refused message (BEGIN for a
   * refusal of the whole batch); the state changes only when nothing is refused. */
  private answer(datagram: Buffer, tx: Transaction, opts: CommitOptions): TransactReply {
    const k = this.kernel;
    const messages = decodeNfMessages(datagram);
    const begin = messages[0];
    const body = messages.slice(1, -1);
    // Which operation each message carries: the batch is encoded again, as deterministically.
    let scratch = 0;
    const opOf = tx.encodeBatch(() => ++scratch, opts).messages.map((m) => m.opIndex);
    // An operation that sends no message (no elements) never reaches the kernel.
    const sent = [...new Set(opOf)];
    const record = (outcome: ReceivedBatch['outcome']) => k.journal.push({ batch: { operations: [...tx.operations], genId: opts.genId, writer: this.portId, outcome } });
    const refuse = (code: string, seqOf: number, extAck?: string): TransactReply => {
      record(code);
      return { acks: [{ seq: seqOf, errno: errnoOf(code), code, extAck }], messages: [] };
    };
    const fault = k.faults.shift();
    if (fault && 'race' in fault) k.state = { ...k.state, generation: k.state.generation + 1 };
    if (opts.genId !== undefined && opts.genId !== k.state.generation) return refuse('ERESTART', begin.seq);
    if (fault && 'refuse' in fault) {
      const at = fault.atMessage === undefined ? begin : body[fault.atMessage];
      if (!at) throw new Error(`fake store: a fault refuses message ${fault.atMessage}, and the batch has ${body.length}`);
      return refuse(fault.refuse, at.seq);
    }
    try {
      k.state = applyBatch(
        k.state,
        sent.map((i) => tx.operations[i]),
        this.portId,
      );
    } catch (err) {
      if (!(err instanceof FakeRefusal)) throw err;
      return refuse(err.code, body[opOf.indexOf(sent[err.opIndex])].seq, err.reason);
    }
    record('committed');
    const acks: Ack[] = [{ seq: body[body.length - 1].seq, errno: 0 }];
    return { acks, messages: [] };
  }
}

/** The number of an errno name (ERESTART, which Node does not list, among them). */
function errnoOf(name: string): number {
  const errno = (FAKE_ERRNO as Record<string, number>)[name] ?? (constants.errno as Record<string, number>)[name];
  if (errno === undefined) throw new Error(`fake store: ${JSON.stringify(name)} is not an errno name`);
  return errno;
}
