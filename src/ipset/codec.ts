/** ipset netlink messages (NFNL_SUBSYS_IPSET): pure encoders for every command and decoders for
 * the kernel's replies. Every message carries IPSET_ATTR_PROTOCOL; decoders throw DecodeError. */
import { align4, AttrMap, AttrWriter, NLA_F_NET_BYTEORDER, NLA_HDRLEN, NLA_TYPE_MASK } from '../netlink/attr';
import { DecodeError } from '../netlink/errors';
import {
  AF_INET,
  encodeNfMessage,
  nfMsgType,
  NFNL_SUBSYS_IPSET,
  NfMessage,
  NLM_F_ACK,
  NLM_F_DUMP,
  NLM_F_EXCL,
  NLM_F_REQUEST,
} from '../netlink/message';
import * as C from './constants';
import { parseDottedQuad } from '../net/ip-text';
import { NFPROTO_IPV4, NFPROTO_IPV6, NFPROTO_UNSPEC } from '../net/protocols';
import { Addr, elementKey, ElementSyntaxError, parseMember } from './element';
import { Element, IpsetSet, isSetType, SetFamily, SetOptions, SetType, supportsNomatch } from './types';

const NBO = NLA_F_NET_BYTEORDER;
const NFPROTO: Record<SetFamily, number> = { unspec: NFPROTO_UNSPEC, inet: NFPROTO_IPV4, inet6: NFPROTO_IPV6 };

/** Newest revision of each type whose attributes this codec writes; the client lowers it to what
 * the kernel reports with IPSET_CMD_TYPE. */
export const KNOWN_REVISION: Record<SetType, number> = {
  'hash:ip': 6,
  'hash:net': 7,
  'hash:ip,port': 7,
  'hash:net,port': 8,
  'hash:ip,port,ip': 6,
  'hash:ip,port,net': 8,
  'list:set': 3,
  'bitmap:port': 3,
};

export function familyOf(type: SetType, family?: 'inet' | 'inet6'): SetFamily {
  return type === 'list:set' || type === 'bitmap:port' ? 'unspec' : (family ?? 'inet');
}

export function familyFromNfproto(n: number): SetFamily | undefined {
  return n === NFPROTO_IPV4 ? 'inet' : n === NFPROTO_IPV6 ? 'inet6' : n === NFPROTO_UNSPEC ? 'unspec' : undefined;
}

interface Header {
  seq: number;
  protocol: number;
}

function message(cmd: number, h: Header, flags: number, fill: (w: AttrWriter) => void, sizeHint?: number): Buffer {
  const w = new AttrWriter(sizeHint).u8(C.IPSET_ATTR_PROTOCOL, h.protocol);
  fill(w);
  return encodeNfMessage({ type: nfMsgType(NFNL_SUBSYS_IPSET, cmd), flags, seq: h.seq, family: AF_INET, payload: w.finish() });
}

/** NLM_F_EXCL is how ipset spells "fail if it exists": without it the kernel applies -exist. */
function flagsFor(exist: boolean): number {
  return NLM_F_REQUEST | NLM_F_ACK | (exist ? 0 : NLM_F_EXCL);
}

/** The longest set name the kernel takes, in bytes (IPSET_MAXNAMELEN holds the NUL too). */
export const SET_NAME_MAX = C.IPSET_MAXNAMELEN - 1;

/** Whether a set name is 1 to SET_NAME_MAX bytes. Names are checked for every set and message:
 * a UTF-16 unit is at most 3 UTF-8 bytes, so short ones need no byte count. */
export function setNameFits(name: string): boolean {
  return name.length > 0 && (name.length * 3 <= SET_NAME_MAX || Buffer.byteLength(name) <= SET_NAME_MAX);
}

function checkName(name: string, what = 'set name'): void {
  if (!setNameFits(name)) throw new RangeError(`${what} "${name}" must be 1 to ${SET_NAME_MAX} bytes`);
}

export function encodeProtocol(h: Header): Buffer {
  return message(C.IPSET_CMD_PROTOCOL, h, NLM_F_REQUEST | NLM_F_ACK, () => undefined);
}

