/** Protocol numbers the kernel's interfaces share, in one place: IP protocols (IPPROTO_*),
 * netfilter families (NFPROTO_*) and conntrack state bits (ct state). */

/** IPPROTO_* (linux/in.h, linux/in6.h), by the names nft and /etc/protocols give them. */
export const IPPROTO = { icmp: 1, tcp: 6, udp: 17, 'ipv6-icmp': 58, sctp: 132, udplite: 136 } as const;
export type IpProtocolName = keyof typeof IPPROTO;

export const IPPROTO_ICMP = IPPROTO.icmp;
export const IPPROTO_TCP = IPPROTO.tcp;
export const IPPROTO_UDP = IPPROTO.udp;
export const IPPROTO_ICMPV6 = IPPROTO['ipv6-icmp'];
export const IPPROTO_SCTP = IPPROTO.sctp;

/** The name of each protocol number in IPPROTO. */
export const IPPROTO_NAME: Readonly<Record<number, IpProtocolName>> = Object.fromEntries(Object.entries(IPPROTO).map(([name, n]) => [n, name as IpProtocolName]));

/** Kubernetes' protocol names (Service ports, NetworkPolicy ports) as IP protocol numbers. */
export const K8S_IPPROTO = { TCP: IPPROTO_TCP, UDP: IPPROTO_UDP, SCTP: IPPROTO_SCTP } as const;

// NFPROTO_* (linux/netfilter.h): the family of nf_tables tables, nfnetlink messages and logged packets.
export const NFPROTO_UNSPEC = 0;
export const NFPROTO_INET = 1;
export const NFPROTO_IPV4 = 2;
export const NFPROTO_ARP = 3;
export const NFPROTO_NETDEV = 5;
export const NFPROTO_BRIDGE = 7;
export const NFPROTO_IPV6 = 10;

/** `ct state` bits (NF_CT_STATE_INVALID_BIT, NF_CT_STATE_BIT(IP_CT_ESTABLISHED) ...,
 * NF_CT_STATE_UNTRACKED_BIT in linux/netfilter/nf_conntrack_common.h), by nft's names. */
export const CT_STATE = { invalid: 1, established: 2, related: 4, new: 8, untracked: 64 } as const;
export type CtStateName = keyof typeof CT_STATE;

/** `ct status` bits (enum ip_conntrack_status in linux/netfilter/nf_conntrack_common.h), by nft's
 * names. */
export const CT_STATUS = { snat: 1 << 4, dnat: 1 << 5 } as const;
export type CtStatusName = keyof typeof CT_STATUS;
