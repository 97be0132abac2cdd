/** The ruleset generation (NFT_MSG_GETGEN): bumped by every commit, so equal generations before
 * and after a read prove it saw one state, and a batch can be refused if anything changed since. */
import { AttrMap } from '../netlink/attr';
import { NetlinkError } from '../netlink/errors';
import { encodeNfMessage, NLM_F_ACK, NLM_F_REQUEST } from '../netlink/message';
import * as C from './constants';
import { msg } from './objects/codec';
import { NftTransport } from './transport';

export function decodeGeneration(payload: Buffer): number {
  const a = AttrMap.parse(payload, 'gen');
  return a.required(a.be32(C.NFTA_GEN_ID), 'NFTA_GEN_ID');
}

/** Reads the current ruleset generation. */
export async function getGeneration(socket: NftTransport): Promise<number> {
  const req = encodeNfMessage({ type: msg(C.NFT_MSG_GETGEN), flags: NLM_F_REQUEST | NLM_F_ACK, seq: socket.nextSeq(), family: 0 });
  const reply = await socket.transact([req]);
  const failed = reply.acks.find((a) => a.errno !== 0);
  if (failed) throw new NetlinkError({ code: failed.code ?? `E${failed.errno}`, errno: failed.errno, op: 'NFT_MSG_GETGEN' });
  const gen = reply.messages.find((m) => m.type === msg(C.NFT_MSG_NEWGEN));
  if (!gen) throw new NetlinkError({ code: 'EPROTO', errno: 71, op: 'NFT_MSG_GETGEN', message: 'NFT_MSG_GETGEN: no NEWGEN reply' });
  return decodeGeneration(gen.payload);
}
