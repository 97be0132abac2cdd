/** Set members as text (the form `ipset save` prints) and as the fields the kernel's attributes
 * carry, both ways. A member is kept as its canonical text (its key): parsing normalises exactly
 * as the kernel stores (networks masked, host prefixes dropped), so a desired member and one read
 * back compare equal as strings, and every key parses back to the same fields. */
import { parseIPv6Bytes } from '../net/ip-bytes';
import { formatDottedQuad, longestZeroRun, parseDottedQuad } from '../net/ip-text';
import { IPPROTO, IPPROTO_ICMP, IPPROTO_ICMPV6, IPPROTO_NAME } from '../net/protocols';
import { Element, SetFamily, SetType } from './types';

/** A member text that does not fit the set; the message names the member and the problem. */
export class ElementSyntaxError extends Error {
  constructor(readonly element: string, problem: string) {
    super(`member "${element}": ${problem}`);
    this.name = 'ElementSyntaxError';
  }
}

/** An IPv4 address as a 32-bit number, an IPv6 address as 16 bytes (network order). */
export type Addr = number | Buffer;

/** A member's fields, as its IPSET_ATTR_DATA attributes carry them. */
export interface MemberParts {
  ip?: Addr;
  cidr?: number;
  proto?: number;
  port?: number;
  ip2?: Addr;
  cidr2?: number;
  /** list:set member. */
  name?: string;
}

const PROTO_BY_NAME: Record<string, number> = { tcp: IPPROTO.tcp, udp: IPPROTO.udp, sctp: IPPROTO.sctp, udplite: IPPROTO.udplite, icmp: IPPROTO_ICMP, 'ipv6-icmp': IPPROTO_ICMPV6, icmpv6: IPPROTO_ICMPV6 };
const PORT_PROTOS = new Set<number>([IPPROTO.tcp, IPPROTO.udp, IPPROTO.sctp, IPPROTO.udplite]);

/** The text glibc's inet_ntop gives, which is what `ipset save` prints: the longest run (the
 * first on a tie) of two or more zero words becomes `::`; mapped and compatible IPv4 stay dotted. */
export function formatIPv6(b: Buffer): string {
  const words = Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2));
  const run = longestZeroRun(words);
  const end = run.start + run.length;
  let out = '';
  for (let i = 0; i < 8; i++) {
    if (run.length > 0 && i >= run.start && i < end) {
      if (i === run.start) out += ':';
      continue;
    }
    if (i > 0) out += ':';
    if (i === 6 && run.start === 0 && (run.length === 6 || (run.length === 5 && words[5] === 0xffff))) {
      return out + formatDottedQuad(b.readUInt32BE(12));
    }
    out += words[i].toString(16);
  }
  if (run.length > 0 && end === 8) out += ':';
  return out;
}

export function formatIp(a: Addr): string {
  return typeof a === 'number' ? formatDottedQuad(a) : formatIPv6(a);
}

function addrBits(a: Addr): number {
  return typeof a === 'number' ? 32 : 128;
}

function maskAddr(a: Addr, cidr: number): Addr {
  if (typeof a === 'number') return cidr === 0 ? 0 : (a & (~0 << (32 - cidr))) >>> 0;
  const out = Buffer.from(a);
  for (let i = 0; i < out.length; i++) {
    const bits = Math.max(0, Math.min(8, cidr - i * 8));
    out[i] &= bits === 0 ? 0 : (0xff << (8 - bits)) & 0xff;
  }
  return out;
}

/** `unspec` takes either family: keys are parsed for encoding without knowing the set's family,
 * and the kernel refuses an address of the wrong one. */
