/** nfnetlink_log on the wire: the config requests that bind a socket to a log group, and the
 * decoder of NFULNL_MSG_PACKET, one descriptor per NFULA_* attribute in a table keyed by
 * attribute. Packet messages come from the kernel unasked: every length is checked, anything
 * that does not fit is a DecodeError, and an attribute nfkube does not know is skipped. */
import { Attr, AttrMap, AttrWriter } from '../netlink/attr';
import { DecodeError } from '../netlink/errors';
import { AF_INET, AF_INET6, AF_UNSPEC, nfMsgType, NfMessage, NLM_F_ACK, NLM_F_REQUEST } from '../netlink/message';
import * as C from './constants';

export const NFULNL_CONFIG_TYPE = nfMsgType(C.NFNL_SUBSYS_ULOG, C.NFULNL_MSG_CONFIG);
export const NFULNL_PACKET_TYPE = nfMsgType(C.NFNL_SUBSYS_ULOG, C.NFULNL_MSG_PACKET);

/** What one group's instance is asked to do. */
export interface NflogConfig {
  group: number;
  /** Bytes of each packet copied to the listener (NFULNL_COPY_PACKET); headers need ~128. */
  copyRange: number;
  /** Flush after this many packets are queued (NFULA_CFG_QTHRESH)... */
  qthreshold: number;
  /** ...or after this long, in 1/100 s (NFULA_CFG_TIMEOUT). */
  timeoutCs: number;
}

/** The requests, each asking for an ack, that bind the socket to `group` and set its copy mode:
 * the per-family bind (a no-op since Linux 3.17, required before), the group bind, the mode,
 * the flush threshold and timeout. One datagram: the kernel handles them in order. */
export function bindRequests(cfg: NflogConfig, nextSeq: () => number): Buffer {
  const w = new AttrWriter(256);
  const message = (family: number, resId: number, fill: (w: AttrWriter) => void) => {
    const at = w.beginMessage(NFULNL_CONFIG_TYPE, NLM_F_REQUEST | NLM_F_ACK, nextSeq(), family, resId);
    fill(w);
    w.endMessage(at);
  };
  const cmd = (command: number) => (x: AttrWriter) => x.bytes(C.NFULA_CFG_CMD, Buffer.from([command]));
  for (const family of [AF_INET, AF_INET6]) message(family, 0, cmd(C.NFULNL_CFG_CMD_PF_BIND));
  message(AF_UNSPEC, cfg.group, cmd(C.NFULNL_CFG_CMD_BIND));
  message(AF_UNSPEC, cfg.group, (x) => {
    // struct nfulnl_msg_config_mode { __be32 copy_range; __u8 copy_mode; __u8 _pad; } (packed)
    const mode = Buffer.alloc(6);
    mode.writeUInt32BE(cfg.copyRange, 0);
    mode[4] = C.NFULNL_COPY_PACKET;
    x.bytes(C.NFULA_CFG_MODE, mode);
    x.be32(C.NFULA_CFG_QTHRESH, cfg.qthreshold);
    x.be32(C.NFULA_CFG_TIMEOUT, cfg.timeoutCs);
  });
  return w.finish();
}

/** The request that releases the group (closing the socket releases it too). */
export function unbindRequest(group: number, seq: number): Buffer {
  const w = new AttrWriter(64);
  const at = w.beginMessage(NFULNL_CONFIG_TYPE, NLM_F_REQUEST | NLM_F_ACK, seq, AF_UNSPEC, group);
  w.bytes(C.NFULA_CFG_CMD, Buffer.from([C.NFULNL_CFG_CMD_UNBIND]));
  w.endMessage(at);
  return w.finish();
}

/** One logged packet as the kernel reports it. */
export interface NflogPacket {
  /** The log group (nfgenmsg res_id). */
  group: number;
  /** NFPROTO_* of the packet (NFPROTO_IPV4, NFPROTO_IPV6, NFPROTO_BRIDGE). */
  family: number;
  /** NFULA_PACKET_HDR: ethertype and the netfilter hook the packet was logged at. */
  hwProtocol?: number;
  hook?: number;
  mark?: number;
  /** NFULA_TIMESTAMP as seconds since the epoch (with microseconds). */
  timestamp?: number;
  indev?: number;
  outdev?: number;
  physindev?: number;
  physoutdev?: number;
  hwAddr?: Buffer;
  /** The network header onwards, up to the copy range. */
  payload?: Buffer;
  prefix?: string;
  uid?: number;
  gid?: number;
  seq?: number;
  seqGlobal?: number;
  hwType?: number;
  hwHeader?: Buffer;
}

