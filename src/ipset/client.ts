/** An ipset client over a netlink socket (NETLINK_NETFILTER): bulk commands with every message's
 * ack collected, kernel read-back, and a count of the messages it sent. */
import { AttrWriter } from '../netlink/attr';
import { TransactReply } from '../netlink/socket';
import { NfMessage, packDatagrams } from '../netlink/message';
import { NetlinkError } from '../netlink/errors';
import * as codec from './codec';
import * as C from './constants';
import { IpsetError, IpsetOpName } from './errors';
import { Element, IpsetSet, SetFamily, SetOptions, SetType } from './types';

/** What the client needs of a NetlinkSocket; tests may wrap one to watch the traffic. */
export interface IpsetTransport {
  transact(datagrams: Buffer[]): Promise<TransactReply>;
  dump(request: Buffer, what?: string): Promise<NfMessage[]>;
  nextSeq(): number;
}

export type IpsetOp =
  | { op: 'create'; name: string; type: SetType; family: SetFamily; options: SetOptions; exist?: boolean }
  | { op: 'destroy'; name: string; exist?: boolean }
  | { op: 'flush'; name: string }
  | { op: 'rename'; name: string; to: string }
  | { op: 'swap'; name: string; with: string }
  | { op: 'add' | 'del'; name: string; type: SetType; elements: Element[]; exist?: boolean };

/** A refused op: its index in the list given to `run`, and the kernel's reason. */
export interface OpFailure {
  index: number;
  error: IpsetError;
}

export interface MessageCounts {
  /** Protocol, type, header, test and list requests. */
  read: number;
  /** Create, destroy, flush, rename, swap, add and del messages. */
  mutating: number;
}

/** Datagrams stay well under the socket buffers the transport sets up. */
const MAX_DATAGRAM_BYTES = 256 * 1024;

interface Outgoing {
  seq: number;
  index: number;
  /** For add and del: the op's elements this message carries. */
  span?: { from: number; to: number };
}

/** Messages written back to back into one buffer, cut into datagrams at message boundaries. */
class OutgoingBuffer {
  readonly w = new AttrWriter(64 * 1024);
  /** Where each datagram starts. */
  private readonly starts: number[] = [0];

  /** Call after each message: starts a new datagram when the current one has grown enough. */
  endOfMessage(): void {
    if (this.w.length - this.starts[this.starts.length - 1] >= MAX_DATAGRAM_BYTES) this.starts.push(this.w.length);
  }

  datagrams(): Buffer[] {
    const all = this.w.finish();
    const bounds = [...this.starts, all.length];
    const out: Buffer[] = [];
    for (let i = 0; i + 1 < bounds.length; i++) if (bounds[i + 1] > bounds[i]) out.push(all.subarray(bounds[i], bounds[i + 1]));
    return out;
  }
}

function revisionKey(type: SetType, family: SetFamily): string {
  return `${type}/${family}`;
}

function opTypeName(op: IpsetOp): string | undefined {
  return op.op === 'create' || op.op === 'add' || op.op === 'del' ? op.type : undefined;
}

export class IpsetClient {
  readonly sent: MessageCounts = { read: 0, mutating: 0 };
  private protocolVersion?: number;
  private readonly revisions = new Map<string, number>();

  constructor(private readonly transport: IpsetTransport) {}

  private async header(): Promise<{ seq: number; protocol: number }> {
    return { seq: this.transport.nextSeq(), protocol: await this.protocol() };
  }

  /** Runs one request that answers with a single message; kernel refusals become IpsetError. */
  private async ask(op: IpsetOpName, request: Buffer, subject?: string): Promise<NfMessage> {
    this.sent.read++;
    const seq = request.readUInt32LE(8);
    const r = await this.transport.transact([request]);
    const ack = r.acks.find((a) => a.seq === seq && a.errno !== 0);
    if (ack) throw new IpsetError({ errno: ack.errno, code: ack.code ?? `E${ack.errno}`, op, set: subject, extAck: ack.extAck });
    const reply = r.messages.find((m) => m.seq === seq);
    if (!reply) throw new NetlinkError({ code: 'ENOMSG', errno: 42, op: `ipset ${op}`, object: subject, message: `ipset ${op}: kernel sent no reply` });
    return reply;
  }

  /** The protocol version both sides speak (the kernel's, capped at IPSET_PROTOCOL). */
  async protocol(): Promise<number> {
    if (this.protocolVersion === undefined) {
      const request = codec.encodeProtocol({ seq: this.transport.nextSeq(), protocol: C.IPSET_PROTOCOL });
      const reply = codec.decodeProtocolReply(await this.ask('protocol', request));
      if (reply.protocol < C.IPSET_PROTOCOL_MIN) {
        throw new Error(`ipset: kernel speaks protocol ${reply.protocol}, nfkube needs ${C.IPSET_PROTOCOL_MIN} or later`);
      }
      this.protocolVersion = Math.min(reply.protocol, C.IPSET_PROTOCOL);
    }
    return this.protocolVersion;
  }

