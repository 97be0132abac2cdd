/** nfnetlink_log constants, named as in linux/netfilter/nfnetlink_log.h (same values). */

export const NFNL_SUBSYS_ULOG = 4;

export const NFULNL_MSG_PACKET = 0;
export const NFULNL_MSG_CONFIG = 1;

// enum nfulnl_attr_type: the attributes of one NFULNL_MSG_PACKET.
export const NFULA_UNSPEC = 0;
export const NFULA_PACKET_HDR = 1;
export const NFULA_MARK = 2;
export const NFULA_TIMESTAMP = 3;
export const NFULA_IFINDEX_INDEV = 4;
export const NFULA_IFINDEX_OUTDEV = 5;
export const NFULA_IFINDEX_PHYSINDEV = 6;
export const NFULA_IFINDEX_PHYSOUTDEV = 7;
export const NFULA_HWADDR = 8;
export const NFULA_PAYLOAD = 9;
export const NFULA_PREFIX = 10;
export const NFULA_UID = 11;
export const NFULA_SEQ = 12;
export const NFULA_SEQ_GLOBAL = 13;
export const NFULA_GID = 14;
export const NFULA_HWTYPE = 15;
export const NFULA_HWHEADER = 16;
export const NFULA_HWLEN = 17;
export const NFULA_CT = 18;
export const NFULA_CT_INFO = 19;
export const NFULA_VLAN = 20;
export const NFULA_L2HDR = 21;

// enum nfulnl_msg_config_cmds
export const NFULNL_CFG_CMD_NONE = 0;
export const NFULNL_CFG_CMD_BIND = 1;
export const NFULNL_CFG_CMD_UNBIND = 2;
export const NFULNL_CFG_CMD_PF_BIND = 3;
export const NFULNL_CFG_CMD_PF_UNBIND = 4;

// enum nfulnl_attr_config
export const NFULA_CFG_UNSPEC = 0;
export const NFULA_CFG_CMD = 1;
export const NFULA_CFG_MODE = 2;
export const NFULA_CFG_NLBUFSIZ = 3;
export const NFULA_CFG_TIMEOUT = 4;
export const NFULA_CFG_QTHRESH = 5;
export const NFULA_CFG_FLAGS = 6;

export const NFULNL_COPY_NONE = 0x00;
export const NFULNL_COPY_META = 0x01;
export const NFULNL_COPY_PACKET = 0x02;

export const NFULNL_CFG_F_SEQ = 0x0001;
export const NFULNL_CFG_F_SEQ_GLOBAL = 0x0002;
export const NFULNL_CFG_F_CONNTRACK = 0x0004;

// netfilter hooks (linux/netfilter.h), as NFULA_PACKET_HDR reports them.
export const NF_INET_PRE_ROUTING = 0;
export const NF_INET_LOCAL_IN = 1;
export const NF_INET_FORWARD = 2;
export const NF_INET_LOCAL_OUT = 3;
export const NF_INET_POST_ROUTING = 4;

// NFPROTO_* as nfgenmsg's family in a packet message.
export { NFPROTO_BRIDGE, NFPROTO_IPV4, NFPROTO_IPV6 } from '../net/protocols';
