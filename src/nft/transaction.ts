/** Transaction: an inspectable list of nf_tables changes, committed as one atomic batch
 * (NFNL_MSG_BATCH_BEGIN .. END): the kernel applies all of it or none of it. */
import { AttrWriter } from '../netlink/attr';
import { NetlinkError } from '../netlink/errors';
import {
  encodeNfMessage,
  NFNL_BATCH_GENID,
  NFNL_MSG_BATCH_BEGIN,
  NFNL_MSG_BATCH_END,
  NFNL_SUBSYS_NFTABLES,
  nfMsgType,
  NLM_F_ACK,
  NLM_F_APPEND,
  NLM_F_CREATE,
  NLM_F_ECHO,
  NLM_F_EXCL,
  NLM_F_REPLACE,
  NLM_F_REQUEST,
} from '../netlink/message';
import { NetlinkSocket, TransactReply } from '../netlink/socket';
import {
  decodeGeneration,
  decodeRule,
  encodeChain,
  encodeChainRef,
  encodeRule,
  encodeRuleRef,
  encodeSet,
  encodeSetElements,
  encodeSetRef,
  encodeTable,
  encodeTableRef,
  kernelElements,
  RuleEncodeOptions,
} from './codec';
import { checkTransaction, findMissingReference, kernelSetsReferenced } from './check';
import * as C from './constants';
import { formatOperation } from './format';
import { Chain, NFPROTO, NftSet, Rule, SetElement, Table } from './types';

export type TableVerb = 'add' | 'create' | 'delete' | 'destroy' | 'flush';
export type ChainVerb = 'add' | 'create' | 'delete' | 'destroy' | 'flush';
export type RuleVerb = 'add' | 'insert' | 'replace' | 'delete' | 'destroy';
export type SetVerb = 'add' | 'create' | 'delete' | 'destroy' | 'flush';
export type ElementVerb = 'add' | 'create' | 'delete' | 'destroy';

export type Operation =
  | { kind: 'table'; verb: TableVerb; table: Table }
  | { kind: 'chain'; verb: ChainVerb; chain: Chain }
  | { kind: 'rule'; verb: RuleVerb; rule: Rule }
  | { kind: 'set'; verb: SetVerb; set: NftSet }
  | { kind: 'element'; verb: ElementVerb; set: NftSet; elements: SetElement[] };

interface BatchMessage {
  type: number;
  seq: number;
  opIndex: number;
}

export interface EncodedBatch {
  datagram: Buffer;
  messages: BatchMessage[];
}

export interface CommitOptions {
  /** Ask the kernel to echo new rules so their handles are learned (default true). */
  echo?: boolean;
  /** Ruleset generation the transaction was computed from: the kernel refuses it (ERESTART)
   * if anything changed the ruleset since. */
  genId?: number;
  /** Also check address lookups against sets that already exist in the kernel (one set dump
   * per table concerned, before sending); sets the transaction adds are always checked. */
  checkKernelSets?: boolean;
}

export interface CommitResult {
  /** Kernel messages sent inside the batch (BEGIN/END excluded). */
  messages: number;
  bytes: number;
  /** Handles of added or inserted rules, in operation order (undefined where not echoed). */
  ruleHandles: Map<Rule, bigint>;
  /** Messages sent per kind (NFT_MSG_NEWSETELEM...). */
  byType: Map<string, number>;
}

const msg = (m: number) => nfMsgType(NFNL_SUBSYS_NFTABLES, m);

// The kernel requires NFTA_SET_ID on every new set. Never reset, so an id cannot be mistaken for
// one of an earlier transaction.
let lastSetId = 0;
const nextSetId = () => (lastSetId = (lastSetId + 1) % 0x7fffffff || 1);

const OP_NAMES = new Map<number, string>(
  Object.entries(C)
    .filter(([k]) => k.startsWith('NFT_MSG_'))
    .map(([k, v]) => [msg(v as number), k]),
);

function describeObject(op: Operation): string {
  switch (op.kind) {
    case 'table':
      return `table ${op.table.family} ${op.table.name}`;
    case 'chain':
      return `chain ${op.chain.family} ${op.chain.table} ${op.chain.name}`;
    case 'rule':
      return `rule ${op.rule.family} ${op.rule.table} ${op.rule.chain}${op.rule.handle !== undefined ? ` handle ${op.rule.handle}` : ''}`;
    case 'set':
      return `set ${op.set.family} ${op.set.table} ${op.set.name}`;
    case 'element':
      return `elements of set ${op.set.family} ${op.set.table} ${op.set.name}`;
  }
}

export class Transaction {
  readonly operations: Operation[] = [];

  add(op: Operation): this {
    this.operations.push(op);
    return this;
  }