export function encodeTypeQuery(h: Header, type: string, family: SetFamily): Buffer {
  return message(C.IPSET_CMD_TYPE, h, NLM_F_REQUEST | NLM_F_ACK, (w) => w.str(C.IPSET_ATTR_TYPENAME, type).u8(C.IPSET_ATTR_FAMILY, NFPROTO[family]));
}

export interface CreateSpec {
  name: string;
  type: SetType;
  family: SetFamily;
  revision: number;
  options: SetOptions;
}

export function encodeCreate(h: Header, spec: CreateSpec, exist: boolean): Buffer {
  checkName(spec.name);
  const o = spec.options;
  return message(C.IPSET_CMD_CREATE, h, flagsFor(exist), (w) => {
    w.str(C.IPSET_ATTR_SETNAME, spec.name).str(C.IPSET_ATTR_TYPENAME, spec.type);
    w.u8(C.IPSET_ATTR_REVISION, spec.revision).u8(C.IPSET_ATTR_FAMILY, NFPROTO[spec.family]);
    w.nest(C.IPSET_ATTR_DATA, (d) => {
      if (o.hashsize !== undefined) d.be32(C.IPSET_ATTR_HASHSIZE | NBO, o.hashsize);
      if (o.maxelem !== undefined) d.be32(C.IPSET_ATTR_MAXELEM | NBO, o.maxelem);
      if (o.timeout !== undefined) d.be32(C.IPSET_ATTR_TIMEOUT | NBO, o.timeout);
      if (o.range) d.be16(C.IPSET_ATTR_PORT | NBO, o.range.from).be16(C.IPSET_ATTR_PORT_TO | NBO, o.range.to);
      if (o.size !== undefined) d.be32(C.IPSET_ATTR_SIZE | NBO, o.size);
      const cadt = (o.counters ? C.IPSET_FLAG_WITH_COUNTERS : 0) | (o.comment ? C.IPSET_FLAG_WITH_COMMENT : 0);
      if (cadt) d.be32(C.IPSET_ATTR_CADT_FLAGS | NBO, cadt);
    });
  });
}

/** The kernel reads a missing name as "every set", so a name is required here. With `exist`, a
 * set that is already gone is not an error. */
export function encodeDestroy(h: Header, name: string, exist: boolean): Buffer {
  checkName(name);
  return message(C.IPSET_CMD_DESTROY, h, flagsFor(exist), (w) => w.str(C.IPSET_ATTR_SETNAME, name));
}

/** As with destroy, a missing name would flush every set. */
export function encodeFlush(h: Header, name: string): Buffer {
  checkName(name);
  return message(C.IPSET_CMD_FLUSH, h, NLM_F_REQUEST | NLM_F_ACK, (w) => w.str(C.IPSET_ATTR_SETNAME, name));
}

export function encodeRename(h: Header, from: string, to: string): Buffer {
  checkName(from);
  checkName(to, 'new set name');
  return message(C.IPSET_CMD_RENAME, h, NLM_F_REQUEST | NLM_F_ACK, (w) => w.str(C.IPSET_ATTR_SETNAME, from).str(C.IPSET_ATTR_SETNAME2, to));
}

export function encodeSwap(h: Header, a: string, b: string): Buffer {
  checkName(a);
  checkName(b, 'second set name');
  return message(C.IPSET_CMD_SWAP, h, NLM_F_REQUEST | NLM_F_ACK, (w) => w.str(C.IPSET_ATTR_SETNAME, a).str(C.IPSET_ATTR_SETNAME2, b));
}

function writeAddr(w: AttrWriter, type: number, a: Addr): void {
  const at = w.beginNest(type);
  if (typeof a === 'number') w.be32(C.IPSET_ATTR_IPADDR_IPV4 | NBO, a);
  else w.bytes(C.IPSET_ATTR_IPADDR_IPV6 | NBO, a);
  w.endNest(at);
}

/** The IPSET_ATTR_DATA payload of one member of a set of this type. The fields come from the
 * member's key, read in either family: the kernel refuses an address of the wrong one. */
