/** rtnetlink (NETLINK_ROUTE) constants, named and numbered as in linux/rtnetlink.h,
 * linux/if_link.h, linux/if_addr.h, linux/neighbour.h, linux/veth.h, linux/ip.h and linux/if.h: only those nfkube's
 * sandboxes use. */

export const NETLINK_ROUTE = 0;

// linux/rtnetlink.h: message types
export const RTM_NEWLINK = 16;
export const RTM_DELLINK = 17;
export const RTM_GETLINK = 18;
export const RTM_NEWADDR = 20;
export const RTM_DELADDR = 21;
export const RTM_GETADDR = 22;
export const RTM_NEWROUTE = 24;
export const RTM_DELROUTE = 25;
export const RTM_GETROUTE = 26;
export const RTM_NEWNEIGH = 28;
export const RTM_DELNEIGH = 29;
export const RTM_GETNEIGH = 30;

// linux/rtnetlink.h: multicast groups (enum rtnetlink_groups)
export const RTNLGRP_NEIGH = 3;

// struct ifinfomsg / ifaddrmsg / rtmsg sizes
export const IFINFOMSG_LEN = 16;
export const IFADDRMSG_LEN = 8;
export const RTMSG_LEN = 12;
export const NDMSG_LEN = 12;

// linux/neighbour.h: NDA_* and the NUD_* states
export const NDA_DST = 1;
export const NDA_LLADDR = 2;
export const NUD_INCOMPLETE = 0x01;
export const NUD_REACHABLE = 0x02;
export const NUD_STALE = 0x04;
export const NUD_DELAY = 0x08;
export const NUD_PROBE = 0x10;
export const NUD_FAILED = 0x20;
export const NUD_PERMANENT = 0x80;

// linux/rtnetlink.h: rtmsg fields
export const RT_TABLE_MAIN = 254;
export const RTPROT_BOOT = 3;
export const RTPROT_STATIC = 4;
export const RT_SCOPE_UNIVERSE = 0;
export const RT_SCOPE_LINK = 253;
export const RT_SCOPE_HOST = 254;
export const RTN_UNICAST = 1;
export const RTN_LOCAL = 2;

// enum rtattr_type_t
export const RTA_DST = 1;
export const RTA_SRC = 2;
export const RTA_IIF = 3;
export const RTA_OIF = 4;
export const RTA_GATEWAY = 5;
export const RTA_PRIORITY = 6;
export const RTA_PREFSRC = 7;
export const RTA_TABLE = 15;

// linux/if.h: net_device_flags
export const IFF_UP = 0x1;
export const IFF_LOOPBACK = 0x8;
export const IFF_RUNNING = 0x40;

// linux/if_link.h: IFLA_*
export const IFLA_ADDRESS = 1;
export const IFLA_IFNAME = 3;
export const IFLA_MTU = 4;
export const IFLA_LINK = 5;
export const IFLA_OPERSTATE = 16;
export const IFLA_LINKINFO = 18;
export const IFLA_AF_SPEC = 26;
export const IFLA_NET_NS_FD = 28;
export const IFLA_LINK_NETNSID = 37;

export const IFLA_INFO_KIND = 1;
export const IFLA_INFO_DATA = 2;

// linux/veth.h
export const VETH_INFO_PEER = 1;

// IFLA_AF_SPEC nests one attribute per address family (AF_INET, AF_INET6)
export const IFLA_INET_CONF = 1;
export const IFLA_INET6_FLAGS = 1;
export const IFLA_INET6_CONF = 2;
export const IFLA_INET6_ADDR_GEN_MODE = 8;
export const IN6_ADDR_GEN_MODE_EUI64 = 0;
export const IN6_ADDR_GEN_MODE_NONE = 1;

// linux/ip.h: IPV4_DEVCONF_* (IFLA_INET_CONF attribute types; the kernel's array index + 1)
export const IPV4_DEVCONF_FORWARDING = 1;
export const IPV4_DEVCONF_RP_FILTER = 8;

// linux/if_addr.h
export const IFA_ADDRESS = 1;
export const IFA_LOCAL = 2;
export const IFA_LABEL = 3;
export const IFA_FLAGS = 8;
export const IFA_F_NODAD = 0x02;
export const IFA_F_PERMANENT = 0x80;
