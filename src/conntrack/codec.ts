/** ctnetlink messages as plain data: the conntrack tuples nfkube reads (addresses, protocol,
 * ports) and the requests it sends (dump, delete by original tuple). Attributes are read through
 * one table per nest keyed by kernel attribute, as the other codecs do; replies are untrusted
 * bytes: a malformed one is a DecodeError, never a crash. */
import { AttrMap, AttrWriter } from '../netlink/attr';
import { DecodeError } from '../netlink/errors';
import { AF_INET, AF_INET6, encodeNfMessage, nfMsgType, NfMessage, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST } from '../netlink/message';
import { formatIPv4, formatIPv6, ipv4, ipv6 } from '../net/ip-bytes';
import * as C from './constants';
import type { IpFamily } from '../net/ip';


export interface CtTuple {
  src: string;
  dst: string;
  /** IPPROTO_* */
  proto: number;
  /** Absent for protocols without ports. */
  srcPort?: number;
  dstPort?: number;
  zone?: number;
}

export interface CtEntry {
  family: IpFamily;
  orig: CtTuple;
  reply: CtTuple;
  id?: number;
  mark?: number;
  zone?: number;
}

type TupleField = (t: Partial<CtTuple>, a: AttrMap, type: number, family: IpFamily) => void;

const addr = (family: IpFamily, want: IpFamily, a: AttrMap, type: number, name: string): string => {
  if (family !== want) throw new DecodeError(`conntrack: ${name} in an ${family === 'v4' ? 'IPv4' : 'IPv6'} entry`);
  const b = a.bytes(type)!;
  if (b.length !== (want === 'v4' ? 4 : 16)) throw new DecodeError(`conntrack: ${name} has ${b.length} bytes`);
  return want === 'v4' ? formatIPv4(b) : formatIPv6(b);
};

/** CTA_TUPLE_IP members. */
const IP_ATTRS: Record<number, TupleField> = {
  [C.CTA_IP_V4_SRC]: (t, a, type, f) => (t.src = addr(f, 'v4', a, type, 'CTA_IP_V4_SRC')),
  [C.CTA_IP_V4_DST]: (t, a, type, f) => (t.dst = addr(f, 'v4', a, type, 'CTA_IP_V4_DST')),
  [C.CTA_IP_V6_SRC]: (t, a, type, f) => (t.src = addr(f, 'v6', a, type, 'CTA_IP_V6_SRC')),
  [C.CTA_IP_V6_DST]: (t, a, type, f) => (t.dst = addr(f, 'v6', a, type, 'CTA_IP_V6_DST')),
};

/** CTA_TUPLE_PROTO members (ICMP id/type/code are not read). */
const PROTO_ATTRS: Record<number, TupleField> = {
  [C.CTA_PROTO_NUM]: (t, a, type) => (t.proto = a.u8(type)),
  [C.CTA_PROTO_SRC_PORT]: (t, a, type) => (t.srcPort = a.be16(type)),
  [C.CTA_PROTO_DST_PORT]: (t, a, type) => (t.dstPort = a.be16(type)),
};

function readMembers(table: Record<number, TupleField>, map: AttrMap, t: Partial<CtTuple>, family: IpFamily): void {
  for (const attr of map.list) {
    const field = table[attr.type];
    if (field) field(t, map, attr.type, family);
  }
}

function decodeTuple(map: AttrMap | undefined, what: string, family: IpFamily): CtTuple {
  if (!map) throw new DecodeError(`conntrack: missing ${what}`);
  const t: Partial<CtTuple> = {};
  const ip = map.nested(C.CTA_TUPLE_IP);
  const proto = map.nested(C.CTA_TUPLE_PROTO);
  if (!ip || !proto) throw new DecodeError(`conntrack: ${what} lacks CTA_TUPLE_IP or CTA_TUPLE_PROTO`);
  readMembers(IP_ATTRS, ip, t, family);
  readMembers(PROTO_ATTRS, proto, t, family);
  const zone = map.be16(C.CTA_TUPLE_ZONE);
  if (zone !== undefined) t.zone = zone;
  if (t.src === undefined || t.dst === undefined || t.proto === undefined) throw new DecodeError(`conntrack: ${what} is incomplete`);
  return t as CtTuple;
}

