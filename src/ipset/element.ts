/** Set members as text (the form `ipset save` prints) and as structured keys, both ways.
 * Parsing normalises exactly as the kernel stores (networks masked, host prefixes dropped), so a
 * parsed desired member and a member read back from the kernel compare equal by `key`. */
import { Element, SetFamily, SetType } from './types';

/** A member text that does not fit the set; the message names the member and the problem. */
export class ElementSyntaxError extends Error {
  constructor(readonly element: string, problem: string) {
    super(`member "${element}": ${problem}`);
    this.name = 'ElementSyntaxError';
  }
}

const PROTO_BY_NAME: Record<string, number> = { tcp: 6, udp: 17, sctp: 132, udplite: 136 };
const PROTO_NAME: Record<number, string> = { 1: 'icmp', 6: 'tcp', 17: 'udp', 58: 'ipv6-icmp', 132: 'sctp', 136: 'udplite' };

const IPV4 = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/;

export function parseIPv4(s: string): Buffer | undefined {
  const m = IPV4.exec(s);
  if (!m) return undefined;
  const a = +m[1], b = +m[2], c = +m[3], d = +m[4];
  if (a > 255 || b > 255 || c > 255 || d > 255) return undefined;
  return Buffer.from([a, b, c, d]);
}

export function parseIPv6(s: string): Buffer | undefined {
  if (!/^[0-9a-fA-F:.]+$/.test(s) || s.length > 45) return undefined;
  let head = s;
  let v4: Buffer | undefined;
  const lastColon = s.lastIndexOf(':');
  if (s.includes('.')) {
    v4 = parseIPv4(s.slice(lastColon + 1));
    if (!v4) return undefined;
    head = s.slice(0, lastColon + 1) + '0:0';
  }
  const halves = head.split('::');
  if (halves.length > 2) return undefined;
  const groups = (h: string) => (h === '' ? [] : h.split(':'));
  const left = groups(halves[0]);
  const right = halves.length === 2 ? groups(halves[1]) : [];
  const total = left.length + right.length;
  if (halves.length === 1 ? total !== 8 : total > 7) return undefined;
  const words = [...left, ...Array(8 - total).fill('0'), ...right];
  const out = Buffer.alloc(16);
  for (let i = 0; i < 8; i++) {
    if (!/^[0-9a-fA-F]{1,4}$/.test(words[i])) return undefined;
    out.writeUInt16BE(parseInt(words[i], 16), i * 2);
  }
  if (v4) v4.copy(out, 12);
  return out;
}

export function formatIPv4(b: Buffer): string {
  return `${b[0]}.${b[1]}.${b[2]}.${b[3]}`;
}

/** The text glibc's inet_ntop gives, which is what `ipset save` prints: the longest run (the
 * first on a tie) of two or more zero words becomes `::`; mapped and compatible IPv4 stay dotted. */
