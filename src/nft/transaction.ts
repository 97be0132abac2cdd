/** Transaction: an inspectable list of nf_tables changes, committed as one atomic batch
 * (NFNL_MSG_BATCH_BEGIN .. END): the kernel applies all of it or none of it. */
import { AttrWriter } from '../netlink/attr';
import { NetlinkError } from '../netlink/errors';
import { NFNL_BATCH_GENID, NFNL_MSG_BATCH_BEGIN, NFNL_MSG_BATCH_END, NFNL_SUBSYS_NFTABLES, NLM_F_ACK, NLM_F_ECHO, NLM_F_REQUEST } from '../netlink/message';
import { NetlinkSocket } from '../netlink/socket';
import { checkTransaction, findMissingReference, kernelSetsReferenced, ReferenceReader } from './check';
import * as C from './constants';
import { BatchWriter, codecOf, describeOperation, formatOperation, messageKind } from './objects';
import { msg, OBJECT_BYTES } from './objects/codec';
import { decodeRule } from './objects/rule';
import { listChains, listSets, listTables } from './readback';
import { NftTransport } from './transport';
import { Chain, NFPROTO, NftSet, Operation, Rule, SetElement, Table } from './types';

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
  /** Where the commit's time went, in ms: the set-type check, encoding the batch, and the kernel
   * exchange (sendmsg until every ack is read). */
  timings: CommitTimings;
}

export interface CommitTimings {
  checkMs: number;
  encodeMs: number;
  kernelMs: number;
}

/** An operation that cannot be encoded (a value out of range, a rule to delete without a
 * handle): names the operation's index and object. Nothing was sent. */
export class OperationEncodeError extends Error {
  constructor(
    readonly opIndex: number,
    /** `add rule inet nfkube pol_x_in` */
    readonly operation: string,
    override readonly cause: unknown,
  ) {
    super(`operation ${opIndex}: ${operation}: ${cause instanceof Error ? cause.message : String(cause)}`);
    this.name = 'OperationEncodeError';
  }
}

const OP_NAMES = new Map<number, string>(
  Object.entries(C)
    .filter(([k]) => k.startsWith('NFT_MSG_'))
    .map(([k, v]) => [msg(v as number), k]),
);

/** Frames the messages of one operation after another into the batch's buffer; the batch
 * loop sets the current operation's header fields. One per batch: no closure per operation. */
class BatchFramer implements BatchWriter {
  readonly messages: BatchMessage[] = [];
  /** Offset of the last message begun, -1 before the first. */
  last = -1;
  opIndex = 0;
  type = 0;
  flags = 0;
  family = 0;

  constructor(
    private readonly w: AttrWriter,
    private readonly nextSeq: () => number,
  ) {}

  begin(): void {
    const seq = this.nextSeq();
    this.last = this.w.beginMessage(this.type, this.flags, seq, this.family);
    this.messages.push({ type: this.type, seq, opIndex: this.opIndex });
  }

  end(): void {
    this.w.endMessage(this.last);
  }

  next(): void {
    this.end();
    this.begin();
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
    const begin = w.beginMessage(NFNL_MSG_BATCH_BEGIN, NLM_F_REQUEST, nextSeq(), 0, NFNL_SUBSYS_NFTABLES);
    if (opts.genId !== undefined) w.be32(NFNL_BATCH_GENID, opts.genId);
    w.endMessage(begin);
    const out = new BatchFramer(w, nextSeq);
    // A plain loop writing straight into w: a batch holds thousands of operations.
    for (let opIndex = 0; opIndex < this.operations.length; opIndex++) {
      const op = this.operations[opIndex];
      const codec = codecOf(op);
      const kind = messageKind(op);
      out.opIndex = opIndex;
      out.type = kind.type;
      out.flags = NLM_F_REQUEST | kind.flags | (echo && kind.echo ? NLM_F_ECHO : 0);
      out.family = NFPROTO[codec.family(op)];
      if (codec.empty?.(op)) continue;
      try {
        out.begin();
        codec.encode(w, op, out);
        out.end();
      } catch (err) {
        throw new OperationEncodeError(opIndex, `${op.verb} ${codec.describe(op)}`, err);
      }
    }
    // Only the last message asks for an ack: its ack proves the whole batch was processed;
    // failures are always reported.
    if (out.last >= 0) w.addMessageFlags(out.last, NLM_F_ACK);
    const end = w.beginMessage(NFNL_MSG_BATCH_END, NLM_F_REQUEST, nextSeq(), 0, NFNL_SUBSYS_NFTABLES);
    w.endMessage(end);
    return { datagram: w.finish(), messages: out.messages };
  }
}