  addTable(table: Table): this {
    return this.add({ kind: 'table', verb: 'add', table });
  }
  deleteTable(table: Table): this {
    return this.add({ kind: 'table', verb: 'delete', table });
  }
  destroyTable(table: Table): this {
    return this.add({ kind: 'table', verb: 'destroy', table });
  }
  flushTable(table: Table): this {
    return this.add({ kind: 'table', verb: 'flush', table });
  }
  addChain(chain: Chain): this {
    return this.add({ kind: 'chain', verb: 'add', chain });
  }
  deleteChain(chain: Chain): this {
    return this.add({ kind: 'chain', verb: 'delete', chain });
  }
  flushChain(chain: Chain): this {
    return this.add({ kind: 'chain', verb: 'flush', chain });
  }
  addRule(rule: Rule): this {
    return this.add({ kind: 'rule', verb: 'add', rule });
  }
  insertRule(rule: Rule): this {
    return this.add({ kind: 'rule', verb: 'insert', rule });
  }
  replaceRule(rule: Rule): this {
    return this.add({ kind: 'rule', verb: 'replace', rule });
  }
  deleteRule(rule: Rule): this {
    return this.add({ kind: 'rule', verb: 'delete', rule });
  }
  addSet(set: NftSet): this {
    return this.add({ kind: 'set', verb: 'add', set });
  }
  deleteSet(set: NftSet): this {
    return this.add({ kind: 'set', verb: 'delete', set });
  }
  flushSet(set: NftSet): this {
    return this.add({ kind: 'set', verb: 'flush', set });
  }
  addElements(set: NftSet, elements: SetElement[]): this {
    return elements.length ? this.add({ kind: 'element', verb: 'add', set, elements }) : this;
  }
  deleteElements(set: NftSet, elements: SetElement[]): this {
    return elements.length ? this.add({ kind: 'element', verb: 'delete', set, elements }) : this;
  }

  get size(): number {
    return this.operations.length;
  }

  /** The transaction in nft syntax, one command per line (for dry runs and logs). */
  toString(): string {
    return this.operations.map(formatOperation).join('\n');
  }

  /** Throws a SetTypeError for an element or an address match that does not fit its set (see
   * check.ts), resolving sets among those it adds and `known`; commit runs it before sending. */
  check(known?: NftSet[]): this {
    checkTransaction(this.operations, known);
    return this;
  }

  /** The whole batch (BEGIN, every message, END) written into one buffer, with each message's
   * type, sequence number and operation for mapping the kernel's answers back. */
  encodeBatch(nextSeq: () => number, opts: CommitOptions = {}): EncodedBatch {
    const echo = opts.echo ?? true;
    const w = new AttrWriter(sizeHint(this.operations));
    const messages: BatchMessage[] = [];
    const begin = w.beginMessage(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, nextSeq(), 0, NFNL_SUBSYS_NFTABLES);
    if (opts.genId !== undefined) w.be32(NFNL_BATCH_GENID, opts.genId);
    w.endMessage(begin);
    let last = -1;
    // A plain loop writing straight into w: a batch holds thousands of operations.
    for (let opIndex = 0; opIndex < this.operations.length; opIndex++) {
      const op = this.operations[opIndex];
      const kind = messageKind(op);
      const flags = NLM_F_REQUEST | kind.flags | (echo && kind.echo ? NLM_F_ECHO : 0);
      const family = familyOf(op);
      if (op.kind === 'element') {
        const elems = kernelElements(op.set, op.elements);
        const removing = op.verb === 'delete' || op.verb === 'destroy';
        // Without the set's id: elements name their set by name.
        const ref = { table: op.set.table, name: op.set.name };
        for (let i = 0; i < elems.length; ) {
          const seq = nextSeq();
          last = w.beginMessage(kind.type, flags, seq, family);
          i = encodeSetElements(w, ref, elems, i, removing);
          w.endMessage(last);
          messages.push({ type: kind.type, seq, opIndex });
        }
        continue;
      }
      if (op.kind === 'rule' && op.verb !== 'add' && op.verb !== 'insert' && op.rule.handle === undefined) {
        throw new Error(`${op.verb} ${describeObject(op)}: the rule has no handle`);
      }
      const seq = nextSeq();
      last = w.beginMessage(kind.type, flags, seq, family);
      writeOperation(w, op);
      w.endMessage(last);
      messages.push({ type: kind.type, seq, opIndex });
    }
    // Only the last message asks for an ack: its ack proves the whole batch was processed;
    // failures are always reported.
    if (last >= 0) w.addMessageFlags(last, NLM_F_ACK);
    const end = w.beginMessage(NFNL_MSG_BATCH_END, NLM_F_REQUEST, nextSeq(), 0, NFNL_SUBSYS_NFTABLES);
    w.endMessage(end);
    return { datagram: w.finish(), messages };
  }
}