export function writeElementData(w: AttrWriter, type: SetType, e: Element): void {
  // An IPv4 hash:ip member, the bulk of most syncs, is read without building its parts.
  const v4 = type === 'hash:ip' ? parseDottedQuad(e.key) : undefined;
  if (v4 !== undefined) {
    writeAddr(w, C.IPSET_ATTR_IP, v4);
  } else {
    const p = parseMember(type, 'unspec', e.key);
    if (p.ip !== undefined) writeAddr(w, C.IPSET_ATTR_IP, p.ip);
    if (p.cidr !== undefined) w.u8(C.IPSET_ATTR_CIDR, p.cidr);
    if (p.port !== undefined) w.be16(C.IPSET_ATTR_PORT | NBO, p.port);
    if (p.proto !== undefined) w.u8(C.IPSET_ATTR_PROTO, p.proto);
    if (p.ip2 !== undefined) writeAddr(w, C.IPSET_ATTR_IP2, p.ip2);
    if (p.cidr2 !== undefined) w.u8(C.IPSET_ATTR_CIDR2, p.cidr2);
    if (p.name !== undefined) w.str(C.IPSET_ATTR_NAME, p.name);
  }
  if (e.timeout !== undefined) w.be32(C.IPSET_ATTR_TIMEOUT | NBO, e.timeout);
  if (e.nomatch) {
    // The kernel ignores the flag for other types instead of refusing it.
    if (!supportsNomatch(type)) throw new ElementSyntaxError(e.key, `${type} members cannot be nomatch`);
    w.be32(C.IPSET_ATTR_CADT_FLAGS | NBO, C.IPSET_FLAG_NOMATCH);
  }
  if (e.packets !== undefined) w.be64(C.IPSET_ATTR_PACKETS | NBO, e.packets);
  if (e.bytes !== undefined) w.be64(C.IPSET_ATTR_BYTES | NBO, e.bytes);
  if (e.comment !== undefined) w.str(C.IPSET_ATTR_COMMENT, e.comment);
}

const attrSize = (payload: number) => align4(4 + payload);

/** The most bytes any member's fields take in an IPSET_ATTR_DATA nest: hash:ip,port,net over
 * IPv6 (two address nests, cidr2, port, proto) and the nest's own header. */
const MEMBER_FIELDS_MAX = 4 + 2 * (4 + attrSize(16)) + 3 * attrSize(1) + attrSize(2);

/** An upper bound of what writeElementData writes for a member, known without parsing it. */
function elementBound(e: Element): number {
  let n = MEMBER_FIELDS_MAX;
  if (e.timeout !== undefined) n += attrSize(4);
  if (e.nomatch) n += attrSize(4);
  if (e.packets !== undefined) n += attrSize(8);
  if (e.bytes !== undefined) n += attrSize(8);
  if (e.comment !== undefined) n += attrSize(Buffer.byteLength(e.comment) + 1);
  return n;
}

/** Largest message payload the ADT encoder fills: the attribute length field is 16 bits. */
export const MAX_ADT_BYTES = 60_000;

/** One add or del message holding elements[from..next) — as many as fit under MAX_ADT_BYTES, at
 * least one. The kernel applies them in order and stops at the first it refuses.
 * IPSET_ATTR_LINENO is required with IPSET_ATTR_ADT. */
export function encodeAdt(
  h: Header,
  op: 'add' | 'del',
  set: string,
  type: SetType,
  elements: readonly Element[],
  exist: boolean,
  from = 0,
): { bytes: Buffer; next: number } {
  const w = new AttrWriter(Math.min(MAX_ADT_BYTES, 64 + (elements.length - from) * MEMBER_FIELDS_MAX));
  const next = writeAdt(w, h, op, set, type, elements, exist, from);
  return { bytes: w.finish(), next };
}

