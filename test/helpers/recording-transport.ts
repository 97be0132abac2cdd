/** A netlink transport with no kernel: records every batch commit() sends and answers as the
 * kernel would (an ack for each message that asks for one, an error for those told to fail), so
 * transactions are unit-tested without root or the addon. */
import type { Ack, TransactReply } from '../../src/netlink/socket';
import { decodeNfMessages, NfMessage, NLM_F_ACK } from '../../src/netlink/message';
import type { NftTransport } from '../../src/nft/transport';

export interface Refusal {
  /** Index of the message to refuse within the batch, counting BEGIN as 0. */
  message: number;
  errno: number;
  code: string;
  extAck?: string;
}

export class RecordingTransport implements NftTransport {
  /** Every datagram sent, in order. */
  readonly sent: Buffer[] = [];
  private seq = 0;

  /** `refuse`: the message to answer with an error; `unacknowledged`: answer nothing at all. */
  constructor(private readonly answer: { refuse?: Refusal; unacknowledged?: boolean } = {}) {}

  nextSeq(): number {
    return ++this.seq;
  }

  /** The messages of the last datagram. */
  get lastBatch(): NfMessage[] {
    return decodeNfMessages(this.sent[this.sent.length - 1]);
  }

  async transact(datagrams: Buffer[]): Promise<TransactReply> {
    const acks: Ack[] = [];
    for (const d of datagrams) {
      this.sent.push(d);
      if (this.answer.unacknowledged) continue;
      const refuse = this.answer.refuse;
      decodeNfMessages(d).forEach((m, i) => {
        if (refuse?.message === i) acks.push({ seq: m.seq, errno: refuse.errno, code: refuse.code, extAck: refuse.extAck });
        else if (m.flags & NLM_F_ACK) acks.push({ seq: m.seq, errno: 0 });
      });
    }
    return { acks, messages: [] };
  }
}
