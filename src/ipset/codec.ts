/** ipset netlink messages (NFNL_SUBSYS_IPSET): pure encoders for every command and decoders for
 * the kernel's replies. Every message carries IPSET_ATTR_PROTOCOL; decoders throw DecodeError. */
import { align4, AttrMap, AttrWriter, NLA_F_NET_BYTEORDER, parseAttrs } from '../netlink/attr';
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
import { elementKey, ElementSyntaxError } from './element';
import { Element, IpsetSet, isSetType, SetFamily, SetOptions, SetType } from './types';

const NBO = NLA_F_NET_BYTEORDER;
const NFPROTO: Record<SetFamily, number> = { unspec: 0, inet: 2, inet6: 10 };

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
  return n === 2 ? 'inet' : n === 10 ? 'inet6' : n === 0 ? 'unspec' : undefined;
}

/** Fixed-width writers that go through AttrWriter.bytes(): AttrWriter's own u8/be16/be32/be64
 * read `this.buf` before `header()` may grow it, so a value written at a growth is lost. */
function u8(w: AttrWriter, type: number, v: number): AttrWriter {
  return w.bytes(type, Buffer.of(v & 0xff));
}
function u32(w: AttrWriter, type: number, v: number): AttrWriter {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(v >>> 0);
  return w.bytes(type, b);
}
function be16(w: AttrWriter, type: number, v: number): AttrWriter {
  const b = Buffer.alloc(2);
  b.writeUInt16BE(v & 0xffff);
  return w.bytes(type, b);
}
function be32(w: AttrWriter, type: number, v: number): AttrWriter {
  const b = Buffer.alloc(4);
  b.writeUInt32BE(v >>> 0);
  return w.bytes(type, b);
}
function be64(w: AttrWriter, type: number, v: bigint): AttrWriter {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt.asUintN(64, v));
  return w.bytes(type, b);
}

interface Header {
  seq: number;
  protocol: number;
}

function message(cmd: number, h: Header, flags: number, fill: (w: AttrWriter) => void): Buffer {
  const w = u8(new AttrWriter(), C.IPSET_ATTR_PROTOCOL, h.protocol);
  fill(w);
  return encodeNfMessage({ type: nfMsgType(NFNL_SUBSYS_IPSET, cmd), flags, seq: h.seq, family: AF_INET, payload: w.finish() });
}

/** NLM_F_EXCL is how ipset spells "fail if it exists": without it the kernel applies -exist. */
function flagsFor(exist: boolean): number {
  return NLM_F_REQUEST | NLM_F_ACK | (exist ? 0 : NLM_F_EXCL);
}

function checkName(name: string, what = 'set name'): void {
  if (name.length === 0 || Buffer.byteLength(name) >= C.IPSET_MAXNAMELEN) {
    throw new RangeError(`${what} "${name}" must be 1 to ${C.IPSET_MAXNAMELEN - 1} bytes`);
  }
}

export function encodeProtocol(h: Header): Buffer {
  return message(C.IPSET_CMD_PROTOCOL, h, NLM_F_REQUEST | NLM_F_ACK, () => undefined);
}