/** encodeAdt written at the end of `w`, so many messages share one buffer; returns `next`. */
export function writeAdt(
  w: AttrWriter,
  h: Header,
  op: 'add' | 'del',
  set: string,
  type: SetType,
  elements: readonly Element[],
  exist: boolean,
  from = 0,
): number {
  checkName(set);
  const at = w.beginMessage(nfMsgType(NFNL_SUBSYS_IPSET, op === 'add' ? C.IPSET_CMD_ADD : C.IPSET_CMD_DEL), flagsFor(exist), h.seq, AF_INET);
  w.u8(C.IPSET_ATTR_PROTOCOL, h.protocol).str(C.IPSET_ATTR_SETNAME, set).u32(C.IPSET_ATTR_LINENO, 0);
  const adt = w.beginNest(C.IPSET_ATTR_ADT);
  const adtStart = w.length;
  let next = from;
  while (next < elements.length && (next === from || w.length - adtStart + elementBound(elements[next]) <= MAX_ADT_BYTES)) {
    const d = w.beginNest(C.IPSET_ATTR_DATA);
    writeElementData(w, type, elements[next++]);
    w.endNest(d);
  }
  w.endNest(adt);
  w.endMessage(at);
  return next;
}

/** Test takes exactly one element (IPSET_ATTR_DATA); the ack is 0 when present. */
export function encodeTest(h: Header, set: string, type: SetType, e: Element): Buffer {
  checkName(set);
  return message(C.IPSET_CMD_TEST, h, NLM_F_REQUEST | NLM_F_ACK, (w) => {
    w.str(C.IPSET_ATTR_SETNAME, set).nest(C.IPSET_ATTR_DATA, (d) => writeElementData(d, type, e));
  });
}

export function encodeHeaderQuery(h: Header, set: string): Buffer {
  checkName(set);
  return message(C.IPSET_CMD_HEADER, h, NLM_F_REQUEST | NLM_F_ACK, (w) => w.str(C.IPSET_ATTR_SETNAME, set));
}

/** A list (dump) request: every set, or one; `headersOnly` leaves the members out. */
export function encodeList(h: Header, opts: { set?: string; headersOnly?: boolean } = {}): Buffer {
  if (opts.set !== undefined) checkName(opts.set);
  return message(C.IPSET_CMD_LIST, h, NLM_F_REQUEST | NLM_F_DUMP, (w) => {
    if (opts.set !== undefined) w.str(C.IPSET_ATTR_SETNAME, opts.set);
    if (opts.headersOnly) w.be32(C.IPSET_ATTR_FLAGS | NBO, C.IPSET_FLAG_LIST_HEADER);
  });
}

function ipsetCmd(m: NfMessage): number {
  if (m.type >> 8 !== NFNL_SUBSYS_IPSET) throw new DecodeError(`ipset reply: message type 0x${m.type.toString(16)} is not an ipset message`);
  return m.type & 0xff;
}

export function decodeProtocolReply(m: NfMessage): { protocol: number; protocolMin: number } {
  if (ipsetCmd(m) !== C.IPSET_CMD_PROTOCOL) throw new DecodeError('ipset protocol reply: wrong command');
  const a = AttrMap.parse(m.payload, 'ipset protocol reply');
  const protocol = a.required(a.u8(C.IPSET_ATTR_PROTOCOL), 'IPSET_ATTR_PROTOCOL');
  return { protocol, protocolMin: a.u8(C.IPSET_ATTR_PROTOCOL_MIN) ?? protocol };
}

export function decodeTypeReply(m: NfMessage): { type: string; family: number; revision: number; revisionMin: number } {
  if (ipsetCmd(m) !== C.IPSET_CMD_TYPE) throw new DecodeError('ipset type reply: wrong command');
  const a = AttrMap.parse(m.payload, 'ipset type reply');
  const revision = a.required(a.u8(C.IPSET_ATTR_REVISION), 'IPSET_ATTR_REVISION');
  return {
    type: a.required(a.str(C.IPSET_ATTR_TYPENAME), 'IPSET_ATTR_TYPENAME'),
    family: a.required(a.u8(C.IPSET_ATTR_FAMILY), 'IPSET_ATTR_FAMILY'),
    revision,
    revisionMin: a.u8(C.IPSET_ATTR_REVISION_MIN) ?? revision,
  };
}

