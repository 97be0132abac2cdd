/** Conntrack over netlink (NETLINK_NETFILTER, ctnetlink): dump a family's entries and delete
 * chosen ones, through the same native socket as nf_tables. Used by the service proxy to drop
 * UDP flows pinned to endpoints that are gone (kube-proxy's conntrack cleanup) without the
 * conntrack binary. */
import { DecodeError } from '../netlink/errors';
import { NfMessage, packDatagrams } from '../netlink/message';
import type { TransactReply } from '../netlink/socket';
import { CtEntry, decodeEntry, encodeDelete, encodeDump } from './codec';
import type { IpFamily } from '../net/ip';

export interface ConntrackTransport {
  transact(datagrams: Buffer[]): Promise<TransactReply>;
  dump(request: Buffer, what?: string): Promise<NfMessage[]>;
  nextSeq(): number;
}

export interface DeleteResult {
  deleted: number;
  /** Gone already (expired, or deleted by someone else): not an error. */
  missing: number;
  /** Refused for another reason, with the kernel's code. */
  failed: { entry: CtEntry; code: string }[];
}

const ENOENT = 2;
const MAX_DATAGRAM_BYTES = 64 * 1024;

export class ConntrackClient {
  /** Entries of the last dump that did not decode (untrusted bytes are skipped, never fatal). */
  undecodable = 0;

  constructor(private readonly transport: ConntrackTransport) {}

  async dump(family: IpFamily): Promise<CtEntry[]> {
    const messages = await this.transport.dump(encodeDump(family, this.transport.nextSeq()), `conntrack ${family} dump`);
    const out: CtEntry[] = [];
    this.undecodable = 0;
    for (const m of messages) {
      try {
        out.push(decodeEntry(m));
      } catch (err) {
        if (!(err instanceof DecodeError)) throw err;
        this.undecodable++;
      }
    }
    return out;
  }

  async delete(entries: CtEntry[]): Promise<DeleteResult> {
    const result: DeleteResult = { deleted: 0, missing: 0, failed: [] };
    if (entries.length === 0) return result;
    const bySeq = new Map<number, CtEntry>();
    const messages = entries.map((e) => {
      const seq = this.transport.nextSeq();
      bySeq.set(seq, e);
      return encodeDelete(e, seq);
    });
    const r = await this.transport.transact(packDatagrams(messages, MAX_DATAGRAM_BYTES));
    for (const ack of r.acks) {
      const e = bySeq.get(ack.seq);
      if (!e) continue;
      if (ack.errno === 0) result.deleted++;
      else if (ack.errno === ENOENT) result.missing++;
      else result.failed.push({ entry: e, code: ack.code ?? `E${ack.errno}` });
    }
    return result;
  }
}
