/** nlmsghdr (linux/netlink.h) and nfgenmsg (linux/netfilter/nfnetlink.h) framing. */
import { DecodeError } from './errors';

export const NETLINK_NETFILTER = 12;

export const NLMSG_HDRLEN = 16;
export const NFGENMSG_LEN = 4;

export const NLMSG_NOOP = 1;
export const NLMSG_ERROR = 2;
export const NLMSG_DONE = 3;
export const NLMSG_MIN_TYPE = 0x10;

export const NLM_F_REQUEST = 0x01;
export const NLM_F_MULTI = 0x02;
export const NLM_F_ACK = 0x04;
export const NLM_F_ECHO = 0x08;
export const NLM_F_DUMP_INTR = 0x10;
// Modifiers to GET requests
export const NLM_F_ROOT = 0x100;
export const NLM_F_MATCH = 0x200;
export const NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH;
// Modifiers to NEW requests
export const NLM_F_REPLACE = 0x100;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;
export const NLM_F_APPEND = 0x800;
// Modifiers to DELETE requests
export const NLM_F_NONREC = 0x100;

export const NFNETLINK_V0 = 0;

// linux/netfilter/nfnetlink.h
export const NFNL_SUBSYS_IPSET = 6;
export const NFNL_SUBSYS_NFTABLES = 10;
export const NFNL_MSG_BATCH_BEGIN = NLMSG_MIN_TYPE;
export const NFNL_MSG_BATCH_END = NLMSG_MIN_TYPE + 1;
export const NFNL_BATCH_GENID = 1;

export const AF_UNSPEC = 0;
export const AF_INET = 2;
export const AF_INET6 = 10;

/** A decoded nfnetlink message: header fields, nfgenmsg, and its attribute bytes. */
export interface NfMessage {
  type: number;
  flags: number;
  seq: number;
  pid: number;
  family: number;
  version: number;
  resId: number;
  /** Attribute stream after nfgenmsg. */
  payload: Buffer;
}

export interface NfMessageSpec {
  type: number;
  flags: number;
  seq: number;
  family: number;
  resId?: number;
  payload?: Buffer;
}

export function nfMsgType(subsys: number, msg: number): number {
  return (subsys << 8) | msg;
}

/** Writes nlmsghdr + nfgenmsg at `at`; nlmsg_len is set to `len` (patched later by streaming
 * writers once the payload is known). */
export function writeNfHeader(b: Buffer, at: number, len: number, spec: Omit<NfMessageSpec, 'payload'>): void {
  b.writeUInt32LE(len, at);
  b.writeUInt16LE(spec.type, at + 4);
  b.writeUInt16LE(spec.flags, at + 6);
  b.writeUInt32LE(spec.seq >>> 0, at + 8);
  b.writeUInt32LE(0, at + 12);
  b.writeUInt8(spec.family, at + 16);
  b.writeUInt8(NFNETLINK_V0, at + 17);
  b.writeUInt16BE(spec.resId ?? 0, at + 18);
}

export function encodeNfMessage(spec: NfMessageSpec): Buffer {
  const payload = spec.payload ?? Buffer.alloc(0);
  const len = NLMSG_HDRLEN + NFGENMSG_LEN + payload.length;
  const b = Buffer.alloc((len + 3) & ~3);
  writeNfHeader(b, 0, len, spec);
  payload.copy(b, NLMSG_HDRLEN + NFGENMSG_LEN);
  return b;
}

/** Splits a buffer of concatenated netlink messages. Never reads past a bound; throws DecodeError. */
export function decodeNfMessages(buf: Buffer): NfMessage[] {
  const out: NfMessage[] = [];
  let pos = 0;
  while (pos < buf.length) {
    if (buf.length - pos < NLMSG_HDRLEN) throw new DecodeError(`truncated netlink header at offset ${pos}`);
    const len = buf.readUInt32LE(pos);
    if (len < NLMSG_HDRLEN || pos + len > buf.length) {
      throw new DecodeError(`netlink message at offset ${pos} has bad length ${len}`);
    }
    const type = buf.readUInt16LE(pos + 4);
    const hasGen = len >= NLMSG_HDRLEN + NFGENMSG_LEN;
    out.push({
      type,
      flags: buf.readUInt16LE(pos + 6),
      seq: buf.readUInt32LE(pos + 8),
      pid: buf.readUInt32LE(pos + 12),
      family: hasGen ? buf.readUInt8(pos + 16) : 0,
      version: hasGen ? buf.readUInt8(pos + 17) : 0,
      resId: hasGen ? buf.readUInt16BE(pos + 18) : 0,
      payload: buf.subarray(pos + (hasGen ? NLMSG_HDRLEN + NFGENMSG_LEN : NLMSG_HDRLEN), pos + len),
    });
    pos += (len + 3) & ~3;
  }
  return out;
}

/** Netlink messages packed into as few datagrams as fit `maxBytes` each (a message larger than
 * that goes alone); the kernel acks each message whatever datagram carried it. */
export function packDatagrams(messages: readonly Buffer[], maxBytes: number): Buffer[] {
  const out: Buffer[] = [];
  let cur: Buffer[] = [];
  let size = 0;
  for (const m of messages) {
    if (cur.length > 0 && size + m.length > maxBytes) {
      out.push(Buffer.concat(cur));
      cur = [];
      size = 0;
    }
    cur.push(m);
    size += m.length;
  }
  if (cur.length > 0) out.push(Buffer.concat(cur));
  return out;
}
