/** rtnetlink messages as plain data: pure encoders for links, addresses and routes, and
 * bounds-checked decoders that throw DecodeError on bytes that do not fit. */
import { isIP } from 'node:net';
import { AttrMap, AttrWriter, parseAttrs } from '../netlink/attr';
import { DecodeError } from '../netlink/errors';
import { AF_INET, AF_INET6, AF_UNSPEC, NLM_F_DUMP, NLM_F_REQUEST, NLMSG_HDRLEN } from '../netlink/message';
import { formatIPv4, formatIPv6, ipAddr } from '../net/ip-bytes';
import {
  IFA_ADDRESS, IFA_FLAGS, IFA_LOCAL, IFADDRMSG_LEN, IFINFOMSG_LEN, IFLA_AF_SPEC, IFLA_ADDRESS, IFLA_IFNAME,
  IFLA_INET_CONF, IFLA_INET6_ADDR_GEN_MODE, IFLA_INFO_DATA, IFLA_INFO_KIND, IFLA_LINKINFO, IFLA_MTU,
  IFLA_NET_NS_FD, RTA_DST, RTA_GATEWAY, RTA_OIF, RTA_PREFSRC, RTA_TABLE, RT_SCOPE_UNIVERSE, RT_TABLE_MAIN,
  NDA_DST, NDA_LLADDR, NDMSG_LEN, RTM_GETADDR, RTM_GETLINK, RTM_GETNEIGH, RTMSG_LEN, RTN_UNICAST, RTPROT_STATIC, VETH_INFO_PEER,
} from './constants';

/** What an RTM_NEWLINK (or RTM_SETLINK-style NEWLINK on an existing index) asks for. */
export interface LinkRequest {
  /** ifi_index: 0 lets the kernel choose a new link's index; otherwise the link to change. */
  index?: number;
  name?: string;
  /** ifi_flags and ifi_change: the IFF_* bits to set, and which bits the request changes. */
  flags?: number;
  change?: number;
  /** IFLA_NET_NS_FD: create (or move) the link in the namespace behind this fd. */
  netnsFd?: number;
  /** IFLA_LINKINFO kind "veth" with VETH_INFO_PEER: the other end, possibly in another namespace. */
  vethPeer?: LinkRequest;
  /** IFLA_AF_SPEC / AF_INET / IFLA_INET_CONF: IPV4_DEVCONF_* id -> value. */
  inetConf?: ReadonlyMap<number, number>;
  /** IFLA_AF_SPEC / AF_INET6 / IFLA_INET6_ADDR_GEN_MODE: IN6_ADDR_GEN_MODE_*. */
  inet6AddrGenMode?: number;
}

/** A link as RTM_NEWLINK replies describe it. */
export interface Link {
  index: number;
  name: string;
  flags: number;
  mtu?: number;
  /** IFLA_ADDRESS as aa:bb:..., when the link has one. */
  address?: string;
  /** IFLA_LINKINFO / IFLA_INFO_KIND, e.g. "veth". */
  kind?: string;
}

export interface AddrRequest {
  index: number;
  /** Numeric IPv4 or IPv6 address; the family follows from it. */
  address: string;
  prefixLen: number;
  /** IFA_F_* (e.g. IFA_F_NODAD), sent in IFA_FLAGS. */
  flags?: number;
  scope?: number;
}

export interface Addr {
  family: number;
  index: number;
  prefixLen: number;
  flags: number;
  scope: number;
  address: string;
}

export interface RouteRequest {
  family: typeof AF_INET | typeof AF_INET6;
  /** Destination prefix; omitted for the default route. */
  dst?: string;
  dstLen: number;
  gateway?: string;
  oif?: number;
  prefsrc?: string;
  scope?: number;
  table?: number;
  protocol?: number;
}

export interface Route {
  family: number;
  dstLen: number;
  table: number;
  protocol: number;
  scope: number;
  type: number;
  dst?: string;
  gateway?: string;
  oif?: number;
  prefsrc?: string;
}

