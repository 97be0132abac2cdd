/** What a batch is sent over: a NetlinkSocket is one; a test records batches with its own. */
import type { TransactReply } from '../netlink/socket';

export interface NftTransport {
  transact(datagrams: Buffer[]): Promise<TransactReply>;
  nextSeq(): number;
}
