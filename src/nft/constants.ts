/** nf_tables constants, named as in linux/netfilter/nf_tables.h (same order, same values): the
 * enums nfkube uses, each whole, and the #defines it uses. scripts/nft-constants-usage.js lists
 * (and with --write removes) what nothing uses any more. */

export const NFT_DATA_VALUE_MAXLEN = 64;
export const NFT_OBJECT_COUNTER = 1;
// enum nft_registers
export const NFT_REG_VERDICT = 0;
export const NFT_REG_1 = 1;
export const NFT_REG_2 = 2;
export const NFT_REG_3 = 3;
export const NFT_REG_4 = 4;
export const NFT_REG32_00 = 8;
export const NFT_REG32_01 = 9;
export const NFT_REG32_02 = 10;
export const NFT_REG32_03 = 11;
export const NFT_REG32_04 = 12;
export const NFT_REG32_05 = 13;
export const NFT_REG32_06 = 14;
export const NFT_REG32_07 = 15;
export const NFT_REG32_08 = 16;
export const NFT_REG32_09 = 17;
export const NFT_REG32_10 = 18;
export const NFT_REG32_11 = 19;
export const NFT_REG32_12 = 20;
export const NFT_REG32_13 = 21;
export const NFT_REG32_14 = 22;
export const NFT_REG32_15 = 23;

// linux/netfilter.h verdicts, carried in NFTA_VERDICT_CODE
export const NF_DROP = 0;
export const NF_ACCEPT = 1;
export const NF_STOLEN = 2;
export const NF_QUEUE = 3;
export const NF_REPEAT = 4;

// enum nft_verdicts
export const NFT_CONTINUE = -1;
export const NFT_BREAK = -2;
export const NFT_JUMP = -3;
export const NFT_GOTO = -4;
export const NFT_RETURN = -5;

// enum nf_tables_msg_types
export const NFT_MSG_NEWTABLE = 0;
export const NFT_MSG_GETTABLE = 1;
export const NFT_MSG_DELTABLE = 2;
export const NFT_MSG_NEWCHAIN = 3;
export const NFT_MSG_GETCHAIN = 4;
export const NFT_MSG_DELCHAIN = 5;
export const NFT_MSG_NEWRULE = 6;
export const NFT_MSG_GETRULE = 7;
export const NFT_MSG_DELRULE = 8;
export const NFT_MSG_NEWSET = 9;
export const NFT_MSG_GETSET = 10;
export const NFT_MSG_DELSET = 11;
export const NFT_MSG_NEWSETELEM = 12;
export const NFT_MSG_GETSETELEM = 13;
export const NFT_MSG_DELSETELEM = 14;
export const NFT_MSG_NEWGEN = 15;
export const NFT_MSG_GETGEN = 16;
export const NFT_MSG_TRACE = 17;
export const NFT_MSG_NEWOBJ = 18;
export const NFT_MSG_GETOBJ = 19;
export const NFT_MSG_DELOBJ = 20;
export const NFT_MSG_GETOBJ_RESET = 21;
export const NFT_MSG_NEWFLOWTABLE = 22;
export const NFT_MSG_GETFLOWTABLE = 23;
export const NFT_MSG_DELFLOWTABLE = 24;
// Added after the installed header (Linux 6.1) was cut; values from nf_tables.h of Linux >= 6.3.
export const NFT_MSG_GETRULE_RESET = 25;
export const NFT_MSG_DESTROYTABLE = 26;
export const NFT_MSG_DESTROYCHAIN = 27;
export const NFT_MSG_DESTROYRULE = 28;
export const NFT_MSG_DESTROYSET = 29;
export const NFT_MSG_DESTROYSETELEM = 30;
export const NFT_MSG_DESTROYOBJ = 31;
export const NFT_MSG_DESTROYFLOWTABLE = 32;
export const NFT_MSG_GETSETELEM_RESET = 33;

// enum nft_list_attributes
export const NFTA_LIST_UNSPEC = 0;
export const NFTA_LIST_ELEM = 1;

// enum nft_hook_attributes
export const NFTA_HOOK_UNSPEC = 0;
export const NFTA_HOOK_HOOKNUM = 1;
export const NFTA_HOOK_PRIORITY = 2;
export const NFTA_HOOK_DEV = 3;
export const NFTA_HOOK_DEVS = 4;