export function formatIPv6(b: Buffer): string {
  const words = Array.from({ length: 8 }, (_, i) => b.readUInt16BE(i * 2));
  let bestAt = -1;
  let bestLen = 0;
  for (let i = 0; i < 8; ) {
    if (words[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && words[j] === 0) j++;
    if (j - i > bestLen) {
      bestAt = i;
      bestLen = j - i;
    }
    i = j;
  }
  if (bestLen < 2) bestAt = -1;
  let out = '';
  for (let i = 0; i < 8; i++) {
    if (bestAt >= 0 && i >= bestAt && i < bestAt + bestLen) {
      if (i === bestAt) out += ':';
      continue;
    }
    if (i > 0) out += ':';
    if (i === 6 && bestAt === 0 && (bestLen === 6 || (bestLen === 5 && words[5] === 0xffff))) {
      return out + formatIPv4(b.subarray(12, 16));
    }
    out += words[i].toString(16);
  }
  if (bestAt >= 0 && bestAt + bestLen === 8) out += ':';
  return out;
}

export function formatIp(b: Buffer): string {
  return b.length === 4 ? formatIPv4(b) : formatIPv6(b);
}

function maskIp(ip: Buffer, cidr: number): Buffer {
  const out = Buffer.from(ip);
  for (let i = 0; i < out.length; i++) {
    const bits = Math.max(0, Math.min(8, cidr - i * 8));
    out[i] &= bits === 0 ? 0 : (0xff << (8 - bits)) & 0xff;
  }
  return out;
}

function addrFamily(family: SetFamily): 'inet' | 'inet6' {
  return family === 'inet6' ? 'inet6' : 'inet';
}

function parseAddr(text: string, whole: string, family: SetFamily): Buffer {
  const v4 = parseIPv4(text);
  const v6 = v4 ? undefined : parseIPv6(text);
  if (!v4 && !v6) throw new ElementSyntaxError(whole, `"${text}" is not an IP address`);
  if (addrFamily(family) === 'inet' && !v4) throw new ElementSyntaxError(whole, `IPv6 address ${text} in an inet set`);
  if (addrFamily(family) === 'inet6' && !v6) throw new ElementSyntaxError(whole, `IPv4 address ${text} in an inet6 set`);
  return (v4 ?? v6) as Buffer;
}

function parseHost(text: string, whole: string, family: SetFamily): Buffer {
  if (text.includes('/') || text.includes('-')) {
    throw new ElementSyntaxError(whole, `"${text}" must be a single address (ranges and prefixes are not stored as one member)`);
  }
  return parseAddr(text, whole, family);
}

function parseNet(text: string, whole: string, family: SetFamily): { ip: Buffer; cidr: number } {
  const slash = text.indexOf('/');
  const ip = parseAddr(slash < 0 ? text : text.slice(0, slash), whole, family);
  const max = ip.length * 8;
  let cidr = max;
  if (slash >= 0) {
    const c = text.slice(slash + 1);
    if (!/^\d{1,3}$/.test(c) || Number(c) < 1 || Number(c) > max) {
      throw new ElementSyntaxError(whole, `prefix length "/${c}" is not between 1 and ${max}`);
    }
    cidr = Number(c);
  }
  return { ip: maskIp(ip, cidr), cidr };
}

function parsePortNumber(text: string, whole: string): number {
  if (!/^\d{1,5}$/.test(text) || Number(text) > 65535) throw new ElementSyntaxError(whole, `port "${text}" is not between 0 and 65535`);
  return Number(text);
}

function parseProtoPort(text: string, whole: string): { proto: number; port: number } {
  const colon = text.indexOf(':');
  if (colon < 0) return { proto: PROTO_BY_NAME.tcp, port: parsePortNumber(text, whole) };
  const name = text.slice(0, colon).toLowerCase();
  const proto = PROTO_BY_NAME[name];
  if (proto === undefined) throw new ElementSyntaxError(whole, `protocol "${name}" is not one of ${Object.keys(PROTO_BY_NAME).join(', ')}`);
  return { proto, port: parsePortNumber(text.slice(colon + 1), whole) };
}

function netText(ip: Buffer, cidr: number): string {
  return cidr === ip.length * 8 ? formatIp(ip) : `${formatIp(ip)}/${cidr}`;
}

function protoPortText(proto: number, port: number): string {
  const name = PROTO_NAME[proto];
  if (proto === 1 || proto === 58) return `${name}:${port >> 8}/${port & 0xff}`;
  return `${name ?? proto}:${port}`;
}

/** The canonical text of a structured member: what `ipset save` prints for it. */
export function elementKey(type: SetType, e: Omit<Element, 'key'>): string {
  const need = <T>(v: T | undefined, what: string): T => {
    if (v === undefined) throw new ElementSyntaxError('?', `${type} member without ${what}`);
    return v;
  };
  switch (type) {
    case 'hash:ip':
      return formatIp(need(e.ip, 'address'));
    case 'hash:net':
      return netText(need(e.ip, 'address'), need(e.cidr, 'prefix length'));
    case 'hash:ip,port':
      return `${formatIp(need(e.ip, 'address'))},${protoPortText(need(e.proto, 'protocol'), need(e.port, 'port'))}`;
    case 'hash:net,port':
      return `${netText(need(e.ip, 'address'), need(e.cidr, 'prefix length'))},${protoPortText(need(e.proto, 'protocol'), need(e.port, 'port'))}`;
    case 'hash:ip,port,ip':
      return `${formatIp(need(e.ip, 'address'))},${protoPortText(need(e.proto, 'protocol'), need(e.port, 'port'))},${formatIp(need(e.ip2, 'second address'))}`;
    case 'hash:ip,port,net':
      return `${formatIp(need(e.ip, 'address'))},${protoPortText(need(e.proto, 'protocol'), need(e.port, 'port'))},${netText(need(e.ip2, 'second address'), need(e.cidr2, 'second prefix length'))}`;
    case 'list:set':
      return need(e.name, 'set name');
    case 'bitmap:port':
      return String(need(e.port, 'port'));
  }
}

/** Parses one member text for a set of this type and family (no extensions). */
export function parseElement(type: SetType, family: SetFamily, text: string): Element {
  const parts = text.split(',');
  const arity: Record<SetType, number> = {
    'hash:ip': 1,
    'hash:net': 1,
    'hash:ip,port': 2,
    'hash:net,port': 2,
    'hash:ip,port,ip': 3,
    'hash:ip,port,net': 3,
    'list:set': 1,
    'bitmap:port': 1,
  };
  if (text === '' || parts.length !== arity[type]) {
    throw new ElementSyntaxError(text, `a ${type} member has ${arity[type]} comma-separated part${arity[type] > 1 ? 's' : ''}`);
  }
  let e: Omit<Element, 'key'>;
  switch (type) {
    case 'hash:ip':
      e = { ip: parseHost(parts[0], text, family) };
      break;
    case 'hash:net':
      e = parseNet(parts[0], text, family);
      break;
    case 'hash:ip,port':
      e = { ip: parseHost(parts[0], text, family), ...parseProtoPort(parts[1], text) };
      break;
    case 'hash:net,port':
      e = { ...parseNet(parts[0], text, family), ...parseProtoPort(parts[1], text) };
      break;
    case 'hash:ip,port,ip':
      e = { ip: parseHost(parts[0], text, family), ...parseProtoPort(parts[1], text), ip2: parseHost(parts[2], text, family) };
      break;
    case 'hash:ip,port,net': {
      const net = parseNet(parts[2], text, family);
      e = { ip: parseHost(parts[0], text, family), ...parseProtoPort(parts[1], text), ip2: net.ip, cidr2: net.cidr };
      break;
    }
    case 'list:set':
      if (text.length >= 32 || /\s/.test(text)) throw new ElementSyntaxError(text, 'not a valid set name');
      e = { name: text };
      break;
    case 'bitmap:port': {
      const colon = text.indexOf(':');
      if (colon >= 0 && !['tcp', 'udp'].includes(text.slice(0, colon).toLowerCase())) {
        throw new ElementSyntaxError(text, 'bitmap:port members are a port, optionally as tcp:PORT or udp:PORT');
      }
      e = { port: parsePortNumber(colon >= 0 ? text.slice(colon + 1) : text, text) };
      break;
    }
  }
  return { ...e, key: elementKey(type, e) };
}
