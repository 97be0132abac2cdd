/** A subscription to one nfnetlink_log group: its own NETLINK_NETFILTER socket, bound to the
 * group with a small copy range, read on the event loop whenever the kernel has packets for it
 * (never blocking, no thread). Decoded packets go to onPacket; lost and malformed ones are
 * counted and reported, never thrown. Closing the socket releases the group in the kernel. */
import { NetlinkError } from '../netlink/errors';
import { decodeNfMessages } from '../netlink/message';
import { Netns } from '../netlink/netns';
import { NetlinkSocket } from '../netlink/socket';
import { bindRequests, decodePacket, NflogConfig, NflogPacket, NFULNL_PACKET_TYPE } from './codec';

export interface NflogSubscriptionOptions {
  group: number;
  /** Namespace to listen in (the one whose rules log). Default: the current one. */
  netns?: Netns | string;
  /** Bytes of each packet copied: enough for IPv6 with a few extension headers and the ports. */
  copyRange?: number;
  qthreshold?: number;
  timeoutCs?: number;
  onPacket(p: NflogPacket): void;
  /** Packets the kernel could not deliver (receive queue full), bytes that did not decode, a
   * failed read. */
  onTrouble?(t: { kind: 'overrun' | 'decode' | 'read'; count: number; err?: unknown }): void;
}

export interface NflogStats {
  packets: number;
  overruns: number;
  decodeErrors: number;
}

export class NflogSubscription {
  readonly stats: NflogStats = { packets: 0, overruns: 0, decodeErrors: 0 };

  private constructor(private readonly socket: NetlinkSocket) {}

  /** Binds the group; fails with a NetlinkError naming it when the kernel refuses (EPERM: another
   * listener, such as ulogd, holds the group in this namespace). */
  static async open(opts: NflogSubscriptionOptions): Promise<NflogSubscription> {
    if (!Number.isInteger(opts.group) || opts.group < 0 || opts.group > 0xffff) throw new Error(`nflog group ${opts.group} is not 0..65535`);
    const cfg: NflogConfig = { group: opts.group, copyRange: opts.copyRange ?? 128, qthreshold: opts.qthreshold ?? 32, timeoutCs: opts.timeoutCs ?? 5 };
    const socket = NetlinkSocket.open({ netns: opts.netns });
    try {
      const reply = await socket.transact([bindRequests(cfg, () => socket.nextSeq())]);
      const failed = reply.acks.find((a) => a.errno !== 0);
      if (failed) {
        const code = failed.code ?? `E${failed.errno}`;
        const held = code === 'EPERM' ? ' (another socket, such as ulogd or another agent, is bound to this group in this network namespace)' : '';
        throw new NetlinkError({ code, errno: failed.errno, extAck: failed.extAck, op: 'NFULNL_MSG_CONFIG', object: `nflog group ${opts.group}`, message: `NFULNL_MSG_CONFIG nflog group ${opts.group}: ${code}${failed.extAck ? ` (${failed.extAck})` : ''}${held}` });
      }
    } catch (err) {
      await socket.close();
      throw err;
    }
    const sub = new NflogSubscription(socket);
    socket.listen((raw, overruns, errno) => sub.receive(raw, overruns, errno, opts));
    return sub;
  }

  private receive(raw: Buffer, overruns: number, errno: number, opts: NflogSubscriptionOptions): void {
    if (overruns > 0) {
      this.stats.overruns += overruns;
      opts.onTrouble?.({ kind: 'overrun', count: overruns });
    }
    if (errno !== 0) opts.onTrouble?.({ kind: 'read', count: 1, err: new NetlinkError({ code: `E${errno}`, errno, op: 'recvmsg', object: 'nflog socket' }) });
    if (raw.length === 0) return;
    let messages;
    try {
      messages = decodeNfMessages(raw);
    } catch (err) {
      this.stats.decodeErrors++;
      opts.onTrouble?.({ kind: 'decode', count: 1, err });
      return;
    }
    for (const m of messages) {
      if (m.type !== NFULNL_PACKET_TYPE) continue;
      let p: NflogPacket;
      try {
        p = decodePacket(m);
      } catch (err) {
        this.stats.decodeErrors++;
        opts.onTrouble?.({ kind: 'decode', count: 1, err });
        continue;
      }
      this.stats.packets++;
      opts.onPacket(p);
    }
  }

  async close(): Promise<void> {
    await this.socket.close();
  }
}