/* The dump reader walks attributes by offset, without an object or a Buffer view per attribute:
 * a list of every set holds tens of thousands of members. Every length is checked against its
 * parent's end, so bad bytes give a DecodeError, never a read out of bounds. */

/** The length of the attribute at pos, checked to fit in [pos, end). */
function attrLen(buf: Buffer, pos: number, end: number, what: string): number {
  if (end - pos < NLA_HDRLEN) throw new DecodeError(`${what}: truncated attribute at offset ${pos}`);
  const len = buf[pos] | (buf[pos + 1] << 8);
  if (len < NLA_HDRLEN || len > end - pos) throw new DecodeError(`${what}: attribute at offset ${pos} has bad length ${len}`);
  return len;
}

function attrType(buf: Buffer, pos: number): number {
  return (buf[pos + 2] | (buf[pos + 3] << 8)) & NLA_TYPE_MASK;
}

/** The payload offset of a fixed-size attribute at pos whose total length is len. */
function fixed(pos: number, len: number, size: number, what: string): number {
  if (len - NLA_HDRLEN < size) throw new DecodeError(`${what}: attribute has ${len - NLA_HDRLEN} bytes, expected ${size}`);
  return pos + NLA_HDRLEN;
}

function cString(buf: Buffer, start: number, end: number): string {
  const nul = buf.indexOf(0, start);
  return buf.toString('utf8', start, nul < 0 || nul > end ? end : nul);
}

/** The address inside an IPSET_ATTR_IP/IP2 nest spanning [start, end). */
function readAddr(buf: Buffer, start: number, end: number, family: SetFamily, what: string): Addr {
  const want = family === 'inet6' ? C.IPSET_ATTR_IPADDR_IPV6 : C.IPSET_ATTR_IPADDR_IPV4;
  const size = family === 'inet6' ? 16 : 4;
  for (let pos = start; pos < end; pos += align4(attrLen(buf, pos, end, what))) {
    if (attrType(buf, pos) !== want) continue;
    if (attrLen(buf, pos, end, what) !== NLA_HDRLEN + size) break;
    const at = pos + NLA_HDRLEN;
    return size === 4 ? buf.readUInt32BE(at) : buf.subarray(at, at + size);
  }
  throw new DecodeError(`${what}: address attribute missing or not ${size} bytes`);
}

/** One listed member: the IPSET_ATTR_DATA nest spanning [start, end). */
function decodeElement(type: SetType, family: SetFamily, buf: Buffer, start: number, end: number, what: string): Element {
  let ip: Addr | undefined;
  let ip2: Addr | undefined;
  let cidr: number | undefined;
  let cidr2: number | undefined;
  let port: number | undefined;
  let proto: number | undefined;
  let name: string | undefined;
  const e: Element = { key: '' };
  for (let pos = start; pos < end; ) {
    const len = attrLen(buf, pos, end, what);
    switch (attrType(buf, pos)) {
      case C.IPSET_ATTR_IP:
        ip = readAddr(buf, pos + NLA_HDRLEN, pos + len, family, what);
        break;
      case C.IPSET_ATTR_IP2:
        ip2 = readAddr(buf, pos + NLA_HDRLEN, pos + len, family, what);
        break;
      case C.IPSET_ATTR_CIDR:
        cidr = buf[fixed(pos, len, 1, what)];
        break;
      case C.IPSET_ATTR_CIDR2:
        cidr2 = buf[fixed(pos, len, 1, what)];
        break;
      case C.IPSET_ATTR_PORT:
        port = buf.readUInt16BE(fixed(pos, len, 2, what));
        break;
      case C.IPSET_ATTR_PROTO:
        proto = buf[fixed(pos, len, 1, what)];
        break;
      case C.IPSET_ATTR_NAME:
        name = cString(buf, pos + NLA_HDRLEN, pos + len);
        break;
      case C.IPSET_ATTR_COMMENT:
        e.comment = cString(buf, pos + NLA_HDRLEN, pos + len);
        break;
      case C.IPSET_ATTR_TIMEOUT:
        e.timeout = buf.readUInt32BE(fixed(pos, len, 4, what));
        break;
      case C.IPSET_ATTR_PACKETS:
        e.packets = buf.readBigUInt64BE(fixed(pos, len, 8, what));
        break;
      case C.IPSET_ATTR_BYTES:
        e.bytes = buf.readBigUInt64BE(fixed(pos, len, 8, what));
        break;
      case C.IPSET_ATTR_CADT_FLAGS:
        if (buf.readUInt32BE(fixed(pos, len, 4, what)) & C.IPSET_FLAG_NOMATCH) e.nomatch = true;
        break;
    }
    pos += align4(len);
  }
  const maxCidr = family === 'inet6' ? 128 : 32;
  cidr = type === 'hash:net' || type === 'hash:net,port' ? (cidr ?? maxCidr) : undefined;
  cidr2 = type === 'hash:ip,port,net' ? (cidr2 ?? maxCidr) : undefined;
  if ((cidr ?? 0) > maxCidr || (cidr2 ?? 0) > maxCidr) throw new DecodeError(`${what}: prefix length ${cidr}/${cidr2} out of range`);
  try {
    e.key = elementKey(type, { ip, ip2, cidr, cidr2, port, proto, name });
  } catch (err) {
    if (err instanceof ElementSyntaxError) throw new DecodeError(`${what}: ${err.message}`);
    throw err;
  }
  return e;
}