/** A generous guess at a batch's size (a rule is about 500 bytes, an element a few dozen): a full
 * sync's buffer is then allocated once instead of doubled and copied a dozen times, and small
 * batches still start small. Pages the batch does not reach are never touched. */
function sizeHint(operations: Operation[]): number {
  let bytes = 4096;
  for (const op of operations) bytes += op.kind === 'element' ? 64 * op.elements.length : 512;
  return bytes;
}

/** The netlink message an operation becomes: its type, its flags besides NLM_F_REQUEST, and
 * whether the kernel is to echo it (new rules, for their handles). */
interface MessageKind {
  type: number;
  flags: number;
  echo?: boolean;
}

type VerbsOf<K extends Operation['kind']> = Extract<Operation, { kind: K }>['verb'];

/** The verbs every kind of object has: add (created when missing), create (refused when it
 * exists), delete (refused when missing), destroy (not). */
function objectVerbs(newType: number, delType: number, destroyType: number): Record<'add' | 'create' | 'delete' | 'destroy', MessageKind> {
  return {
    add: { type: msg(newType), flags: NLM_F_CREATE },
    create: { type: msg(newType), flags: NLM_F_CREATE | NLM_F_EXCL },
    delete: { type: msg(delType), flags: 0 },
    destroy: { type: msg(destroyType), flags: 0 },
  };
}

const MESSAGE_KINDS: { [K in Operation['kind']]: Record<VerbsOf<K>, MessageKind> } = {
  // Flushing a table or chain deletes its rules; flushing a set, its elements.
  table: { ...objectVerbs(C.NFT_MSG_NEWTABLE, C.NFT_MSG_DELTABLE, C.NFT_MSG_DESTROYTABLE), flush: { type: msg(C.NFT_MSG_DELRULE), flags: 0 } },
  chain: { ...objectVerbs(C.NFT_MSG_NEWCHAIN, C.NFT_MSG_DELCHAIN, C.NFT_MSG_DESTROYCHAIN), flush: { type: msg(C.NFT_MSG_DELRULE), flags: 0 } },
  rule: {
    add: { type: msg(C.NFT_MSG_NEWRULE), flags: NLM_F_CREATE | NLM_F_APPEND, echo: true },
    insert: { type: msg(C.NFT_MSG_NEWRULE), flags: NLM_F_CREATE, echo: true },
    replace: { type: msg(C.NFT_MSG_NEWRULE), flags: NLM_F_REPLACE, echo: true },
    delete: { type: msg(C.NFT_MSG_DELRULE), flags: 0 },
    destroy: { type: msg(C.NFT_MSG_DESTROYRULE), flags: 0 },
  },
  set: { ...objectVerbs(C.NFT_MSG_NEWSET, C.NFT_MSG_DELSET, C.NFT_MSG_DESTROYSET), flush: { type: msg(C.NFT_MSG_DELSETELEM), flags: 0 } },
  element: objectVerbs(C.NFT_MSG_NEWSETELEM, C.NFT_MSG_DELSETELEM, C.NFT_MSG_DESTROYSETELEM),
};

function familyOf(op: Operation): number {
  switch (op.kind) {
    case 'table':
      return NFPROTO[op.table.family];
    case 'chain':
      return NFPROTO[op.chain.family];
    case 'rule':
      return NFPROTO[op.rule.family];
    default:
      return NFPROTO[op.set.family];
  }
}

function messageKind(op: Operation): MessageKind {
  return (MESSAGE_KINDS[op.kind] as Record<string, MessageKind>)[op.verb];
}

const NEW_RULE: RuleEncodeOptions = { without: 'handle' };
const REPLACEMENT_RULE: RuleEncodeOptions = { without: 'position' };

/** Writes the attributes of one operation other than an element list. */
function writeOperation(w: AttrWriter, op: Exclude<Operation, { kind: 'element' }>): void {
  switch (op.kind) {
    case 'table':
      if (op.verb === 'add' || op.verb === 'create') encodeTable(w, op.table);
      else if (op.verb === 'flush') w.str(C.NFTA_RULE_TABLE, op.table.name);
      else encodeTableRef(w, op.table);
      return;
    case 'chain':
      if (op.verb === 'add' || op.verb === 'create') encodeChain(w, op.chain);
      else if (op.verb === 'flush') w.str(C.NFTA_RULE_TABLE, op.chain.table).str(C.NFTA_RULE_CHAIN, op.chain.name);
      else encodeChainRef(w, op.chain);
      return;
    case 'rule':
      if (op.verb === 'add' || op.verb === 'insert') encodeRule(w, op.rule, NEW_RULE);
      else if (op.verb === 'replace') encodeRule(w, op.rule, REPLACEMENT_RULE);
      // encodeBatch refused a delete without a handle.
      else encodeRuleRef(w, op.rule as Rule & { handle: bigint });
      return;
    case 'set':
      if (op.verb === 'add' || op.verb === 'create') encodeSet(w, op.set, op.set.id ?? nextSetId());
      else if (op.verb === 'flush') w.str(C.NFTA_SET_ELEM_LIST_TABLE, op.set.table).str(C.NFTA_SET_ELEM_LIST_SET, op.set.name);
      else encodeSetRef(w, op.set);
      return;
  }
}