interface AttrDescriptor {
  name: string;
  /** Smallest payload the kernel sends for it. */
  size: number;
  read(a: Attr, p: NflogPacket): void;
}

const be32 = (a: Attr) => a.buf.readUInt32BE(a.start);
const be16 = (a: Attr) => a.buf.readUInt16BE(a.start);

/** Keyed by NFULA_*; attributes absent here (conntrack, VLAN, L2 header) are skipped. */
const PACKET_ATTRS: Record<number, AttrDescriptor> = {
  [C.NFULA_PACKET_HDR]: {
    name: 'NFULA_PACKET_HDR',
    size: 4,
    read(a, p) {
      p.hwProtocol = be16(a);
      p.hook = a.buf[a.start + 2];
    },
  },
  [C.NFULA_MARK]: { name: 'NFULA_MARK', size: 4, read: (a, p) => void (p.mark = be32(a)) },
  [C.NFULA_TIMESTAMP]: {
    name: 'NFULA_TIMESTAMP',
    size: 16,
    read(a, p) {
      p.timestamp = Number(a.buf.readBigUInt64BE(a.start)) + Number(a.buf.readBigUInt64BE(a.start + 8)) / 1e6;
    },
  },
  [C.NFULA_IFINDEX_INDEV]: { name: 'NFULA_IFINDEX_INDEV', size: 4, read: (a, p) => void (p.indev = be32(a)) },
  [C.NFULA_IFINDEX_OUTDEV]: { name: 'NFULA_IFINDEX_OUTDEV', size: 4, read: (a, p) => void (p.outdev = be32(a)) },
  [C.NFULA_IFINDEX_PHYSINDEV]: { name: 'NFULA_IFINDEX_PHYSINDEV', size: 4, read: (a, p) => void (p.physindev = be32(a)) },
  [C.NFULA_IFINDEX_PHYSOUTDEV]: { name: 'NFULA_IFINDEX_PHYSOUTDEV', size: 4, read: (a, p) => void (p.physoutdev = be32(a)) },
  [C.NFULA_HWADDR]: {
    name: 'NFULA_HWADDR',
    size: 4,
    // struct nfulnl_msg_packet_hw { __be16 hw_addrlen; __u16 _pad; __u8 hw_addr[8]; }
    read(a, p) {
      const len = be16(a);
      if (len > 8 || a.length < 4 + len) throw new DecodeError(`NFULA_HWADDR: address length ${len} does not fit ${a.length} bytes`);
      p.hwAddr = Buffer.from(a.buf.subarray(a.start + 4, a.start + 4 + len));
    },
  },
  [C.NFULA_PAYLOAD]: { name: 'NFULA_PAYLOAD', size: 0, read: (a, p) => void (p.payload = a.data) },
  [C.NFULA_PREFIX]: { name: 'NFULA_PREFIX', size: 0, read: (a, p) => void (p.prefix = a.text()) },
  [C.NFULA_UID]: { name: 'NFULA_UID', size: 4, read: (a, p) => void (p.uid = be32(a)) },
  [C.NFULA_GID]: { name: 'NFULA_GID', size: 4, read: (a, p) => void (p.gid = be32(a)) },
  [C.NFULA_SEQ]: { name: 'NFULA_SEQ', size: 4, read: (a, p) => void (p.seq = be32(a)) },
  [C.NFULA_SEQ_GLOBAL]: { name: 'NFULA_SEQ_GLOBAL', size: 4, read: (a, p) => void (p.seqGlobal = be32(a)) },
  [C.NFULA_HWTYPE]: { name: 'NFULA_HWTYPE', size: 2, read: (a, p) => void (p.hwType = be16(a)) },
  [C.NFULA_HWHEADER]: { name: 'NFULA_HWHEADER', size: 0, read: (a, p) => void (p.hwHeader = a.data) },
};

/** Decodes one NFULNL_MSG_PACKET. */
export function decodePacket(m: NfMessage): NflogPacket {
  if (m.type !== NFULNL_PACKET_TYPE) throw new DecodeError(`not an nfnetlink_log packet: message type 0x${m.type.toString(16)}`);
  const p: NflogPacket = { group: m.resId, family: m.family };
  for (const a of AttrMap.parse(m.payload, 'NFULNL_MSG_PACKET').list) {
    const d = PACKET_ATTRS[a.type];
    if (!d) continue;
    if (a.length < d.size) throw new DecodeError(`${d.name}: ${a.length} bytes, expected at least ${d.size}`);
    d.read(a, p);
  }
  return p;
}