// enum nft_table_flags
export const NFT_TABLE_F_DORMANT = 1;
export const NFT_TABLE_F_OWNER = 2;
/** Linux 6.9: an owned table outlives its owner's socket (ownerless until adopted again). */
export const NFT_TABLE_F_PERSIST = 4;

// enum nft_table_attributes
export const NFTA_TABLE_UNSPEC = 0;
export const NFTA_TABLE_NAME = 1;
export const NFTA_TABLE_FLAGS = 2;
export const NFTA_TABLE_USE = 3;
export const NFTA_TABLE_HANDLE = 4;
export const NFTA_TABLE_PAD = 5;
export const NFTA_TABLE_USERDATA = 6;
/** nf_tables.h: the most user data a table, chain, set or rule may carry. */
export const NFT_USERDATA_MAXLEN = 256;
export const NFTA_TABLE_OWNER = 7;

// enum nft_chain_attributes
export const NFTA_CHAIN_UNSPEC = 0;
export const NFTA_CHAIN_TABLE = 1;
export const NFTA_CHAIN_HANDLE = 2;
export const NFTA_CHAIN_NAME = 3;
export const NFTA_CHAIN_HOOK = 4;
export const NFTA_CHAIN_POLICY = 5;
export const NFTA_CHAIN_USE = 6;
export const NFTA_CHAIN_TYPE = 7;
export const NFTA_CHAIN_COUNTERS = 8;
export const NFTA_CHAIN_PAD = 9;
export const NFTA_CHAIN_FLAGS = 10;
export const NFTA_CHAIN_ID = 11;
export const NFTA_CHAIN_USERDATA = 12;

// enum nft_rule_attributes
export const NFTA_RULE_UNSPEC = 0;
export const NFTA_RULE_TABLE = 1;
export const NFTA_RULE_CHAIN = 2;
export const NFTA_RULE_HANDLE = 3;
export const NFTA_RULE_EXPRESSIONS = 4;
export const NFTA_RULE_COMPAT = 5;
export const NFTA_RULE_POSITION = 6;
export const NFTA_RULE_USERDATA = 7;
export const NFTA_RULE_PAD = 8;
export const NFTA_RULE_ID = 9;
export const NFTA_RULE_POSITION_ID = 10;
export const NFTA_RULE_CHAIN_ID = 11;

// enum nft_set_flags
export const NFT_SET_ANONYMOUS = 1;
export const NFT_SET_CONSTANT = 2;
export const NFT_SET_INTERVAL = 4;
export const NFT_SET_MAP = 8;
export const NFT_SET_TIMEOUT = 16;
export const NFT_SET_EVAL = 32;
export const NFT_SET_OBJECT = 64;
export const NFT_SET_CONCAT = 128;
export const NFT_SET_EXPR = 256;

// enum nft_set_desc_attributes
export const NFTA_SET_DESC_UNSPEC = 0;
export const NFTA_SET_DESC_SIZE = 1;
export const NFTA_SET_DESC_CONCAT = 2;

// enum nft_set_field_attributes
export const NFTA_SET_FIELD_UNSPEC = 0;
export const NFTA_SET_FIELD_LEN = 1;

// enum nft_set_attributes
export const NFTA_SET_UNSPEC = 0;
export const NFTA_SET_TABLE = 1;
export const NFTA_SET_NAME = 2;
export const NFTA_SET_FLAGS = 3;
export const NFTA_SET_KEY_TYPE = 4;
export const NFTA_SET_KEY_LEN = 5;
export const NFTA_SET_DATA_TYPE = 6;
export const NFTA_SET_DATA_LEN = 7;
export const NFTA_SET_POLICY = 8;
export const NFTA_SET_DESC = 9;
export const NFTA_SET_ID = 10;
export const NFTA_SET_TIMEOUT = 11;
export const NFTA_SET_GC_INTERVAL = 12;
export const NFTA_SET_USERDATA = 13;
export const NFTA_SET_PAD = 14;
export const NFTA_SET_OBJ_TYPE = 15;
export const NFTA_SET_HANDLE = 16;
export const NFTA_SET_EXPR = 17;
export const NFTA_SET_EXPRESSIONS = 18;