  /** The kernel's newest and oldest revision of a type for a family (loads the type's module). */
  async type(type: string, family: SetFamily): Promise<{ revision: number; revisionMin: number }> {
    const request = codec.encodeTypeQuery(await this.header(), type, family);
    const reply = codec.decodeTypeReply(await this.ask('type', request, type));
    return { revision: reply.revision, revisionMin: reply.revisionMin };
  }

  /** The revision creates use: the newest both this codec and the kernel know. */
  async revisionFor(type: SetType, family: SetFamily): Promise<number> {
    const key = revisionKey(type, family);
    let rev = this.revisions.get(key);
    if (rev === undefined) {
      rev = Math.min(codec.KNOWN_REVISION[type], (await this.type(type, family)).revision);
      this.revisions.set(key, rev);
    }
    return rev;
  }

  /** Reads sets back; `include` selects by name, and sets it rejects are not decoded. */
  async list(opts: { set?: string; include?: (name: string) => boolean; headersOnly?: boolean } = {}): Promise<codec.ListResult> {
    const request = codec.encodeList(await this.header(), { set: opts.set, headersOnly: opts.headersOnly });
    this.sent.read++;
    let messages: NfMessage[];
    try {
      messages = await this.transport.dump(request, 'ipset list');
    } catch (err) {
      if (err instanceof NetlinkError && !(err instanceof IpsetError)) {
        throw new IpsetError({ errno: err.errno, code: err.code, op: 'list', set: opts.set, extAck: err.extAck });
      }
      throw err;
    }
    return codec.decodeList(messages, opts.include);
  }

  async get(name: string): Promise<IpsetSet | undefined> {
    try {
      return (await this.list({ set: name })).sets[0];
    } catch (err) {
      if (err instanceof IpsetError && err.kind === 'set-not-found') return undefined;
      throw err;
    }
  }

  /** Tests members (of any sets) with one IPSET_CMD_TEST message each, many per datagram. */
  async testEach(probes: { set: string; type: SetType; element: Element }[]): Promise<boolean[]> {
    const protocol = await this.protocol();
    const seqs = probes.map(() => this.transport.nextSeq());
    const msgs = probes.map((p, i) => codec.encodeTest({ seq: seqs[i], protocol }, p.set, p.type, p.element));
    this.sent.read += msgs.length;
    const r = await this.transport.transact(packDatagrams(msgs, MAX_DATAGRAM_BYTES));
    const bySeq = new Map(r.acks.map((a) => [a.seq, a]));
    return seqs.map((seq, i) => {
      const { set, element } = probes[i];
      const ack = bySeq.get(seq);
      if (!ack) throw new NetlinkError({ code: 'ENOMSG', errno: 42, message: `ipset test (set ${set}, element ${element.key}): no ack` });
      if (ack.errno === 0) return true;
      if (ack.errno === C.IPSET_ERR_EXIST) return false;
      throw new IpsetError({ errno: ack.errno, code: ack.code ?? `E${ack.errno}`, op: 'test', set, element: element.key, extAck: ack.extAck });
    });
  }

  testMany(set: string, type: SetType, elements: Element[]): Promise<boolean[]> {
    return this.testEach(elements.map((element) => ({ set, type, element })));
  }

  async test(set: string, type: SetType, element: Element): Promise<boolean> {
    return (await this.testMany(set, type, [element]))[0];
  }

  /** Writes an op's messages; creates need their type's revision looked up first. */
  private encode(op: IpsetOp, index: number, protocol: number, buf: OutgoingBuffer, out: Outgoing[]): void {
    const one = (build: (x: { seq: number; protocol: number }) => Buffer) => {
      const x = { seq: this.transport.nextSeq(), protocol };
      const bytes = build(x);
      buf.w.raw(bytes);
      buf.endOfMessage();
      out.push({ seq: x.seq, index });
    };
    switch (op.op) {
      case 'create': {
        const revision = this.revisions.get(revisionKey(op.type, op.family)) as number;
        return one((x) => codec.encodeCreate(x, { name: op.name, type: op.type, family: op.family, revision, options: op.options }, op.exist ?? false));
      }
      case 'destroy':
        return one((x) => codec.encodeDestroy(x, op.name, op.exist ?? false));
      case 'flush':
        return one((x) => codec.encodeFlush(x, op.name));
      case 'rename':
        return one((x) => codec.encodeRename(x, op.name, op.to));
      case 'swap':
        return one((x) => codec.encodeSwap(x, op.name, op.with));
      case 'add':
      case 'del':
        for (let from = 0; from < op.elements.length; ) {
          const seq = this.transport.nextSeq();
          const next = codec.writeAdt(buf.w, { seq, protocol }, op.op, op.name, op.type, op.elements, op.exist ?? false, from);
          buf.endOfMessage();
          out.push({ seq, index, span: { from, to: next } });
          from = next;
        }
    }
  }