function decodeOptions(type: SetType, a: AttrMap | undefined): { options: SetOptions; header: Omit<IpsetSet['header'], 'revision'> } {
  const options: SetOptions = {};
  if (!a) return { options, header: { references: 0, elements: 0, memsize: 0 } };
  const hashsize = a.be32(C.IPSET_ATTR_HASHSIZE);
  const maxelem = a.be32(C.IPSET_ATTR_MAXELEM);
  const timeout = a.be32(C.IPSET_ATTR_TIMEOUT);
  const cadt = a.be32(C.IPSET_ATTR_CADT_FLAGS) ?? 0;
  const size = a.be32(C.IPSET_ATTR_SIZE);
  if (hashsize !== undefined) options.hashsize = hashsize;
  if (maxelem !== undefined) options.maxelem = maxelem;
  if (timeout !== undefined) options.timeout = timeout;
  if (cadt & C.IPSET_FLAG_WITH_COUNTERS) options.counters = true;
  if (cadt & C.IPSET_FLAG_WITH_COMMENT) options.comment = true;
  if (type === 'bitmap:port') {
    const from = a.be16(C.IPSET_ATTR_PORT);
    const to = a.be16(C.IPSET_ATTR_PORT_TO);
    if (from !== undefined && to !== undefined) options.range = { from, to };
  }
  if (type === 'list:set' && size !== undefined) options.size = size;
  const header: Omit<IpsetSet['header'], 'revision'> = {
    references: a.be32(C.IPSET_ATTR_REFERENCES) ?? 0,
    elements: a.be32(C.IPSET_ATTR_ELEMENTS) ?? 0,
    memsize: a.be32(C.IPSET_ATTR_MEMSIZE) ?? 0,
  };
  const bucketsize = a.u8(C.IPSET_ATTR_BUCKETSIZE);
  const initval = a.be32(C.IPSET_ATTR_INITVAL);
  if (bucketsize !== undefined) header.bucketsize = bucketsize;
  if (initval !== undefined) header.initval = initval;
  return { options, header };
}

/** A set whose type this codec does not model: named so callers can still replace or remove it. */
export interface ForeignTypeSet {
  name: string;
  typeName: string;
  references: number;
}

export interface ListResult {
  sets: IpsetSet[];
  otherTypes: ForeignTypeSet[];
}

/** Joins the parts of a list dump into sets. A big set arrives in several messages: the first has
 * the header, the rest only the name and more members. Sets `include` rejects are skipped unread. */