// enum nft_set_elem_flags
export const NFT_SET_ELEM_INTERVAL_END = 1;
export const NFT_SET_ELEM_CATCHALL = 2;

// enum nft_set_elem_attributes
export const NFTA_SET_ELEM_UNSPEC = 0;
export const NFTA_SET_ELEM_KEY = 1;
export const NFTA_SET_ELEM_DATA = 2;
export const NFTA_SET_ELEM_FLAGS = 3;
export const NFTA_SET_ELEM_TIMEOUT = 4;
export const NFTA_SET_ELEM_EXPIRATION = 5;
export const NFTA_SET_ELEM_USERDATA = 6;
export const NFTA_SET_ELEM_EXPR = 7;
export const NFTA_SET_ELEM_PAD = 8;
export const NFTA_SET_ELEM_OBJREF = 9;
export const NFTA_SET_ELEM_KEY_END = 10;
export const NFTA_SET_ELEM_EXPRESSIONS = 11;

// enum nft_set_elem_list_attributes
export const NFTA_SET_ELEM_LIST_UNSPEC = 0;
export const NFTA_SET_ELEM_LIST_TABLE = 1;
export const NFTA_SET_ELEM_LIST_SET = 2;
export const NFTA_SET_ELEM_LIST_ELEMENTS = 3;
export const NFTA_SET_ELEM_LIST_SET_ID = 4;

// enum nft_data_types
export const NFT_DATA_VALUE = 0;
export const NFT_DATA_VERDICT = 0xffffff00;

// enum nft_data_attributes
export const NFTA_DATA_UNSPEC = 0;
export const NFTA_DATA_VALUE = 1;
export const NFTA_DATA_VERDICT = 2;

// enum nft_verdict_attributes
export const NFTA_VERDICT_UNSPEC = 0;
export const NFTA_VERDICT_CODE = 1;
export const NFTA_VERDICT_CHAIN = 2;
export const NFTA_VERDICT_CHAIN_ID = 3;

// enum nft_expr_attributes
export const NFTA_EXPR_UNSPEC = 0;
export const NFTA_EXPR_NAME = 1;
export const NFTA_EXPR_DATA = 2;

// enum nft_immediate_attributes
export const NFTA_IMMEDIATE_UNSPEC = 0;
export const NFTA_IMMEDIATE_DREG = 1;
export const NFTA_IMMEDIATE_DATA = 2;

// enum nft_bitwise_ops
export const NFT_BITWISE_MASK_XOR = 0;
export const NFT_BITWISE_LSHIFT = 1;
export const NFT_BITWISE_RSHIFT = 2;

// enum nft_bitwise_attributes
export const NFTA_BITWISE_UNSPEC = 0;
export const NFTA_BITWISE_SREG = 1;
export const NFTA_BITWISE_DREG = 2;
export const NFTA_BITWISE_LEN = 3;
export const NFTA_BITWISE_MASK = 4;
export const NFTA_BITWISE_XOR = 5;
export const NFTA_BITWISE_OP = 6;
export const NFTA_BITWISE_DATA = 7;

// enum nft_cmp_ops
export const NFT_CMP_EQ = 0;
export const NFT_CMP_NEQ = 1;
export const NFT_CMP_LT = 2;
export const NFT_CMP_LTE = 3;
export const NFT_CMP_GT = 4;
export const NFT_CMP_GTE = 5;

// enum nft_cmp_attributes
export const NFTA_CMP_UNSPEC = 0;
export const NFTA_CMP_SREG = 1;
export const NFTA_CMP_OP = 2;
export const NFTA_CMP_DATA = 3;

// enum nft_range_ops
export const NFT_RANGE_EQ = 0;
export const NFT_RANGE_NEQ = 1;

// enum nft_range_attributes
export const NFTA_RANGE_UNSPEC = 0;
export const NFTA_RANGE_SREG = 1;
export const NFTA_RANGE_OP = 2;
export const NFTA_RANGE_FROM_DATA = 3;
export const NFTA_RANGE_TO_DATA = 4;

// enum nft_lookup_flags
export const NFT_LOOKUP_F_INV = 1;

// enum nft_lookup_attributes
export const NFTA_LOOKUP_UNSPEC = 0;
export const NFTA_LOOKUP_SET = 1;
export const NFTA_LOOKUP_SREG = 2;
export const NFTA_LOOKUP_DREG = 3;
export const NFTA_LOOKUP_SET_ID = 4;
export const NFTA_LOOKUP_FLAGS = 5;