  /** Sends ops in order, many messages per datagram, each acked; returns every refusal. The
   * kernel handles each message on its own, so a refused op does not stop the ones after it. */
  async run(ops: IpsetOp[]): Promise<OpFailure[]> {
    if (ops.length === 0) return [];
    const protocol = await this.protocol();
    for (const op of ops) if (op.op === 'create') await this.revisionFor(op.type, op.family);
    const outgoing: Outgoing[] = [];
    const buf = new OutgoingBuffer();
    for (let i = 0; i < ops.length; i++) this.encode(ops[i], i, protocol, buf, outgoing);
    this.sent.mutating += outgoing.length;
    const r = await this.transport.transact(buf.datagrams());
    const bySeq = new Map(r.acks.map((a) => [a.seq, a]));
    const failures: OpFailure[] = [];
    for (const o of outgoing) {
      const op = ops[o.index];
      const ack = bySeq.get(o.seq);
      if (ack && ack.errno === 0) continue;
      const errno = ack?.errno ?? 61;
      const code = ack?.code ?? (ack ? `E${errno}` : 'ENODATA');
      const base = { op: op.op, set: op.name, typeName: opTypeName(op), extAck: ack?.extAck };
      if ((op.op === 'add' || op.op === 'del') && o.span && o.span.to - o.span.from > 1) {
        failures.push(...(await this.locate(op, op.elements.slice(o.span.from, o.span.to), o.index, { errno, code, ...base })));
      } else {
        const element = (op.op === 'add' || op.op === 'del') && o.span ? op.elements[o.span.from].key : undefined;
        failures.push({ index: o.index, error: new IpsetError({ errno, code, element, ...base }) });
      }
    }
    return failures;
  }

  /** Names the elements a bulk message was refused for. The kernel stops at the first refused
   * element and does not say which it was (its IPSET_ATTR_LINENO answer echoes the request, which
   * capped acks leave out), so each element of the message is sent again alone with -exist: the
   * ones already applied succeed again, the refused ones name themselves, the rest get applied. */
  private async locate(
    op: Extract<IpsetOp, { op: 'add' | 'del' }>,
    elements: Element[],
    index: number,
    original: { errno: number; code: string; op: IpsetOpName; set: string; typeName?: string; extAck?: string },
  ): Promise<OpFailure[]> {
    const retry = await this.run(elements.map((e) => ({ ...op, elements: [e], exist: true })));
    if (retry.length > 0) return retry.map((f) => ({ index, error: f.error }));
    const range = `one of ${elements.length} elements from ${elements[0].key} to ${elements[elements.length - 1].key}`;
    return [{ index, error: new IpsetError({ ...original, element: range }) }];
  }

  /** Runs ops and throws the first refusal. */
  async apply(ops: IpsetOp[]): Promise<void> {
    const failures = await this.run(ops);
    if (failures.length > 0) throw failures[0].error;
  }

  create(name: string, type: SetType, family: SetFamily, options: SetOptions = {}, exist = false): Promise<void> {
    return this.apply([{ op: 'create', name, type, family, options, exist }]);
  }

  destroy(name: string, exist = false): Promise<void> {
    return this.apply([{ op: 'destroy', name, exist }]);
  }

  flush(name: string): Promise<void> {
    return this.apply([{ op: 'flush', name }]);
  }

  rename(name: string, to: string): Promise<void> {
    return this.apply([{ op: 'rename', name, to }]);
  }

  swap(a: string, b: string): Promise<void> {
    return this.apply([{ op: 'swap', name: a, with: b }]);
  }

  add(name: string, type: SetType, elements: Element[], exist = false): Promise<void> {
    return this.apply([{ op: 'add', name, type, elements, exist }]);
  }

  del(name: string, type: SetType, elements: Element[], exist = false): Promise<void> {
    return this.apply([{ op: 'del', name, type, elements, exist }]);
  }

  /** The IPSET_CMD_HEADER answer: type, family and revision of one set. */
  async describe(name: string): Promise<{ name: string; typeName: string; family: SetFamily | undefined; revision: number }> {
    const m = await this.ask('header', codec.encodeHeaderQuery(await this.header(), name), name);
    return codec.decodeHeaderReply(m);
  }
}