/** One entry of the neighbour table (RTM_NEWNEIGH/RTM_DELNEIGH): an address on a link and its
 * link-layer address, when the entry has one. */
export interface Neighbour {
  family: number;
  index: number;
  /** NUD_* bits. */
  state: number;
  address: string;
  lladdr?: Buffer;
}

/** One rtnetlink message: nlmsghdr, the family header, then attributes. */
export function encodeRtMessage(type: number, flags: number, seq: number, header: Buffer, attrs: Buffer = Buffer.alloc(0)): Buffer {
  const len = NLMSG_HDRLEN + header.length + attrs.length;
  const b = Buffer.alloc(len);
  b.writeUInt32LE(len, 0);
  b.writeUInt16LE(type, 4);
  b.writeUInt16LE(flags, 6);
  b.writeUInt32LE(seq >>> 0, 8);
  header.copy(b, NLMSG_HDRLEN);
  attrs.copy(b, NLMSG_HDRLEN + header.length);
  return b;
}

function ifinfomsg(family: number, link: LinkRequest): Buffer {
  const h = Buffer.alloc(IFINFOMSG_LEN);
  h.writeUInt8(family, 0);
  h.writeInt32LE(link.index ?? 0, 4);
  h.writeUInt32LE((link.flags ?? 0) >>> 0, 8);
  h.writeUInt32LE((link.change ?? 0) >>> 0, 12);
  return h;
}

function writeLinkAttrs(w: AttrWriter, link: LinkRequest): void {
  if (link.name !== undefined) w.str(IFLA_IFNAME, link.name);
  if (link.netnsFd !== undefined) w.u32(IFLA_NET_NS_FD, link.netnsFd);
  const peer = link.vethPeer;
  if (peer) {
    w.nest(IFLA_LINKINFO, (info) => {
      info.str(IFLA_INFO_KIND, 'veth');
      info.nest(IFLA_INFO_DATA, (data) => {
        // VETH_INFO_PEER carries a whole ifinfomsg followed by the peer's own IFLA_* attributes.
        const peerAttrs = new AttrWriter();
        writeLinkAttrs(peerAttrs, peer);
        data.bytes(VETH_INFO_PEER, Buffer.concat([ifinfomsg(AF_UNSPEC, peer), peerAttrs.finish()]));
      });
    });
  }
  if (link.inetConf || link.inet6AddrGenMode !== undefined) {
    w.nest(IFLA_AF_SPEC, (spec) => {
      if (link.inetConf) {
        const conf = link.inetConf;
        spec.nest(AF_INET, (inet) => inet.nest(IFLA_INET_CONF, (c) => conf.forEach((value, id) => c.u32(id, value))));
      }
      if (link.inet6AddrGenMode !== undefined) {
        const mode = link.inet6AddrGenMode;
        spec.nest(AF_INET6, (inet6) => inet6.u8(IFLA_INET6_ADDR_GEN_MODE, mode));
      }
    });
  }
}

export function encodeLinkMessage(type: number, flags: number, seq: number, link: LinkRequest): Buffer {
  const w = new AttrWriter();
  writeLinkAttrs(w, link);
  return encodeRtMessage(type, flags, seq, ifinfomsg(AF_UNSPEC, link), w.finish());
}

function familyOf(address: string, what: string): typeof AF_INET | typeof AF_INET6 {
  const version = isIP(address);
  if (version === 4) return AF_INET;
  if (version === 6) return AF_INET6;
  throw new TypeError(`${what}: ${address} is not an IP address`);
}