// enum nft_dynset_ops
export const NFT_DYNSET_OP_ADD = 0;
export const NFT_DYNSET_OP_UPDATE = 1;
export const NFT_DYNSET_OP_DELETE = 2;

// enum nft_dynset_flags
export const NFT_DYNSET_F_INV = 1;
export const NFT_DYNSET_F_EXPR = 2;

// enum nft_dynset_attributes
export const NFTA_DYNSET_UNSPEC = 0;
export const NFTA_DYNSET_SET_NAME = 1;
export const NFTA_DYNSET_SET_ID = 2;
export const NFTA_DYNSET_OP = 3;
export const NFTA_DYNSET_SREG_KEY = 4;
export const NFTA_DYNSET_SREG_DATA = 5;
export const NFTA_DYNSET_TIMEOUT = 6;
export const NFTA_DYNSET_EXPR = 7;
export const NFTA_DYNSET_PAD = 8;
export const NFTA_DYNSET_FLAGS = 9;
export const NFTA_DYNSET_EXPRESSIONS = 10;

// enum nft_payload_bases
export const NFT_PAYLOAD_LL_HEADER = 0;
export const NFT_PAYLOAD_NETWORK_HEADER = 1;
export const NFT_PAYLOAD_TRANSPORT_HEADER = 2;
export const NFT_PAYLOAD_INNER_HEADER = 3;

// enum nft_payload_csum_types
export const NFT_PAYLOAD_CSUM_NONE = 0;
export const NFT_PAYLOAD_CSUM_INET = 1;
export const NFT_PAYLOAD_CSUM_SCTP = 2;

// enum nft_payload_attributes
export const NFTA_PAYLOAD_UNSPEC = 0;
export const NFTA_PAYLOAD_DREG = 1;
export const NFTA_PAYLOAD_BASE = 2;
export const NFTA_PAYLOAD_OFFSET = 3;
export const NFTA_PAYLOAD_LEN = 4;
export const NFTA_PAYLOAD_SREG = 5;
export const NFTA_PAYLOAD_CSUM_TYPE = 6;
export const NFTA_PAYLOAD_CSUM_OFFSET = 7;
export const NFTA_PAYLOAD_CSUM_FLAGS = 8;

// enum nft_meta_keys
export const NFT_META_LEN = 0;
export const NFT_META_PROTOCOL = 1;
export const NFT_META_PRIORITY = 2;
export const NFT_META_MARK = 3;
export const NFT_META_IIF = 4;
export const NFT_META_OIF = 5;
export const NFT_META_IIFNAME = 6;
export const NFT_META_OIFNAME = 7;
export const NFT_META_IFTYPE = 8;
export const NFT_META_IIFTYPE = NFT_META_IFTYPE;
export const NFT_META_OIFTYPE = 9;
export const NFT_META_SKUID = 10;
export const NFT_META_SKGID = 11;
export const NFT_META_NFTRACE = 12;
export const NFT_META_RTCLASSID = 13;
export const NFT_META_SECMARK = 14;
export const NFT_META_NFPROTO = 15;
export const NFT_META_L4PROTO = 16;
export const NFT_META_BRI_IIFNAME = 17;
export const NFT_META_BRI_OIFNAME = 18;
export const NFT_META_PKTTYPE = 19;
export const NFT_META_CPU = 20;
export const NFT_META_IIFGROUP = 21;
export const NFT_META_OIFGROUP = 22;
export const NFT_META_CGROUP = 23;
export const NFT_META_PRANDOM = 24;
export const NFT_META_SECPATH = 25;
export const NFT_META_IIFKIND = 26;
export const NFT_META_OIFKIND = 27;
export const NFT_META_BRI_IIFPVID = 28;
export const NFT_META_BRI_IIFVPROTO = 29;
export const NFT_META_TIME_NS = 30;
export const NFT_META_TIME_DAY = 31;
export const NFT_META_TIME_HOUR = 32;
export const NFT_META_SDIF = 33;
export const NFT_META_SDIFNAME = 34;

// enum nft_hash_types
export const NFT_HASH_JENKINS = 0;
export const NFT_HASH_SYM = 1;