export function decodeList(messages: NfMessage[], include: (name: string) => boolean = () => true): ListResult {
  const byName = new Map<string, IpsetSet>();
  const other = new Map<string, ForeignTypeSet>();
  for (const m of messages) {
    if (ipsetCmd(m) !== C.IPSET_CMD_LIST && ipsetCmd(m) !== C.IPSET_CMD_SAVE) throw new DecodeError('ipset list reply: wrong command');
    const b = m.payload;
    const top = { name: -1, typeName: -1, family: -1, revision: -1, data: -1, adt: -1 };
    const ends = { data: 0, adt: 0 };
    for (let pos = 0; pos < b.length; ) {
      const len = attrLen(b, pos, b.length, 'ipset list reply');
      switch (attrType(b, pos)) {
        case C.IPSET_ATTR_SETNAME:
          top.name = pos;
          break;
        case C.IPSET_ATTR_TYPENAME:
          top.typeName = pos;
          break;
        case C.IPSET_ATTR_FAMILY:
          top.family = fixed(pos, len, 1, 'ipset list reply IPSET_ATTR_FAMILY');
          break;
        case C.IPSET_ATTR_REVISION:
          top.revision = fixed(pos, len, 1, 'ipset list reply IPSET_ATTR_REVISION');
          break;
        case C.IPSET_ATTR_DATA:
          top.data = pos + NLA_HDRLEN;
          ends.data = pos + len;
          break;
        case C.IPSET_ATTR_ADT:
          top.adt = pos + NLA_HDRLEN;
          ends.adt = pos + len;
          break;
      }
      pos += align4(len);
    }
    const text = (at: number) => cString(b, at + NLA_HDRLEN, at + (b[at] | (b[at + 1] << 8)));
    if (top.name < 0) throw new DecodeError('ipset list reply: missing IPSET_ATTR_SETNAME');
    const name = text(top.name);
    if (!include(name) || other.has(name)) continue;
    let set = byName.get(name);
    if (top.typeName >= 0) {
      const what = `ipset set ${name}`;
      const typeName = text(top.typeName);
      const data = top.data >= 0 ? AttrMap.parse(b.subarray(top.data, ends.data), `${what} IPSET_ATTR_DATA`) : undefined;
      if (!isSetType(typeName)) {
        other.set(name, { name, typeName, references: data?.be32(C.IPSET_ATTR_REFERENCES) ?? 0 });
        continue;
      }
      if (top.family < 0) throw new DecodeError(`${what}: missing IPSET_ATTR_FAMILY`);
      if (top.revision < 0) throw new DecodeError(`${what}: missing IPSET_ATTR_REVISION`);
      const family = familyFromNfproto(b[top.family]);
      if (!family) throw new DecodeError(`${what}: unknown family ${b[top.family]}`);
      const { options, header } = decodeOptions(typeName, data);
      set = { name, type: typeName, family, options, header: { revision: b[top.revision], ...header }, members: [] };
      byName.set(name, set);
    }
    if (!set) throw new DecodeError(`ipset list reply: members of set ${name} arrived before its header`);
    if (top.adt >= 0) {
      const what = `ipset set ${name} member`;
      for (let pos = top.adt; pos < ends.adt; ) {
        const len = attrLen(b, pos, ends.adt, what);
        if (attrType(b, pos) === C.IPSET_ATTR_DATA) set.members.push(decodeElement(set.type, set.family, b, pos + NLA_HDRLEN, pos + len, what));
        pos += align4(len);
      }
    }
  }
  return { sets: [...byName.values()], otherTypes: [...other.values()] };
}

export function decodeHeaderReply(m: NfMessage): { name: string; typeName: string; family: SetFamily | undefined; revision: number } {
  if (ipsetCmd(m) !== C.IPSET_CMD_HEADER) throw new DecodeError('ipset header reply: wrong command');
  const a = AttrMap.parse(m.payload, 'ipset header reply');
  return {
    name: a.required(a.str(C.IPSET_ATTR_SETNAME), 'IPSET_ATTR_SETNAME'),
    typeName: a.required(a.str(C.IPSET_ATTR_TYPENAME), 'IPSET_ATTR_TYPENAME'),
    family: familyFromNfproto(a.required(a.u8(C.IPSET_ATTR_FAMILY), 'IPSET_ATTR_FAMILY')),
    revision: a.required(a.u8(C.IPSET_ATTR_REVISION), 'IPSET_ATTR_REVISION'),
  };
}