export function encodeAddrMessage(type: number, flags: number, seq: number, a: AddrRequest): Buffer {
  const family = familyOf(a.address, `address ${a.address}`);
  const max = family === AF_INET ? 32 : 128;
  if (!Number.isInteger(a.prefixLen) || a.prefixLen < 0 || a.prefixLen > max) {
    throw new RangeError(`address ${a.address}: prefixLen ${a.prefixLen} is not in 0..${max}`);
  }
  const h = Buffer.alloc(IFADDRMSG_LEN);
  h.writeUInt8(family, 0);
  h.writeUInt8(a.prefixLen, 1);
  h.writeUInt8((a.flags ?? 0) & 0xff, 2);
  h.writeUInt8(a.scope ?? RT_SCOPE_UNIVERSE, 3);
  h.writeUInt32LE(a.index, 4);
  const w = new AttrWriter();
  const bytes = ipAddr(a.address);
  // IPv4 names the local address in IFA_LOCAL (IFA_ADDRESS is the peer on point-to-point links).
  if (family === AF_INET) w.bytes(IFA_LOCAL, bytes);
  w.bytes(IFA_ADDRESS, bytes);
  if (a.flags !== undefined) w.u32(IFA_FLAGS, a.flags);
  return encodeRtMessage(type, flags, seq, h, w.finish());
}

export function encodeRouteMessage(type: number, flags: number, seq: number, r: RouteRequest): Buffer {
  const max = r.family === AF_INET ? 32 : 128;
  const what = `route ${r.dst ?? 'default'}/${r.dstLen}`;
  if (!Number.isInteger(r.dstLen) || r.dstLen < 0 || r.dstLen > max) throw new RangeError(`${what}: dstLen is not in 0..${max}`);
  for (const [field, addr] of [['dst', r.dst], ['gateway', r.gateway], ['prefsrc', r.prefsrc]] as const) {
    if (addr !== undefined && familyOf(addr, `${what}: ${field}`) !== r.family) throw new TypeError(`${what}: ${field} ${addr} is not of the route's family`);
  }
  const table = r.table ?? RT_TABLE_MAIN;
  const h = Buffer.alloc(RTMSG_LEN);
  h.writeUInt8(r.family, 0);
  h.writeUInt8(r.dstLen, 1);
  h.writeUInt8(table < 256 ? table : 0, 4); // RT_TABLE_UNSPEC, with RTA_TABLE carrying the id
  h.writeUInt8(r.protocol ?? RTPROT_STATIC, 5);
  h.writeUInt8(r.scope ?? RT_SCOPE_UNIVERSE, 6);
  h.writeUInt8(RTN_UNICAST, 7);
  const w = new AttrWriter();
  w.u32(RTA_TABLE, table);
  if (r.dst !== undefined) w.bytes(RTA_DST, ipAddr(r.dst));
  if (r.gateway !== undefined) w.bytes(RTA_GATEWAY, ipAddr(r.gateway));
  if (r.prefsrc !== undefined) w.bytes(RTA_PREFSRC, ipAddr(r.prefsrc));
  if (r.oif !== undefined) w.u32(RTA_OIF, r.oif);
  return encodeRtMessage(type, flags, seq, h, w.finish());
}

/** A dump request: the family header is all zeros but for the family. */
export function encodeDumpRequest(type: number, seq: number, family = AF_UNSPEC): Buffer {
  const headerLen = type === RTM_GETLINK ? IFINFOMSG_LEN : type === RTM_GETADDR ? IFADDRMSG_LEN : type === RTM_GETNEIGH ? NDMSG_LEN : RTMSG_LEN;
  const h = Buffer.alloc(headerLen);
  h.writeUInt8(family, 0);
  return encodeRtMessage(type, NLM_F_REQUEST | NLM_F_DUMP, seq, h);
}

function need(body: Buffer, len: number, what: string): void {
  if (body.length < len) throw new DecodeError(`${what}: ${body.length} bytes, the header alone needs ${len}`);
}

function formatAddr(b: Buffer, what: string): string {
  if (b.length === 4) return formatIPv4(b);
  if (b.length === 16) return formatIPv6(b);
  throw new DecodeError(`${what}: ${b.length}-byte address`);
}

function formatMac(b: Buffer): string {
  return [...b].map((x) => x.toString(16).padStart(2, '0')).join(':');
}