// enum nft_hash_attributes
export const NFTA_HASH_UNSPEC = 0;
export const NFTA_HASH_SREG = 1;
export const NFTA_HASH_DREG = 2;
export const NFTA_HASH_LEN = 3;
export const NFTA_HASH_MODULUS = 4;
export const NFTA_HASH_SEED = 5;
export const NFTA_HASH_OFFSET = 6;
export const NFTA_HASH_TYPE = 7;
export const NFTA_HASH_SET_NAME = 8;
export const NFTA_HASH_SET_ID = 9;

// enum nft_meta_attributes
export const NFTA_META_UNSPEC = 0;
export const NFTA_META_DREG = 1;
export const NFTA_META_KEY = 2;
export const NFTA_META_SREG = 3;

// enum nft_ct_keys
export const NFT_CT_STATE = 0;
export const NFT_CT_DIRECTION = 1;
export const NFT_CT_STATUS = 2;
export const NFT_CT_MARK = 3;
export const NFT_CT_SECMARK = 4;
export const NFT_CT_EXPIRATION = 5;
export const NFT_CT_HELPER = 6;
export const NFT_CT_L3PROTOCOL = 7;
export const NFT_CT_SRC = 8;
export const NFT_CT_DST = 9;
export const NFT_CT_PROTOCOL = 10;
export const NFT_CT_PROTO_SRC = 11;
export const NFT_CT_PROTO_DST = 12;
export const NFT_CT_LABELS = 13;
export const NFT_CT_PKTS = 14;
export const NFT_CT_BYTES = 15;
export const NFT_CT_AVGPKT = 16;
export const NFT_CT_ZONE = 17;
export const NFT_CT_EVENTMASK = 18;
export const NFT_CT_SRC_IP = 19;
export const NFT_CT_DST_IP = 20;
export const NFT_CT_SRC_IP6 = 21;
export const NFT_CT_DST_IP6 = 22;
export const NFT_CT_ID = 23;

// enum nft_ct_attributes
export const NFTA_CT_UNSPEC = 0;
export const NFTA_CT_DREG = 1;
export const NFTA_CT_KEY = 2;
export const NFTA_CT_DIRECTION = 3;
export const NFTA_CT_SREG = 4;

// enum nft_limit_type
export const NFT_LIMIT_PKTS = 0;
export const NFT_LIMIT_PKT_BYTES = 1;

// enum nft_limit_flags
export const NFT_LIMIT_F_INV = 1;

// enum nft_limit_attributes
export const NFTA_LIMIT_UNSPEC = 0;
export const NFTA_LIMIT_RATE = 1;
export const NFTA_LIMIT_UNIT = 2;
export const NFTA_LIMIT_BURST = 3;
export const NFTA_LIMIT_TYPE = 4;
export const NFTA_LIMIT_FLAGS = 5;
export const NFTA_LIMIT_PAD = 6;

// enum nft_counter_attributes
export const NFTA_COUNTER_UNSPEC = 0;
export const NFTA_COUNTER_BYTES = 1;
export const NFTA_COUNTER_PACKETS = 2;
export const NFTA_COUNTER_PAD = 3;

// enum nft_log_attributes
export const NFTA_LOG_UNSPEC = 0;
export const NFTA_LOG_GROUP = 1;
export const NFTA_LOG_PREFIX = 2;
export const NFTA_LOG_SNAPLEN = 3;
export const NFTA_LOG_QTHRESHOLD = 4;
export const NFTA_LOG_LEVEL = 5;
export const NFTA_LOG_FLAGS = 6;

// enum nft_reject_types
export const NFT_REJECT_ICMP_UNREACH = 0;
export const NFT_REJECT_TCP_RST = 1;
export const NFT_REJECT_ICMPX_UNREACH = 2;

// enum nft_reject_inet_code
export const NFT_REJECT_ICMPX_NO_ROUTE = 0;
export const NFT_REJECT_ICMPX_PORT_UNREACH = 1;
export const NFT_REJECT_ICMPX_HOST_UNREACH = 2;
export const NFT_REJECT_ICMPX_ADMIN_PROHIBITED = 3;

// enum nft_reject_attributes
export const NFTA_REJECT_UNSPEC = 0;
export const NFTA_REJECT_TYPE = 1;
export const NFTA_REJECT_ICMP_CODE = 2;

