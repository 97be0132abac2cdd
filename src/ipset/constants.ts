/** ipset netlink constants, named as in linux/netfilter/ipset/ip_set{,_hash,_bitmap,_list}.h. */

export const IPSET_PROTOCOL = 7;
export const IPSET_PROTOCOL_MIN = 6;
/** Longest set or type name including the NUL. */
export const IPSET_MAXNAMELEN = 32;
export const IPSET_MAX_COMMENT_SIZE = 255;

// enum ipset_cmd
export const IPSET_CMD_NONE = 0;
export const IPSET_CMD_PROTOCOL = 1;
export const IPSET_CMD_CREATE = 2;
export const IPSET_CMD_DESTROY = 3;
export const IPSET_CMD_FLUSH = 4;
export const IPSET_CMD_RENAME = 5;
export const IPSET_CMD_SWAP = 6;
export const IPSET_CMD_LIST = 7;
export const IPSET_CMD_SAVE = 8;
export const IPSET_CMD_ADD = 9;
export const IPSET_CMD_DEL = 10;
export const IPSET_CMD_TEST = 11;
export const IPSET_CMD_HEADER = 12;
export const IPSET_CMD_TYPE = 13;
export const IPSET_CMD_GET_BYNAME = 14;
export const IPSET_CMD_GET_BYINDEX = 15;

// Attributes at command level
export const IPSET_ATTR_UNSPEC = 0;
export const IPSET_ATTR_PROTOCOL = 1;
export const IPSET_ATTR_SETNAME = 2;
export const IPSET_ATTR_TYPENAME = 3;
export const IPSET_ATTR_SETNAME2 = IPSET_ATTR_TYPENAME;
export const IPSET_ATTR_REVISION = 4;
export const IPSET_ATTR_FAMILY = 5;
export const IPSET_ATTR_FLAGS = 6;
export const IPSET_ATTR_DATA = 7;
export const IPSET_ATTR_ADT = 8;
export const IPSET_ATTR_LINENO = 9;
export const IPSET_ATTR_PROTOCOL_MIN = 10;
export const IPSET_ATTR_REVISION_MIN = IPSET_ATTR_PROTOCOL_MIN;
export const IPSET_ATTR_INDEX = 11;

// CADT specific attributes
export const IPSET_ATTR_IP = 1;
export const IPSET_ATTR_IP_FROM = IPSET_ATTR_IP;
export const IPSET_ATTR_IP_TO = 2;
export const IPSET_ATTR_CIDR = 3;
export const IPSET_ATTR_PORT = 4;
export const IPSET_ATTR_PORT_FROM = IPSET_ATTR_PORT;
export const IPSET_ATTR_PORT_TO = 5;
export const IPSET_ATTR_TIMEOUT = 6;
export const IPSET_ATTR_PROTO = 7;
export const IPSET_ATTR_CADT_FLAGS = 8;
export const IPSET_ATTR_CADT_LINENO = IPSET_ATTR_LINENO;
export const IPSET_ATTR_MARK = 10;
export const IPSET_ATTR_MARKMASK = 11;
export const IPSET_ATTR_CADT_MAX = 16;
// Create-only specific attributes
export const IPSET_ATTR_INITVAL = 17;
export const IPSET_ATTR_HASHSIZE = 18;
export const IPSET_ATTR_MAXELEM = 19;
export const IPSET_ATTR_NETMASK = 20;
export const IPSET_ATTR_BUCKETSIZE = 21;
export const IPSET_ATTR_RESIZE = 22;
export const IPSET_ATTR_SIZE = 23;
// Kernel-only
export const IPSET_ATTR_ELEMENTS = 24;
export const IPSET_ATTR_REFERENCES = 25;
export const IPSET_ATTR_MEMSIZE = 26;

// ADT specific attributes
export const IPSET_ATTR_ETHER = 17;
export const IPSET_ATTR_NAME = 18;
export const IPSET_ATTR_NAMEREF = 19;
export const IPSET_ATTR_IP2 = 20;
export const IPSET_ATTR_CIDR2 = 21;
export const IPSET_ATTR_IP2_TO = 22;
export const IPSET_ATTR_IFACE = 23;
export const IPSET_ATTR_BYTES = 24;
export const IPSET_ATTR_PACKETS = 25;
export const IPSET_ATTR_COMMENT = 26;
export const IPSET_ATTR_SKBMARK = 27;
export const IPSET_ATTR_SKBPRIO = 28;
export const IPSET_ATTR_SKBQUEUE = 29;
export const IPSET_ATTR_PAD = 30;