export function encodeTypeQuery(h: Header, type: string, family: SetFamily): Buffer {
  return message(C.IPSET_CMD_TYPE, h, NLM_F_REQUEST | NLM_F_ACK, (w) => u8(w.str(C.IPSET_ATTR_TYPENAME, type), C.IPSET_ATTR_FAMILY, NFPROTO[family]));
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
    u8(w, C.IPSET_ATTR_REVISION, spec.revision);
    u8(w, C.IPSET_ATTR_FAMILY, NFPROTO[spec.family]);
    w.nest(C.IPSET_ATTR_DATA, (d) => {
      if (o.hashsize !== undefined) be32(d, C.IPSET_ATTR_HASHSIZE | NBO, o.hashsize);
      if (o.maxelem !== undefined) be32(d, C.IPSET_ATTR_MAXELEM | NBO, o.maxelem);
      if (o.timeout !== undefined) be32(d, C.IPSET_ATTR_TIMEOUT | NBO, o.timeout);
      if (o.range) be16(be16(d, C.IPSET_ATTR_PORT | NBO, o.range.from), C.IPSET_ATTR_PORT_TO | NBO, o.range.to);
      if (o.size !== undefined) be32(d, C.IPSET_ATTR_SIZE | NBO, o.size);
      const cadt = (o.counters ? C.IPSET_FLAG_WITH_COUNTERS : 0) | (o.comment ? C.IPSET_FLAG_WITH_COMMENT : 0);
      if (cadt) be32(d, C.IPSET_ATTR_CADT_FLAGS | NBO, cadt);
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

function writeIp(w: AttrWriter, type: number, ip: Buffer): void {
  w.nest(type, (n) => n.bytes((ip.length === 4 ? C.IPSET_ATTR_IPADDR_IPV4 : C.IPSET_ATTR_IPADDR_IPV6) | NBO, ip));
}

/** The IPSET_ATTR_DATA payload of one element. */
export function writeElementData(w: AttrWriter, e: Element): void {
  if (e.ip) writeIp(w, C.IPSET_ATTR_IP, e.ip);
  if (e.cidr !== undefined) u8(w, C.IPSET_ATTR_CIDR, e.cidr);
  if (e.port !== undefined) be16(w, C.IPSET_ATTR_PORT | NBO, e.port);
  if (e.proto !== undefined) u8(w, C.IPSET_ATTR_PROTO, e.proto);
  if (e.ip2) writeIp(w, C.IPSET_ATTR_IP2, e.ip2);
  if (e.cidr2 !== undefined) u8(w, C.IPSET_ATTR_CIDR2, e.cidr2);
  if (e.name !== undefined) w.str(C.IPSET_ATTR_NAME, e.name);
  if (e.timeout !== undefined) be32(w, C.IPSET_ATTR_TIMEOUT | NBO, e.timeout);
  if (e.packets !== undefined) be64(w, C.IPSET_ATTR_PACKETS | NBO, e.packets);
  if (e.bytes !== undefined) be64(w, C.IPSET_ATTR_BYTES | NBO, e.bytes);
  if (e.comment !== undefined) w.str(C.IPSET_ATTR_COMMENT, e.comment);
}

const attrSize = (payload: number) => align4(4 + payload);

/** Bytes an element adds to an IPSET_ATTR_ADT nest (what writeElementData writes, counted). */
export function elementSize(e: Element): number {
  let n = 4;
  if (e.ip) n += 4 + attrSize(e.ip.length);
  if (e.ip2) n += 4 + attrSize(e.ip2.length);
  if (e.cidr !== undefined) n += attrSize(1);
  if (e.cidr2 !== undefined) n += attrSize(1);
  if (e.port !== undefined) n += attrSize(2);
  if (e.proto !== undefined) n += attrSize(1);
  if (e.name !== undefined) n += attrSize(Buffer.byteLength(e.name) + 1);
  if (e.timeout !== undefined) n += attrSize(4);
  if (e.packets !== undefined) n += attrSize(8);
  if (e.bytes !== undefined) n += attrSize(8);
  if (e.comment !== undefined) n += attrSize(Buffer.byteLength(e.comment) + 1);
  return n;
}

/** Largest ADT nest payload per message: the attribute length field is 16 bits. */
export const MAX_ADT_BYTES = 60_000;

/** One add or del message with many elements (IPSET_ATTR_ADT); the kernel applies them in order
 * and stops at the first it refuses. IPSET_ATTR_LINENO is required with IPSET_ATTR_ADT. */
export function encodeAdt(h: Header, op: 'add' | 'del', set: string, elements: Element[], exist: boolean): Buffer {
  checkName(set);
  const cmd = op === 'add' ? C.IPSET_CMD_ADD : C.IPSET_CMD_DEL;
  return message(cmd, h, flagsFor(exist), (w) => {
    u32(w.str(C.IPSET_ATTR_SETNAME, set), C.IPSET_ATTR_LINENO, 0);
    w.nest(C.IPSET_ATTR_ADT, (adt) => {
      for (const e of elements) adt.nest(C.IPSET_ATTR_DATA, (d) => writeElementData(d, e));
    });
  });
}

/** Splits elements into groups that each fit one ADT message. */
export function chunkElements(elements: Element[], maxBytes = MAX_ADT_BYTES): Element[][] {
  const out: Element[][] = [];
  let cur: Element[] = [];
  let size = 0;
  for (const e of elements) {
    const n = elementSize(e);
    if (cur.length > 0 && size + n > maxBytes) {
      out.push(cur);
      cur = [];
      size = 0;
    }
    cur.push(e);
    size += n;
  }
  if (cur.length > 0) out.push(cur);
  return out;
}

/** Test takes exactly one element (IPSET_ATTR_DATA); the ack is 0 when present. */
export function encodeTest(h: Header, set: string, e: Element): Buffer {
  checkName(set);
  return message(C.IPSET_CMD_TEST, h, NLM_F_REQUEST | NLM_F_ACK, (w) => {
    w.str(C.IPSET_ATTR_SETNAME, set).nest(C.IPSET_ATTR_DATA, (d) => writeElementData(d, e));
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
    if (opts.headersOnly) be32(w, C.IPSET_ATTR_FLAGS | NBO, C.IPSET_FLAG_LIST_HEADER);
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

function readIp(data: Buffer, family: SetFamily, what: string): Buffer {
  const want = family === 'inet6' ? C.IPSET_ATTR_IPADDR_IPV6 : C.IPSET_ATTR_IPADDR_IPV4;
  const len = family === 'inet6' ? 16 : 4;
  const a = parseAttrs(data).find((x) => x.type === want);
  if (!a || a.data.length !== len) throw new DecodeError(`${what}: address attribute missing or not ${len} bytes`);
  return a.data;
}

function need(a: { data: Buffer }, size: number, what: string): Buffer {
  if (a.data.length < size) throw new DecodeError(`${what}: attribute has ${a.data.length} bytes, expected ${size}`);
  return a.data;
}

/** One IPSET_ATTR_DATA of a listed member. Walks the attributes once: dumps hold many members. */
export function decodeElement(type: SetType, family: SetFamily, data: Buffer, what: string): Element {
  const e: Omit<Element, 'key'> = {};
  for (const a of parseAttrs(data)) {
    switch (a.type) {
      case C.IPSET_ATTR_IP:
        e.ip = readIp(a.data, family, what);
        break;
      case C.IPSET_ATTR_IP2:
        e.ip2 = readIp(a.data, family, what);
        break;
      case C.IPSET_ATTR_CIDR:
        e.cidr = need(a, 1, what)[0];
        break;
      case C.IPSET_ATTR_CIDR2:
        e.cidr2 = need(a, 1, what)[0];
        break;
      case C.IPSET_ATTR_PORT:
        e.port = need(a, 2, what).readUInt16BE(0);
        break;
      case C.IPSET_ATTR_PROTO:
        e.proto = need(a, 1, what)[0];
        break;
      case C.IPSET_ATTR_NAME:
      case C.IPSET_ATTR_COMMENT: {
        const nul = a.data.indexOf(0);
        const text = a.data.toString('utf8', 0, nul < 0 ? a.data.length : nul);
        if (a.type === C.IPSET_ATTR_NAME) e.name = text;
        else e.comment = text;
        break;
      }
      case C.IPSET_ATTR_TIMEOUT:
        e.timeout = need(a, 4, what).readUInt32BE(0);
        break;
      case C.IPSET_ATTR_PACKETS:
        e.packets = need(a, 8, what).readBigUInt64BE(0);
        break;
      case C.IPSET_ATTR_BYTES:
        e.bytes = need(a, 8, what).readBigUInt64BE(0);
        break;
    }
  }
  const maxCidr = family === 'inet6' ? 128 : 32;
  if (type === 'hash:net' || type === 'hash:net,port') e.cidr ??= maxCidr;
  else delete e.cidr;
  if (type === 'hash:ip,port,net') e.cidr2 ??= maxCidr;
  else delete e.cidr2;
  if (e.cidr !== undefined && e.cidr > maxCidr) throw new DecodeError(`${what}: prefix length ${e.cidr} out of range`);
  if (e.cidr2 !== undefined && e.cidr2 > maxCidr) throw new DecodeError(`${what}: prefix length ${e.cidr2} out of range`);
  let key: string;
  try {
    key = elementKey(type, e);
  } catch (err) {
    if (err instanceof ElementSyntaxError) throw new DecodeError(`${what}: ${err.message}`);
    throw err;
  }
  return { ...e, key };
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
    const a = AttrMap.parse(m.payload, 'ipset list reply');
    const name = a.required(a.str(C.IPSET_ATTR_SETNAME), 'IPSET_ATTR_SETNAME');
    if (!include(name) || other.has(name)) continue;
    let set = byName.get(name);
    const typeName = a.str(C.IPSET_ATTR_TYPENAME);
    if (typeName !== undefined) {
      const what = `ipset set ${name}`;
      const refs = a.nested(C.IPSET_ATTR_DATA)?.be32(C.IPSET_ATTR_REFERENCES) ?? 0;
      if (!isSetType(typeName)) {
        other.set(name, { name, typeName, references: refs });
        continue;
      }
      const nfproto = a.required(a.u8(C.IPSET_ATTR_FAMILY), 'IPSET_ATTR_FAMILY');
      const family = familyFromNfproto(nfproto);
      if (!family) throw new DecodeError(`${what}: unknown family ${nfproto}`);
      const { options, header } = decodeOptions(typeName, a.nested(C.IPSET_ATTR_DATA));
      set = {
        name,
        type: typeName,
        family,
        options,
        header: { revision: a.required(a.u8(C.IPSET_ATTR_REVISION), 'IPSET_ATTR_REVISION'), ...header },
        members: [],
      };
      byName.set(name, set);
    }
    if (!set) throw new DecodeError(`ipset list reply: members of set ${name} arrived before its header`);
    const adt = a.nested(C.IPSET_ATTR_ADT);
    if (adt) {
      for (const d of adt.list) {
        if (d.type !== C.IPSET_ATTR_DATA) continue;
        set.members.push(decodeElement(set.type, set.family, d.data, `ipset set ${name} member`));
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