// enum nft_nat_types
export const NFT_NAT_SNAT = 0;
export const NFT_NAT_DNAT = 1;

// enum nft_nat_attributes
export const NFTA_NAT_UNSPEC = 0;
export const NFTA_NAT_TYPE = 1;
export const NFTA_NAT_FAMILY = 2;
export const NFTA_NAT_REG_ADDR_MIN = 3;
export const NFTA_NAT_REG_ADDR_MAX = 4;
export const NFTA_NAT_REG_PROTO_MIN = 5;
export const NFTA_NAT_REG_PROTO_MAX = 6;
export const NFTA_NAT_FLAGS = 7;

// enum nft_masq_attributes
export const NFTA_MASQ_UNSPEC = 0;
export const NFTA_MASQ_FLAGS = 1;
export const NFTA_MASQ_REG_PROTO_MIN = 2;
export const NFTA_MASQ_REG_PROTO_MAX = 3;

// NF_NAT_RANGE_* (linux/netfilter/nf_nat.h): the flags of nat and masq
export const NF_NAT_RANGE_MAP_IPS = 1;
export const NF_NAT_RANGE_PROTO_SPECIFIED = 2;
export const NF_NAT_RANGE_PROTO_RANDOM = 4;
export const NF_NAT_RANGE_PERSISTENT = 8;
export const NF_NAT_RANGE_PROTO_RANDOM_FULLY = 16;

// enum nft_objref_attributes
export const NFTA_OBJREF_UNSPEC = 0;
export const NFTA_OBJREF_IMM_TYPE = 1;
export const NFTA_OBJREF_IMM_NAME = 2;
export const NFTA_OBJREF_SET_SREG = 3;
export const NFTA_OBJREF_SET_NAME = 4;
export const NFTA_OBJREF_SET_ID = 5;

// enum nft_gen_attributes
export const NFTA_GEN_UNSPEC = 0;
export const NFTA_GEN_ID = 1;
export const NFTA_GEN_PROC_PID = 2;
export const NFTA_GEN_PROC_NAME = 3;

// enum nft_fib_attributes
export const NFTA_FIB_UNSPEC = 0;
export const NFTA_FIB_DREG = 1;
export const NFTA_FIB_RESULT = 2;
export const NFTA_FIB_FLAGS = 3;

// enum nft_fib_result
export const NFT_FIB_RESULT_UNSPEC = 0;
export const NFT_FIB_RESULT_OIF = 1;
export const NFT_FIB_RESULT_OIFNAME = 2;
export const NFT_FIB_RESULT_ADDRTYPE = 3;

// enum nft_fib_flags
export const NFTA_FIB_F_SADDR = 1;
export const NFTA_FIB_F_DADDR = 2;
export const NFTA_FIB_F_MARK = 4;
export const NFTA_FIB_F_IIF = 8;
export const NFTA_FIB_F_OIF = 16;
export const NFTA_FIB_F_PRESENT = 32;

// enum nft_synproxy_attributes
export const NFTA_SYNPROXY_UNSPEC = 0;
export const NFTA_SYNPROXY_MSS = 1;
export const NFTA_SYNPROXY_WSCALE = 2;
export const NFTA_SYNPROXY_FLAGS = 3;

// enum nft_ng_attributes
export const NFTA_NG_UNSPEC = 0;
export const NFTA_NG_DREG = 1;
export const NFTA_NG_MODULUS = 2;
export const NFTA_NG_TYPE = 3;
export const NFTA_NG_OFFSET = 4;
export const NFTA_NG_SET_NAME = 5;
export const NFTA_NG_SET_ID = 6;

// enum nft_ng_types
export const NFT_NG_INCREMENTAL = 0;
export const NFT_NG_RANDOM = 1;

// enum nft_byteorder_attributes
export const NFTA_BYTEORDER_UNSPEC = 0;
export const NFTA_BYTEORDER_SREG = 1;
export const NFTA_BYTEORDER_DREG = 2;
export const NFTA_BYTEORDER_OP = 3;
export const NFTA_BYTEORDER_LEN = 4;
export const NFTA_BYTEORDER_SIZE = 5;

// enum nft_byteorder_ops
export const NFT_BYTEORDER_NTOH = 0;
export const NFT_BYTEORDER_HTON = 1;
