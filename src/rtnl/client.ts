/** A small rtnetlink client over NetlinkSocket: the link, address and route operations a
 * sandbox of namespaces needs (veth pairs across namespaces, addresses, routes, forwarding), and
 * the neighbour table the agent binds pod addresses to MACs from. */
import { AttrWriter } from '../netlink/attr';
import { NetlinkError } from '../netlink/errors';
import { AF_INET, AF_INET6, AF_UNSPEC, NfMessage, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST } from '../netlink/message';
import { Netns } from '../netlink/netns';
import { NetlinkSocket } from '../netlink/socket';
import {
  Addr, AddrRequest, decodeAddr, decodeLink, decodeNeighbour, decodeRoute, encodeAddrMessage, encodeDumpRequest, encodeLinkMessage,
  encodeRouteMessage, encodeRtMessage, Link, LinkRequest, Neighbour, Route, RouteRequest,
} from './codec';
import {
  IFF_UP, IFINFOMSG_LEN, IFLA_IFNAME, IPV4_DEVCONF_FORWARDING, NETLINK_ROUTE, RTM_DELLINK, RTM_GETADDR, RTM_GETLINK,
  RTM_GETNEIGH, RTM_GETROUTE, RTM_NEWADDR, RTM_NEWLINK, RTM_NEWNEIGH, RTM_NEWROUTE,
} from './constants';

const CREATE = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
const CHANGE = NLM_F_REQUEST | NLM_F_ACK;

/** NetlinkSocket frames every reply as nfnetlink, splitting off a 4-byte nfgenmsg that rtnetlink
 * messages do not have: put those bytes back to get the rtnetlink body. */
export function rtnlBody(m: NfMessage): Buffer {
  const head = Buffer.alloc(4);
  head.writeUInt8(m.family, 0);
  head.writeUInt8(m.version, 1);
  head.writeUInt16BE(m.resId, 2);
  return Buffer.concat([head, m.payload]);
}

export class Rtnl {
  private constructor(readonly socket: NetlinkSocket) {}

  /** An rtnetlink socket in the namespace (default: the current one). */
  static open(netns?: Netns | string): Rtnl {
    return new Rtnl(NetlinkSocket.open({ protocol: NETLINK_ROUTE, netns }));
  }

  close(): Promise<void> {
    return this.socket.close();
  }

  /** Sends one request and turns its error ack into a NetlinkError naming op and object. */
  private async request(op: string, object: string, build: (seq: number) => Buffer): Promise<NfMessage[]> {
    const seq = this.socket.nextSeq();
    const reply = await this.socket.transact([build(seq)]);
    const failed = reply.acks.find((a) => a.seq === seq && a.errno !== 0);
    if (failed) throw new NetlinkError({ code: failed.code ?? `E${failed.errno}`, errno: failed.errno, extAck: failed.extAck, offset: failed.offset, op, object });
    return reply.messages.filter((m) => m.seq === seq);
  }

  /** Creates a veth pair: `link` here (or in link.netnsFd) and `peer` in peer.netnsFd. */
  async createVeth(link: LinkRequest & { name: string }, peer: LinkRequest & { name: string }): Promise<void> {
    await this.request('RTM_NEWLINK', `veth ${link.name} peer ${peer.name}`, (seq) => encodeLinkMessage(RTM_NEWLINK, CREATE, seq, { ...link, vethPeer: peer }));
  }

  /** Changes an existing link (flags, AF_SPEC settings); index names it. */
  async changeLink(link: LinkRequest & { index: number }): Promise<void> {
    await this.request('RTM_NEWLINK', `link ${link.index}`, (seq) => encodeLinkMessage(RTM_NEWLINK, CHANGE, seq, link));
  }

  async setUp(index: number): Promise<void> {
    await this.changeLink({ index, flags: IFF_UP, change: IFF_UP });
  }

  /** IPv4 forwarding of packets that arrive on this link (its IPV4_DEVCONF_FORWARDING). */
  async setIPv4Forwarding(index: number, on: boolean): Promise<void> {
    await this.changeLink({ index, inetConf: new Map([[IPV4_DEVCONF_FORWARDING, on ? 1 : 0]]) });
  }

  async deleteLink(index: number): Promise<void> {
    await this.request('RTM_DELLINK', `link ${index}`, (seq) => encodeLinkMessage(RTM_DELLINK, CHANGE, seq, { index }));
  }

  async addAddress(a: AddrRequest): Promise<void> {
    await this.request('RTM_NEWADDR', `address ${a.address}/${a.prefixLen} on link ${a.index}`, (seq) => encodeAddrMessage(RTM_NEWADDR, CREATE, seq, a));
  }

  async addRoute(r: RouteRequest): Promise<void> {
    await this.request('RTM_NEWROUTE', `route ${r.dst ?? 'default'}/${r.dstLen}`, (seq) => encodeRouteMessage(RTM_NEWROUTE, CREATE, seq, r));
  }

  /** The link called name, or undefined (ENODEV). */
  async link(name: string): Promise<Link | undefined> {
    const attrs = new AttrWriter().str(IFLA_IFNAME, name).finish();
    try {
      const replies = await this.request('RTM_GETLINK', `link ${name}`, (seq) => encodeRtMessage(RTM_GETLINK, CHANGE, seq, Buffer.alloc(IFINFOMSG_LEN), attrs));
      const found = replies.find((m) => m.type === RTM_NEWLINK);
      return found ? decodeLink(rtnlBody(found)) : undefined;
    } catch (err) {
      if (err instanceof NetlinkError && err.code === 'ENODEV') return undefined;
      throw err;
    }
  }

  async links(): Promise<Link[]> {
    const replies = await this.socket.dump(encodeDumpRequest(RTM_GETLINK, this.socket.nextSeq()), 'RTM_GETLINK dump');
    return replies.filter((m) => m.type === RTM_NEWLINK).map((m) => decodeLink(rtnlBody(m)));
  }

  async addresses(family: number = AF_UNSPEC): Promise<Addr[]> {
    const replies = await this.socket.dump(encodeDumpRequest(RTM_GETADDR, this.socket.nextSeq(), family), 'RTM_GETADDR dump');
    return replies.filter((m) => m.type === RTM_NEWADDR).map((m) => decodeAddr(rtnlBody(m)));
  }

  /** The neighbour table (ARP and NDP entries), every link. */
  async neighbours(family: number = AF_UNSPEC): Promise<Neighbour[]> {
    const replies = await this.socket.dump(encodeDumpRequest(RTM_GETNEIGH, this.socket.nextSeq(), family), 'RTM_GETNEIGH dump');
    return replies.filter((m) => m.type === RTM_NEWNEIGH).map((m) => decodeNeighbour(rtnlBody(m)));
  }

  async routes(family: typeof AF_INET | typeof AF_INET6): Promise<Route[]> {
    const replies = await this.socket.dump(encodeDumpRequest(RTM_GETROUTE, this.socket.nextSeq(), family), 'RTM_GETROUTE dump');
    return replies.filter((m) => m.type === RTM_NEWROUTE).map((m) => decodeRoute(rtnlBody(m)));
  }
}