/** Decodes an RTM_NEWLINK body (ifinfomsg + attributes). */
export function decodeLink(body: Buffer): Link {
  need(body, IFINFOMSG_LEN, 'RTM_NEWLINK');
  const attrs = new AttrMap(parseAttrs(body, IFINFOMSG_LEN), 'RTM_NEWLINK');
  const index = body.readInt32LE(4);
  const link: Link = { index, name: attrs.required(attrs.str(IFLA_IFNAME), `link ${index}: IFLA_IFNAME`), flags: body.readUInt32LE(8) };
  const mtu = attrs.u32(IFLA_MTU);
  if (mtu !== undefined) link.mtu = mtu;
  const address = attrs.bytes(IFLA_ADDRESS);
  if (address) link.address = formatMac(address);
  const kind = attrs.nested(IFLA_LINKINFO)?.str(IFLA_INFO_KIND);
  if (kind !== undefined) link.kind = kind;
  return link;
}

/** Decodes an RTM_NEWADDR body (ifaddrmsg + attributes); IFA_FLAGS widens the 8-bit flags. */
export function decodeAddr(body: Buffer): Addr {
  need(body, IFADDRMSG_LEN, 'RTM_NEWADDR');
  const attrs = new AttrMap(parseAttrs(body, IFADDRMSG_LEN), 'RTM_NEWADDR');
  const index = body.readUInt32LE(4);
  const raw = attrs.bytes(IFA_LOCAL) ?? attrs.required(attrs.bytes(IFA_ADDRESS), `address on link ${index}: IFA_ADDRESS`);
  return {
    family: body.readUInt8(0),
    index,
    prefixLen: body.readUInt8(1),
    flags: attrs.u32(IFA_FLAGS) ?? body.readUInt8(2),
    scope: body.readUInt8(3),
    address: formatAddr(raw, `address on link ${index}`),
  };
}

/** Decodes an RTM_NEWROUTE body (rtmsg + attributes). */
export function decodeRoute(body: Buffer): Route {
  need(body, RTMSG_LEN, 'RTM_NEWROUTE');
  const attrs = new AttrMap(parseAttrs(body, RTMSG_LEN), 'RTM_NEWROUTE');
  const route: Route = {
    family: body.readUInt8(0),
    dstLen: body.readUInt8(1),
    table: attrs.u32(RTA_TABLE) ?? body.readUInt8(4),
    protocol: body.readUInt8(5),
    scope: body.readUInt8(6),
    type: body.readUInt8(7),
  };
  const what = `route of family ${route.family}`;
  const dst = attrs.bytes(RTA_DST);
  if (dst) route.dst = formatAddr(dst, `${what}: RTA_DST`);
  const gateway = attrs.bytes(RTA_GATEWAY);
  if (gateway) route.gateway = formatAddr(gateway, `${what}: RTA_GATEWAY`);
  const prefsrc = attrs.bytes(RTA_PREFSRC);
  if (prefsrc) route.prefsrc = formatAddr(prefsrc, `${what}: RTA_PREFSRC`);
  const oif = attrs.u32(RTA_OIF);
  if (oif !== undefined) route.oif = oif;
  return route;
}

/** Decodes an RTM_NEWNEIGH or RTM_DELNEIGH body (ndmsg + attributes). */
export function decodeNeighbour(body: Buffer): Neighbour {
  need(body, NDMSG_LEN, 'RTM_NEWNEIGH');
  const attrs = new AttrMap(parseAttrs(body, NDMSG_LEN), 'RTM_NEWNEIGH');
  const index = body.readInt32LE(4);
  const what = `neighbour on link ${index}`;
  const n: Neighbour = {
    family: body.readUInt8(0),
    index,
    state: body.readUInt16LE(8),
    address: formatAddr(attrs.required(attrs.bytes(NDA_DST), `${what}: NDA_DST`), `${what}: NDA_DST`),
  };
  const lladdr = attrs.bytes(NDA_LLADDR);
  if (lladdr) n.lladdr = Buffer.from(lladdr);
  return n;
}