// IP specific attributes
export const IPSET_ATTR_IPADDR_IPV4 = 1;
export const IPSET_ATTR_IPADDR_IPV6 = 2;

// enum ipset_errno
export const IPSET_ERR_PRIVATE = 4096;
export const IPSET_ERR_PROTOCOL = 4097;
export const IPSET_ERR_FIND_TYPE = 4098;
export const IPSET_ERR_MAX_SETS = 4099;
export const IPSET_ERR_BUSY = 4100;
export const IPSET_ERR_EXIST_SETNAME2 = 4101;
export const IPSET_ERR_TYPE_MISMATCH = 4102;
export const IPSET_ERR_EXIST = 4103;
export const IPSET_ERR_INVALID_CIDR = 4104;
export const IPSET_ERR_INVALID_NETMASK = 4105;
export const IPSET_ERR_INVALID_FAMILY = 4106;
export const IPSET_ERR_TIMEOUT = 4107;
export const IPSET_ERR_REFERENCED = 4108;
export const IPSET_ERR_IPADDR_IPV4 = 4109;
export const IPSET_ERR_IPADDR_IPV6 = 4110;
export const IPSET_ERR_COUNTER = 4111;
export const IPSET_ERR_COMMENT = 4112;
export const IPSET_ERR_INVALID_MARKMASK = 4113;
export const IPSET_ERR_SKBINFO = 4114;
export const IPSET_ERR_TYPE_SPECIFIC = 4352;
// ip_set_hash.h
export const IPSET_ERR_HASH_FULL = IPSET_ERR_TYPE_SPECIFIC;
export const IPSET_ERR_HASH_ELEM = 4353;
export const IPSET_ERR_INVALID_PROTO = 4354;
export const IPSET_ERR_MISSING_PROTO = 4355;
export const IPSET_ERR_HASH_RANGE_UNSUPPORTED = 4356;
export const IPSET_ERR_HASH_RANGE = 4357;
// ip_set_bitmap.h
export const IPSET_ERR_BITMAP_RANGE = IPSET_ERR_TYPE_SPECIFIC;
export const IPSET_ERR_BITMAP_RANGE_SIZE = 4353;
// ip_set_list.h
export const IPSET_ERR_NAME = IPSET_ERR_TYPE_SPECIFIC;
export const IPSET_ERR_LOOP = 4353;
export const IPSET_ERR_BEFORE = 4354;
export const IPSET_ERR_NAMEREF = 4355;
export const IPSET_ERR_LIST_FULL = 4356;
export const IPSET_ERR_REF_EXIST = 4357;

// enum ipset_cmd_flags
export const IPSET_FLAG_EXIST = 1 << 0;
export const IPSET_FLAG_LIST_SETNAME = 1 << 1;
export const IPSET_FLAG_LIST_HEADER = 1 << 2;
export const IPSET_FLAG_SKIP_COUNTER_UPDATE = 1 << 3;
export const IPSET_FLAG_SKIP_SUBCOUNTER_UPDATE = 1 << 4;
export const IPSET_FLAG_MATCH_COUNTERS = 1 << 5;
export const IPSET_FLAG_RETURN_NOMATCH = 1 << 7;

// enum ipset_cadt_flags
export const IPSET_FLAG_BEFORE = 1 << 0;
export const IPSET_FLAG_PHYSDEV = 1 << 1;
export const IPSET_FLAG_NOMATCH = 1 << 2;
export const IPSET_FLAG_WITH_COUNTERS = 1 << 3;
export const IPSET_FLAG_WITH_COMMENT = 1 << 4;
export const IPSET_FLAG_WITH_FORCEADD = 1 << 5;
export const IPSET_FLAG_WITH_SKBINFO = 1 << 6;

// Kernel defaults and limits of the hash and list types (ip_set_hash_gen.h, ip_set_list_set.c).
export const IPSET_DEFAULT_HASHSIZE = 1024;
export const IPSET_MIMINAL_HASHSIZE = 64;
export const IPSET_DEFAULT_MAXELEM = 65536;
export const IPSET_LIST_DEFAULT_SIZE = 8;
export const IPSET_LIST_MIN_SIZE = 4;
