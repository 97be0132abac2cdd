/** A netlink socket bound to one namespace, with operations serialised in call order. */
import { native, NativeDump, NativeSocket, NativeTransact } from '../native/binding';
import { stamp } from '../observe/latency-trace';
import { DecodeError, NetlinkError } from './errors';
import { decodeNfMessages, NETLINK_NETFILTER, NfMessage } from './message';
import { Netns } from './netns';

export interface Ack {
  seq: number;
  errno: number;
  code?: string;
  extAck?: string;
  offset?: number;
}

export interface TransactReply {
  /** Every ack or error the kernel sent for the datagrams' messages. */
  acks: Ack[];
  /** Every other reply (echoes of created objects). */
  messages: NfMessage[];
}

export interface SocketOptions {
  /** Namespace to open the socket in: a handle or a path. Default: the current namespace. */
  netns?: Netns | string;
  protocol?: number;
  dumpTimeoutMs?: number;
}

/** Up to this many bytes a transact blocks the event loop for tens of microseconds at most. */
const SYNC_TRANSACT_BYTES = 16 * 1024;

function transactResult(raw: NativeTransact): TransactReply {
  const w = raw.ackWords;
  const acks: Ack[] = new Array(w.length >> 1);
  for (let i = 0; i < acks.length; i++) acks[i] = { seq: w[2 * i], errno: w[2 * i + 1] };
  for (const d of raw.ackDetails) acks[d.index] = d.ack;
  return { acks, messages: decodeNfMessages(raw.messages) };
}

function dumpResult(raw: NativeDump, what: string): NfMessage[] {
  if (raw.error) {
    throw new NetlinkError({ code: raw.error.code ?? `E${raw.error.errno}`, errno: raw.error.errno, extAck: raw.error.extAck, op: what });
  }
  try {
    return decodeNfMessages(raw.messages);
  } catch (err) {
    throw new DecodeError(`${what}: ${(err as Error).message}`);
  }
}

export class NetlinkSocket {
  private queue: Promise<unknown> = Promise.resolve();
  /** Operations queued or running. */
  private queued = 0;
  private seq: number;
  private closed = false;
  private readonly dumpTimeoutMs: number;

  private constructor(private readonly sock: NativeSocket, private readonly opts: SocketOptions) {
    this.dumpTimeoutMs = opts.dumpTimeoutMs ?? 30_000;
    // Distinct starting points keep replies of different sockets apart in traces.
    this.seq = Math.floor(Date.now() / 1000) & 0x3fffffff;
  }

  static open(opts: SocketOptions = {}): NetlinkSocket {
    const protocol = opts.protocol ?? NETLINK_NETFILTER;
    let sock: NativeSocket;
    if (typeof opts.netns === 'string') {
      const ns = Netns.open(opts.netns);
      try {
        sock = new (native().NetlinkSocket)(protocol, ns.fd);
      } finally {
        ns.close();
      }
    } else {
      sock = new (native().NetlinkSocket)(protocol, opts.netns ? opts.netns.fd : -1);
    }
    return new NetlinkSocket(sock, opts);
  }

  /** Another socket on the same namespace and protocol, for reads that can run in parallel
   * (a socket carries one dump at a time). The namespace handle must still be open. */
  sibling(): NetlinkSocket {
    return NetlinkSocket.open(this.opts);
  }

  get portId(): number {
    return this.sock.portId;
  }

  /** Sequence numbers for messages built by callers; wraps within 32 bits. */
  nextSeq(): number {
    this.seq = (this.seq + 1) >>> 0;
    return this.seq;
  }

  /** Runs op after the operations queued before it; on an idle socket at once, so a small
   * commit reaches the kernel in the same turn as the change that made it (a promise hop
   * waited for Node's stream bookkeeping of the read that carried the event). */
  private serial<T>(op: () => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new Error('netlink socket is closed'));
    this.queued++;
    const run = this.queued === 1 ? op() : this.queue.then(op, op);
    this.queue = run.then(
      () => void this.queued--,
      () => void this.queued--,
    );
    return run;
  }

  /** Sends each datagram with one sendmsg and returns the kernel's acks and echoes. Small
   * exchanges run on the calling thread: the kernel answers them within sendmsg, quicker than a
   * trip to a worker thread and back. */
  transact(datagrams: Buffer[]): Promise<TransactReply> {
    let bytes = 0;
    for (const d of datagrams) bytes += d.length;
    return this.serial(async () => {
      stamp('send');
      const raw = bytes <= SYNC_TRANSACT_BYTES ? this.sock.transactSync(datagrams) : await this.sock.transact(datagrams);
      stamp('acked');
      return transactResult(raw);
    });
  }

  /** Runs one dump request to completion; a kernel error becomes a NetlinkError. */
  dump(request: Buffer, what = 'dump'): Promise<NfMessage[]> {
    return this.serial(async () => dumpResult(await this.sock.dump(request, this.dumpTimeoutMs), what));
  }

  /** Runs several dump requests back to back in one trip to the I/O thread; results in order.
   * what(i) names request i in errors. `small`: the caller knows the replies are small (a few
   * chains it just wrote), so they are read on the calling thread, without the trip. */
  dumpAll(requests: Buffer[], what: (i: number) => string, opts: { small?: boolean } = {}): Promise<NfMessage[][]> {
    if (requests.length === 0) return Promise.resolve([]);
    return this.serial(async () => {
      const raw = opts.small ? this.sock.dumpAllSync(requests, this.dumpTimeoutMs) : await this.sock.dumpAll(requests, this.dumpTimeoutMs);
      return raw.map((r, i) => dumpResult(r, what(i)));
    });
  }

  /** From now on every message the kernel sends to this socket unasked (nfnetlink_log packets)
   * goes to onMessages, read on the event loop when the socket is readable: never blocking, no
   * thread. The socket must carry no request of its own meanwhile. Ends with close(). */
  listen(onMessages: (messages: Buffer, overruns: number, errno: number) => void): void {
    if (this.closed) throw new Error('netlink socket is closed');
    this.sock.listen(onMessages);
  }

  /** Joins a multicast group (NFNLGRP_NFTABLES: every ruleset change, and each commit's
   * NFT_MSG_NEWGEN); its messages go to listen(). */
  joinGroup(group: number): void {
    if (this.closed) throw new Error('netlink socket is closed');
    this.sock.joinGroup(group);
  }

  /** Queues only the datagrams a classic BPF program (struct sock_filter[]) accepts: a listener
   * is then woken only for those. */
  attachFilter(program: Buffer): void {
    if (this.closed) throw new Error('netlink socket is closed');
    this.sock.attachFilter(program);
  }

  /** Closes once every queued operation has finished. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.queue;
    this.sock.close();
  }
}