/** What commit needs of a socket (a NetlinkSocket is one): tests record batches with their own.
 * Only a NetlinkSocket is asked, after a refusal, which referenced object is missing. */
export interface NftTransport {
  transact(datagrams: Buffer[]): Promise<TransactReply>;
  nextSeq(): number;
}

/** Reads the current ruleset generation (NFT_MSG_GETGEN). */
export async function getGeneration(socket: NftTransport): Promise<number> {
  const req = encodeNfMessage({ type: msg(C.NFT_MSG_GETGEN), flags: NLM_F_REQUEST | NLM_F_ACK, seq: socket.nextSeq(), family: 0 });
  const reply = await socket.transact([req]);
  const failed = reply.acks.find((a) => a.errno !== 0);
  if (failed) throw new NetlinkError({ code: failed.code ?? `E${failed.errno}`, errno: failed.errno, op: 'NFT_MSG_GETGEN' });
  const gen = reply.messages.find((m) => m.type === msg(C.NFT_MSG_NEWGEN));
  if (!gen) throw new NetlinkError({ code: 'EPROTO', errno: 71, op: 'NFT_MSG_GETGEN', message: 'NFT_MSG_GETGEN: no NEWGEN reply' });
  return decodeGeneration(gen.payload);
}

/** Commits tx as one batch. On any failure nothing was applied, and the error names the
 * failing operation, its object, the kernel's errno and extended-ack text. */
export async function commit(socket: NftTransport, tx: Transaction, opts: CommitOptions = {}): Promise<CommitResult> {
  const ruleHandles = new Map<Rule, bigint>();
  const byType = new Map<string, number>();
  if (tx.size === 0) return { messages: 0, bytes: 0, ruleHandles, byType };
  // The kernel's sets can be read only through a real socket (a recording transport cannot).
  tx.check(opts.checkKernelSets && socket instanceof NetlinkSocket ? await kernelSetsReferenced(socket, tx.operations) : undefined);
  const { datagram, messages } = tx.encodeBatch(() => socket.nextSeq(), opts);
  if (messages.length === 0) return { messages: 0, bytes: 0, ruleHandles, byType };
  const seqToIndex = new Map<number, number>();
  messages.forEach((m, i) => {
    seqToIndex.set(m.seq, i);
    const name = OP_NAMES.get(m.type) ?? String(m.type);
    byType.set(name, (byType.get(name) ?? 0) + 1);
  });
  const reply = await socket.transact([datagram]);

  const failures = reply.acks.filter((a) => a.errno !== 0);
  if (failures.length) {
    const first = failures[0];
    const index = seqToIndex.get(first.seq);
    const fields = { code: first.code ?? `E${first.errno}`, errno: first.errno, extAck: first.extAck, offset: first.offset };
    if (index === undefined) throw new NetlinkError({ ...fields, op: 'NFNL_MSG_BATCH_BEGIN', object: 'batch' });
    const m = messages[index];
    // Which reference is missing is read back from the kernel: only a socket can.
    const missing = (fields.code === 'ENOENT' || fields.code === 'EINVAL') && socket instanceof NetlinkSocket ? await findMissingReference(socket, tx, m.opIndex) : undefined;
    throw new NetlinkError({ ...fields, msgIndex: index, op: OP_NAMES.get(m.type) ?? `message type ${m.type}`, object: describeObject(tx.operations[m.opIndex]), missing });
  }
  const lastSeq = messages[messages.length - 1].seq;
  if (!reply.acks.some((a) => a.seq === lastSeq)) {
    throw new NetlinkError({ code: 'EPROTO', errno: 71, op: 'batch', message: 'the kernel did not acknowledge the batch' });
  }
  for (const m of reply.messages) {
    const index = seqToIndex.get(m.seq);
    if (index === undefined || m.type !== msg(C.NFT_MSG_NEWRULE)) continue;
    const op = tx.operations[messages[index].opIndex];
    if (op.kind !== 'rule') continue;
    const echoed = decodeRule(m.family, m.payload);
    if (echoed.handle !== undefined) ruleHandles.set(op.rule, echoed.handle);
  }
  return { messages: messages.length, bytes: datagram.length, ruleHandles, byType };
}
