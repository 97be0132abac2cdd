/** Classic BPF socket filters (SO_ATTACH_FILTER) for netlink listeners: the kernel runs them on
 * each datagram before queueing it, so a listener is woken only for what it wants. */

/** struct sock_filter: { u16 code; u8 jt; u8 jf; u32 k } (linux/filter.h). */
export type SockFilter = [code: number, jt: number, jf: number, k: number];

/** linux/bpf_common.h */
const BPF_LD = 0x00;
const BPF_JMP = 0x05;
const BPF_RET = 0x06;
const BPF_H = 0x08;
const BPF_ABS = 0x20;
const BPF_JEQ = 0x10;
const BPF_K = 0x00;

/** Bytes of a datagram a filter's accept keeps (any netlink datagram fits). */
const KEEP_ALL = 0x40000;
/** struct nlmsghdr: nlmsg_type follows the 4-byte length. */
const NLMSG_TYPE_OFFSET = 4;

export function encodeSockFilter(insns: SockFilter[]): Buffer {
  const out = Buffer.alloc(insns.length * 8);
  insns.forEach(([code, jt, jf, k], i) => {
    out.writeUInt16LE(code, i * 8);
    out.writeUInt8(jt, i * 8 + 2);
    out.writeUInt8(jf, i * 8 + 3);
    out.writeUInt32LE(k >>> 0, i * 8 + 4);
  });
  return out;
}

/** Accepts the datagrams whose first message is of `type` (nfnetlink: subsystem << 8 | message),
 * drops the rest. BPF_ABS loads read big-endian; nlmsg_type is little-endian on the wire of
 * every host nfkube ships for (x64, arm64). */
export function acceptFirstMessageType(type: number): Buffer {
  const wire = Buffer.alloc(2);
  wire.writeUInt16LE(type);
  return encodeSockFilter([
    [BPF_LD | BPF_H | BPF_ABS, 0, 0, NLMSG_TYPE_OFFSET],
    [BPF_JMP | BPF_JEQ | BPF_K, 0, 1, wire.readUInt16BE()],
    [BPF_RET | BPF_K, 0, 0, KEEP_ALL],
    [BPF_RET | BPF_K, 0, 0, 0],
  ]);
}