/** A generous guess at a batch's size (a rule is about 500 bytes, an element a few dozen): a full
 * sync's buffer is then allocated once instead of doubled and copied a dozen times, and small
 * batches still start small. Pages the batch does not reach are never touched. */
function sizeHint(operations: Operation[]): number {
  let bytes = 4096;
  for (const op of operations) bytes += codecOf(op).sizeHint?.(op) ?? OBJECT_BYTES;
  return bytes;
}

/** What a commit learns from the table store besides the batch's answers: the sets already there
 * that a transaction looks addresses up in (CommitOptions.checkKernelSets), and, after a refusal,
 * which object the refused operation refers to is missing. A transport with nothing behind it
 * (a recording one) has none. */
export interface CommitLookups {
  setsReferenced(operations: readonly Operation[]): Promise<NftSet[]>;
  missingReference(operations: readonly Operation[], opIndex: number): Promise<string | undefined>;
}

/** The lookups of a store read through `reader`. */
export function storeLookups(reader: ReferenceReader): CommitLookups {
  return {
    setsReferenced: (operations) => kernelSetsReferenced(reader, operations),
    missingReference: (operations, opIndex) => findMissingReference(reader, operations, opIndex),
  };
}

/** The kernel behind `socket`, read as the lookups need. */
function socketReader(socket: NetlinkSocket): ReferenceReader {
  return {
    listTables: (family) => listTables(socket, family),
    listChains: (family, table) => listChains(socket, family, table),
    listSets: (family, table) => listSets(socket, family, table),
  };
}

/** Commits tx as one batch through the kernel behind `socket`. On any failure nothing was
 * applied, and the error names the failing operation, its object, the kernel's errno,
 * extended-ack text and the missing object it refers to. */
export function commit(socket: NetlinkSocket, tx: Transaction, opts: CommitOptions = {}): Promise<CommitResult> {
  return commitBatch(socket, tx, opts, storeLookups(socketReader(socket)));
}

/** commit over any transport: `lookups` answer what only the store behind it knows. */
export async function commitBatch(transport: NftTransport, tx: Transaction, opts: CommitOptions = {}, lookups?: CommitLookups): Promise<CommitResult> {
  const ruleHandles = new Map<Rule, bigint>();
  const byType = new Map<string, number>();
  const timings: CommitTimings = { checkMs: 0, encodeMs: 0, kernelMs: 0 };
  if (tx.size === 0) return { messages: 0, bytes: 0, ruleHandles, byType, timings };
  const known = opts.checkKernelSets && lookups ? await lookups.setsReferenced(tx.operations) : undefined;
  let t = performance.now();
  tx.check(known);
  timings.checkMs = performance.now() - t;
  t = performance.now();
  const { datagram, messages } = tx.encodeBatch(() => transport.nextSeq(), opts);
  timings.encodeMs = performance.now() - t;
  if (messages.length === 0) return { messages: 0, bytes: 0, ruleHandles, byType, timings };
  const seqToIndex = new Map<number, number>();
  messages.forEach((m, i) => {
    seqToIndex.set(m.seq, i);
    const name = OP_NAMES.get(m.type) ?? String(m.type);
    byType.set(name, (byType.get(name) ?? 0) + 1);
  });
  t = performance.now();
  const reply = await transport.transact([datagram]);
  timings.kernelMs = performance.now() - t;

  const failures = reply.acks.filter((a) => a.errno !== 0);
  if (failures.length) {
    const first = failures[0];
    const index = seqToIndex.get(first.seq);
    const fields = { code: first.code ?? `E${first.errno}`, errno: first.errno, extAck: first.extAck, offset: first.offset };
    if (index === undefined) throw new NetlinkError({ ...fields, op: 'NFNL_MSG_BATCH_BEGIN', object: 'batch' });
    const m = messages[index];
    const missing = (fields.code === 'ENOENT' || fields.code === 'EINVAL') && lookups ? await lookups.missingReference(tx.operations, m.opIndex) : undefined;
    throw new NetlinkError({ ...fields, msgIndex: index, op: OP_NAMES.get(m.type) ?? `message type ${m.type}`, object: describeOperation(tx.operations[m.opIndex]), missing });
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
  return { messages: messages.length, bytes: datagram.length, ruleHandles, byType, timings };
}