const FAMILIES: Record<number, IpFamily> = { [AF_INET]: 'v4', [AF_INET6]: 'v6' };
const AF: Record<IpFamily, number> = { v4: AF_INET, v6: AF_INET6 };

/** One conntrack entry from a dump or event message. Throws DecodeError on malformed bytes. */
export function decodeEntry(m: NfMessage): CtEntry {
  if (m.type >> 8 !== C.NFNL_SUBSYS_CTNETLINK) throw new DecodeError(`conntrack: message type 0x${m.type.toString(16)} is not ctnetlink`);
  const family = FAMILIES[m.family];
  if (!family) throw new DecodeError(`conntrack: unknown address family ${m.family}`);
  const a = AttrMap.parse(m.payload, 'conntrack entry');
  const e: CtEntry = {
    family,
    orig: decodeTuple(a.nested(C.CTA_TUPLE_ORIG), 'CTA_TUPLE_ORIG', family),
    reply: decodeTuple(a.nested(C.CTA_TUPLE_REPLY), 'CTA_TUPLE_REPLY', family),
  };
  const id = a.be32(C.CTA_ID);
  if (id !== undefined) e.id = id;
  const mark = a.be32(C.CTA_MARK);
  if (mark !== undefined) e.mark = mark;
  const zone = a.be16(C.CTA_ZONE);
  if (zone !== undefined) e.zone = zone;
  return e;
}

function writeTuple(w: AttrWriter, type: number, family: IpFamily, t: CtTuple): void {
  w.nest(type, (tw) => {
    tw.nest(C.CTA_TUPLE_IP, (iw) => {
      if (family === 'v4') iw.bytes(C.CTA_IP_V4_SRC, ipv4(t.src)).bytes(C.CTA_IP_V4_DST, ipv4(t.dst));
      else iw.bytes(C.CTA_IP_V6_SRC, ipv6(t.src)).bytes(C.CTA_IP_V6_DST, ipv6(t.dst));
    });
    tw.nest(C.CTA_TUPLE_PROTO, (pw) => {
      pw.u8(C.CTA_PROTO_NUM, t.proto);
      if (t.srcPort !== undefined) pw.be16(C.CTA_PROTO_SRC_PORT, t.srcPort);
      if (t.dstPort !== undefined) pw.be16(C.CTA_PROTO_DST_PORT, t.dstPort);
    });
    if (t.zone !== undefined) tw.be16(C.CTA_TUPLE_ZONE, t.zone);
  });
}

const ctMsg = (m: number) => nfMsgType(C.NFNL_SUBSYS_CTNETLINK, m);

/** Dump every conntrack entry of one family. */
export function encodeDump(family: IpFamily, seq: number): Buffer {
  return encodeNfMessage({ type: ctMsg(C.IPCTNL_MSG_CT_GET), flags: NLM_F_REQUEST | NLM_F_DUMP, seq, family: AF[family] });
}

/** Delete the entry whose original tuple this is (with its id when known: never a newer one
 * that reused the tuple). */
export function encodeDelete(e: Pick<CtEntry, 'family' | 'orig' | 'id' | 'zone'>, seq: number): Buffer {
  const w = new AttrWriter();
  writeTuple(w, C.CTA_TUPLE_ORIG, e.family, e.orig);
  if (e.id !== undefined) w.be32(C.CTA_ID, e.id);
  if (e.zone !== undefined) w.be16(C.CTA_ZONE, e.zone);
  return encodeNfMessage({ type: ctMsg(C.IPCTNL_MSG_CT_DELETE), flags: NLM_F_REQUEST | NLM_F_ACK, seq, family: AF[e.family], payload: w.finish() });
}