function parseAddr(text: string, whole: string, family: SetFamily): Addr {
  const v4 = parseDottedQuad(text);
  if (v4 !== undefined) {
    if (family === 'inet6') throw new ElementSyntaxError(whole, `IPv4 address ${text} in an inet6 set`);
    return v4;
  }
  if (/^[\d.]+$/.test(text) && /(^|\.)0\d/.test(text)) {
    throw new ElementSyntaxError(whole, `"${text}" has an octet with a leading zero, which the ipset tool reads as octal: write it without`);
  }
  const v6 = parseIPv6Bytes(text);
  if (!v6) throw new ElementSyntaxError(whole, `"${text}" is not an IP address`);
  if (family === 'inet') throw new ElementSyntaxError(whole, `IPv6 address ${text} in an inet set`);
  return v6;
}

function parseHost(text: string, whole: string, family: SetFamily): Addr {
  if (text.includes('/') || text.includes('-')) {
    throw new ElementSyntaxError(whole, `"${text}" must be a single address (ranges and prefixes are not stored as one member)`);
  }
  return parseAddr(text, whole, family);
}

function parseNet(text: string, whole: string, family: SetFamily): { ip: Addr; cidr: number } {
  const slash = text.indexOf('/');
  const ip = parseAddr(slash < 0 ? text : text.slice(0, slash), whole, family);
  const max = addrBits(ip);
  let cidr = max;
  if (slash >= 0) {
    const c = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(c) || Number(c) < 1 || Number(c) > max) {
      throw new ElementSyntaxError(whole, `prefix length "/${c}" is not between 1 and ${max}`);
    }
    cidr = Number(c);
  }
  return { ip: maskAddr(ip, cidr), cidr };
}

function parseNumber(text: string, max: number, whole: string, what: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > max) throw new ElementSyntaxError(whole, `${what} "${text}" is not between 0 and ${max}`);
  return Number(text);
}

/** PORT, PROTO:PORT, or for ICMP PROTO:TYPE/CODE, which the kernel keeps as one 16-bit port. */
function parseProtoPort(text: string, whole: string): { proto: number; port: number } {
  const colon = text.indexOf(':');
  if (colon < 0) return { proto: PROTO_BY_NAME.tcp, port: parseNumber(text, 65535, whole, 'port') };
  const name = text.slice(0, colon).toLowerCase();
  const proto = PROTO_BY_NAME[name] ?? (/^\d{1,3}$/.test(name) && Number(name) <= 255 ? Number(name) : undefined);
  if (proto === undefined) throw new ElementSyntaxError(whole, `protocol "${name}" is not one of ${Object.keys(PROTO_BY_NAME).join(', ')} or a number`);
  const rest = text.slice(colon + 1);
  if (proto === IPPROTO_ICMP || proto === IPPROTO_ICMPV6) {
    const [type, code, extra] = rest.split('/');
    if (code === undefined || extra !== undefined) throw new ElementSyntaxError(whole, `ICMP needs TYPE/CODE, got "${rest}"`);
    return { proto, port: (parseNumber(type, 255, whole, 'ICMP type') << 8) | parseNumber(code, 255, whole, 'ICMP code') };
  }
  const port = parseNumber(rest, 65535, whole, 'port');
  // The kernel stores port 0 for protocols without ports.
  if (!PORT_PROTOS.has(proto) && port !== 0) throw new ElementSyntaxError(whole, `protocol ${name} has no ports: use port 0`);
  return { proto, port };
}

function netText(ip: Addr, cidr: number): string {
  return cidr === addrBits(ip) ? formatIp(ip) : `${formatIp(ip)}/${cidr}`;
}

function protoPortText(proto: number, port: number): string {
  const name = IPPROTO_NAME[proto] ?? String(proto);
  if (proto === IPPROTO_ICMP || proto === IPPROTO_ICMPV6) return `${name}:${port >> 8}/${port & 0xff}`;
  return `${name}:${port}`;
}

function need<T>(v: T | undefined, type: SetType, what: string): T {
  if (v === undefined) throw new ElementSyntaxError('?', `${type} member without ${what}`);
  return v;
}

