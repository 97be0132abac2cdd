/** rtnetlink codec: golden bytes laid out by hand from linux/netlink.h, rtnetlink.h, if_link.h,
 * if_addr.h, neighbour.h and veth.h, and decoders that refuse malformed bytes with DecodeError. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DecodeError } from '../../src/netlink/errors';
import { AF_INET, AF_INET6, NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST } from '../../src/netlink/message';
import { decodeAddr, decodeLink, decodeNeighbour, decodeRoute, encodeAddrMessage, encodeDumpRequest, encodeLinkMessage, encodeRouteMessage } from '../../src/rtnl/codec';
import {
  IFA_F_NODAD, IFF_UP, IN6_ADDR_GEN_MODE_NONE, IPV4_DEVCONF_FORWARDING, NUD_STALE, RT_SCOPE_LINK, RTM_GETLINK, RTM_GETNEIGH, RTM_NEWADDR,
  RTM_NEWLINK, RTM_NEWROUTE,
} from '../../src/rtnl/constants';

const CREATE = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL; // 0x0605
const hex = (s: string) => Buffer.from(s.replace(/\s+/g, ''), 'hex');

test('RTM_NEWLINK veth pair with the peer in another namespace', () => {
  const msg = encodeLinkMessage(RTM_NEWLINK, CREATE, 1, { name: 'a', vethPeer: { name: 'b', netnsFd: 7 } });
  assert.deepEqual(msg, hex(`
    60000000 1000 0506 01000000 00000000
    00 00 0000 00000000 00000000 00000000
    0600 0300 6100 0000
    3800 1280
      0900 0100 76657468 00 000000
      2800 0280
        2400 0100
          00 00 0000 00000000 00000000 00000000
          0600 0300 6200 0000
          0800 1c00 07000000`));
});

test('RTM_NEWLINK changing flags and AF_SPEC devconf of an existing link', () => {
  const up = encodeLinkMessage(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 2, { index: 3, flags: IFF_UP, change: IFF_UP });
  assert.deepEqual(up, hex('20000000 1000 0500 02000000 00000000  00 00 0000 03000000 01000000 01000000'));
  const conf = encodeLinkMessage(RTM_NEWLINK, NLM_F_REQUEST | NLM_F_ACK, 3, {
    index: 3,
    inetConf: new Map([[IPV4_DEVCONF_FORWARDING, 1]]),
    inet6AddrGenMode: IN6_ADDR_GEN_MODE_NONE,
  });
  assert.deepEqual(conf, hex(`
    40000000 1000 0500 03000000 00000000
    00 00 0000 03000000 00000000 00000000
    2000 1a80
      1000 0280
        0c00 0180
          0800 0100 01000000
      0c00 0a80
        0500 0800 01 000000`));
});

test('RTM_NEWADDR for IPv4 (IFA_LOCAL and IFA_ADDRESS) and IPv6 with IFA_F_NODAD', () => {
  assert.deepEqual(encodeAddrMessage(RTM_NEWADDR, CREATE, 4, { index: 2, address: '198.18.0.10', prefixLen: 32 }), hex(`
    28000000 1400 0506 04000000 00000000
    02 20 00 00 02000000
    0800 0200 c612000a
    0800 0100 c612000a`));
  assert.deepEqual(encodeAddrMessage(RTM_NEWADDR, CREATE, 5, { index: 2, address: '2001:db8::10', prefixLen: 128, flags: IFA_F_NODAD }), hex(`
    34000000 1400 0506 05000000 00000000
    0a 80 02 00 02000000
    1400 0100 20010db8 00000000 00000000 00000010
    0800 0800 02000000`));
  assert.throws(() => encodeAddrMessage(RTM_NEWADDR, CREATE, 6, { index: 2, address: '198.18.0.10', prefixLen: 33 }), /198\.18\.0\.10: prefixLen 33/);
  assert.throws(() => encodeAddrMessage(RTM_NEWADDR, CREATE, 6, { index: 2, address: 'web', prefixLen: 32 }), /web is not an IP address/);
});

test('RTM_NEWROUTE: a link-scope host route and a default route via a gateway', () => {
  assert.deepEqual(encodeRouteMessage(RTM_NEWROUTE, CREATE, 7, { family: AF_INET, dst: '198.18.0.10', dstLen: 32, oif: 4, scope: RT_SCOPE_LINK, prefsrc: '198.18.255.1' }), hex(`
    3c000000 1800 0506 07000000 00000000
    02 20 00 00 fe 04 fd 01 00000000
    0800 0f00 fe000000
    0800 0100 c612000a
    0800 0700 c612ff01
    0800 0400 04000000`));
  assert.deepEqual(encodeRouteMessage(RTM_NEWROUTE, CREATE, 8, { family: AF_INET6, dstLen: 0, gateway: 'fe80::1', oif: 2 }), hex(`
    40000000 1800 0506 08000000 00000000
    0a 00 00 00 fe 04 00 01 00000000
    0800 0f00 fe000000
    1400 0500 fe800000 00000000 00000000 00000001
    0800 0400 02000000`));
  assert.throws(() => encodeRouteMessage(RTM_NEWROUTE, CREATE, 9, { family: AF_INET, dst: '2001:db8::1', dstLen: 32 }), /dst 2001:db8::1 is not of the route's family/);
});

test('dump requests carry only the family header', () => {
  assert.deepEqual(encodeDumpRequest(RTM_GETLINK, 9), hex('20000000 1200 0103 09000000 00000000  00000000 00000000 00000000 00000000'));
});

test('decoders read what the kernel sends and refuse truncated or overlong bytes', () => {
  const link = hex(`
    00 00 0100 05000000 43100100 00000000
    0900 0300 65746830 00 000000
    0800 0400 dc050000
    0a00 0100 020000000001 0000
    1000 1280  0900 0100 76657468 00 000000`);
  assert.deepEqual(decodeLink(link), { index: 5, name: 'eth0', flags: 0x11043, mtu: 1500, address: '02:00:00:00:00:01', kind: 'veth' });
  assert.deepEqual(decodeAddr(hex('0a 80 82 00 05000000  1400 0100 20010db8 00000000 00000000 00000010')), {
    family: AF_INET6, index: 5, prefixLen: 128, flags: 0x82, scope: 0, address: '2001:db8::10',
  });
  assert.deepEqual(decodeRoute(hex('02 00 00 00 fe 04 00 01 00000000  0800 0f00 fe000000  0800 0500 c612ff01  0800 0400 02000000')), {
    family: AF_INET, dstLen: 0, table: 254, protocol: 4, scope: 0, type: 1, gateway: '198.18.255.1', oif: 2,
  });
  assert.throws(() => decodeLink(Buffer.alloc(8)), DecodeError);
  assert.throws(() => decodeLink(Buffer.concat([Buffer.alloc(16), hex('ff00 0300 6100 0000')])), DecodeError);
  assert.throws(() => decodeAddr(hex('02 20 00 00 05000000  0700 0200 c61200')), DecodeError);
  assert.throws(() => decodeRoute(hex('02 20 00 00 fe 04 00 01 00000000  0600 0100 c612')), DecodeError);
  assert.throws(() => decodeLink(Buffer.alloc(16)), /IFLA_IFNAME/);
});

test('RTM_GETNEIGH dump request and RTM_NEWNEIGH decoding; malformed neighbour entries refused', () => {
  assert.deepEqual(encodeDumpRequest(RTM_GETNEIGH, 9), hex('1c000000 1e00 0103 09000000 00000000  00 00 0000 00000000 0000 00 00'));
  // ndmsg: family 2, ifindex 4, state NUD_STALE (4), flags 0, type 1; NDA_DST, NDA_LLADDR.
  assert.deepEqual(decodeNeighbour(hex('02 00 0000 04000000 0400 00 01  0800 0100 c6120002  0a00 0200 020000000002 0000')), {
    family: AF_INET, index: 4, state: NUD_STALE, address: '198.18.0.2', lladdr: hex('020000000002'),
  });
  // An entry without a link-layer address (NUD_INCOMPLETE) decodes without one.
  assert.deepEqual(decodeNeighbour(hex('0a 00 0000 04000000 0100 00 01  1400 0100 20010db8 00000000 00000000 00000002')), {
    family: AF_INET6, index: 4, state: 1, address: '2001:db8::2',
  });
  assert.throws(() => decodeNeighbour(Buffer.alloc(8)), DecodeError);
  assert.throws(() => decodeNeighbour(hex('02 00 0000 04000000 0400 00 01')), /NDA_DST/);
  assert.throws(() => decodeNeighbour(hex('02 00 0000 04000000 0400 00 01  0700 0100 c61200 00')), DecodeError);
});