/** The canonical text of a member: what `ipset save` prints for it. */
export function elementKey(type: SetType, e: MemberParts): string {
  switch (type) {
    case 'hash:ip':
      return formatIp(need(e.ip, type, 'address'));
    case 'hash:net':
      return netText(need(e.ip, type, 'address'), need(e.cidr, type, 'prefix length'));
    case 'hash:ip,port':
      return `${formatIp(need(e.ip, type, 'address'))},${protoPortText(need(e.proto, type, 'protocol'), need(e.port, type, 'port'))}`;
    case 'hash:net,port':
      return `${netText(need(e.ip, type, 'address'), need(e.cidr, type, 'prefix length'))},${protoPortText(need(e.proto, type, 'protocol'), need(e.port, type, 'port'))}`;
    case 'hash:ip,port,ip':
      return `${formatIp(need(e.ip, type, 'address'))},${protoPortText(need(e.proto, type, 'protocol'), need(e.port, type, 'port'))},${formatIp(need(e.ip2, type, 'second address'))}`;
    case 'hash:ip,port,net':
      return `${formatIp(need(e.ip, type, 'address'))},${protoPortText(need(e.proto, type, 'protocol'), need(e.port, type, 'port'))},${netText(need(e.ip2, type, 'second address'), need(e.cidr2, type, 'second prefix length'))}`;
    case 'list:set':
      return need(e.name, type, 'set name');
    case 'bitmap:port':
      return String(need(e.port, type, 'port'));
  }
}

const ARITY: Record<SetType, number> = {
  'hash:ip': 1,
  'hash:net': 1,
  'hash:ip,port': 2,
  'hash:net,port': 2,
  'hash:ip,port,ip': 3,
  'hash:ip,port,net': 3,
  'list:set': 1,
  'bitmap:port': 1,
};

/** The fields of a member text for a set of this type and family (`unspec`: either family). */
export function parseMember(type: SetType, family: SetFamily, text: string): MemberParts {
  if (type === 'hash:ip') {
    // The common case, without splitting.
    if (text === '' || text.includes(',')) throw new ElementSyntaxError(text, 'a hash:ip member has 1 comma-separated part');
    return { ip: parseHost(text, text, family) };
  }
  const parts = text.split(',');
  const arity = ARITY[type];
  if (text === '' || parts.length !== arity) {
    throw new ElementSyntaxError(text, `a ${type} member has ${arity} comma-separated part${arity > 1 ? 's' : ''}`);
  }
  switch (type) {
    case 'hash:net':
      return parseNet(parts[0], text, family);
    case 'hash:ip,port':
      return { ip: parseHost(parts[0], text, family), ...parseProtoPort(parts[1], text) };
    case 'hash:net,port':
      return { ...parseNet(parts[0], text, family), ...parseProtoPort(parts[1], text) };
    case 'hash:ip,port,ip':
      return { ip: parseHost(parts[0], text, family), ...parseProtoPort(parts[1], text), ip2: parseHost(parts[2], text, family) };
    case 'hash:ip,port,net': {
      const net = parseNet(parts[2], text, family);
      return { ip: parseHost(parts[0], text, family), ...parseProtoPort(parts[1], text), ip2: net.ip, cidr2: net.cidr };
    }
    case 'list:set':
      if (text.length >= 32 || /\s/.test(text)) throw new ElementSyntaxError(text, 'not a valid set name');
      return { name: text };
    case 'bitmap:port': {
      const colon = text.indexOf(':');
      if (colon >= 0 && !['tcp', 'udp'].includes(text.slice(0, colon).toLowerCase())) {
        throw new ElementSyntaxError(text, 'bitmap:port members are a port, optionally as tcp:PORT or udp:PORT');
      }
      return { port: parseNumber(colon >= 0 ? text.slice(colon + 1) : text, 65535, text, 'port') };
    }
  }
}

/** Parses one member text for a set of this type and family (no extensions). */
export function parseElement(type: SetType, family: SetFamily, text: string): Element {
  if (type === 'hash:ip' && family !== 'inet6') {
    // A dotted quad (they have no leading zeros) is already its key: no parts, no new string.
    if (parseDottedQuad(text) !== undefined) return { key: text };
  }
  return { key: elementKey(type, parseMember(type, family, text)) };
}
