/** nf_tables objects as plain typed data. Encoding and decoding live in codec modules. */
import { NFPROTO_ARP, NFPROTO_BRIDGE, NFPROTO_INET, NFPROTO_IPV4, NFPROTO_IPV6, NFPROTO_NETDEV } from '../net/protocols';

export type Family = 'inet' | 'ip' | 'ip6' | 'arp' | 'bridge' | 'netdev';

/** The NFPROTO_* number of each family. */
export const NFPROTO: Record<Family, number> = { inet: NFPROTO_INET, ip: NFPROTO_IPV4, arp: NFPROTO_ARP, netdev: NFPROTO_NETDEV, bridge: NFPROTO_BRIDGE, ip6: NFPROTO_IPV6 };

export interface Table {
  family: Family;
  name: string;
  /** NFT_TABLE_F_* */
  flags?: number;
  handle?: bigint;
  /** Number of chains, sets and objects in the table (read-back only). */
  use?: number;
  /** The comment in its user data (NFTA_TABLE_USERDATA), as nft shows it: nfkube's mark. */
  comment?: string;
  /** The options that shaped the table, as flags (`--deny-action=reject --log-drops`), in
   * nfkube's own user data TLVs beside the comment (nft ignores types it does not know): the
   * read commands take them from here to agree with the agent that made the table. */
  options?: string;
  /** NFTA_TABLE_OWNER: the netlink port that owns it (NFT_TABLE_F_OWNER; read-back only). */
  owner?: number;
}

export type HookName = 'prerouting' | 'input' | 'forward' | 'output' | 'postrouting' | 'ingress' | 'egress';
export type ChainType = 'filter' | 'nat' | 'route';

export interface BaseChainSpec {
  hook: HookName;
  priority: number;
  type: ChainType;
  policy: 'accept' | 'drop';
  device?: string;
}

export interface Chain {
  family: Family;
  table: string;
  name: string;
  handle?: bigint;
  /** Present for base chains only. */
  base?: BaseChainSpec;
  /** NFT_CHAIN_* flags as read back. */
  flags?: number;
  use?: number;
}

export type Verdict =
  | { kind: 'accept' | 'drop' | 'continue' | 'return' | 'break' | 'queue' | 'stolen' | 'repeat' }
  | { kind: 'jump' | 'goto'; chain: string };

/** Registers use the kernel's numbering: 0 = verdict, 1..4 = 16-byte NFT_REG_n, 8..23 = NFT_REG32_nn. */
export type Register = number;

export type CmpOp = 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte';
export type PayloadBase = 'll' | 'network' | 'transport' | 'inner';

export interface PayloadExpr {
  type: 'payload';
  base: PayloadBase;
  offset: number;
  len: number;
  /** Load form: destination register. */
  dreg?: Register;
  /** Store form: source register and checksum fixup. */
  sreg?: Register;
  csumType?: number;
  csumOffset?: number;
  csumFlags?: number;
}

export interface MetaExpr {
  type: 'meta';
  /** NFT_META_* */
  key: number;
  dreg?: Register;
  sreg?: Register;
}

export interface CmpExpr {
  type: 'cmp';
  sreg: Register;
  op: CmpOp;
  data: Buffer;
}

export interface BitwiseExpr {
  type: 'bitwise';
  sreg: Register;
  dreg: Register;
  len: number;
  /** Boolean form: (reg & mask) ^ xor. */
  mask?: Buffer;
  xor?: Buffer;
  /** Shift forms. */
  op?: 'bool' | 'lshift' | 'rshift';
  shift?: number;
}

export interface RangeExpr {
  type: 'range';
  sreg: Register;
  op: 'eq' | 'neq';
  from: Buffer;
  to: Buffer;
}

export interface LookupExpr {
  type: 'lookup';
  /** Set name; in a transaction, a set created in the same batch may be referenced by setId. */
  set: string;
  setId?: number;
  sreg: Register;
  dreg?: Register;
  invert?: boolean;
}

export interface ImmediateExpr {
  type: 'immediate';
  dreg: Register;
  data?: Buffer;
  verdict?: Verdict;
}

export interface CounterExpr {
  type: 'counter';
  packets: bigint;
  bytes: bigint;
}

export interface CtExpr {
  type: 'ct';
  /** NFT_CT_* */
  key: number;
  dreg?: Register;
  sreg?: Register;
  /** IP_CT_DIR_ORIGINAL (0) or IP_CT_DIR_REPLY (1), for keys that need one. */
  direction?: number;
}

export interface LimitExpr {
  type: 'limit';
  rate: bigint;
  /** Seconds per unit of rate. */
  unit: bigint;
  burst: number;
  limitType: 'pkts' | 'bytes';
  /** NFT_LIMIT_F_INV to match over the limit. */
  flags: number;
}

export interface LogExpr {
  type: 'log';
  prefix?: string;
  group?: number;
  snaplen?: number;
  qthreshold?: number;
  level?: number;
  flags?: number;
}

export interface RejectExpr {
  type: 'reject';
  /** NFT_REJECT_ICMP_UNREACH, NFT_REJECT_TCP_RST, NFT_REJECT_ICMPX_UNREACH */
  rejectType: number;
  icmpCode: number;
}

export interface NatExpr {
  type: 'nat';
  natType: 'snat' | 'dnat';
  /** NFPROTO_IPV4 or NFPROTO_IPV6 */
  family: number;
  regAddrMin?: Register;
  regAddrMax?: Register;
  regProtoMin?: Register;
  regProtoMax?: Register;
  flags?: number;
}

export interface NumgenExpr {
  type: 'numgen';
  dreg: Register;
  modulus: number;
  ngType: 'inc' | 'random';
  offset?: number;
}

/** Converts `len` bytes of sreg, in words of `size` bytes (2, 4 or 8), between host and network
 * byte order. */
export interface ByteorderExpr {
  type: 'byteorder';
  sreg: Register;
  dreg: Register;
  op: 'ntoh' | 'hton';
  len: number;
  size: number;
}

export interface HashExpr {
  type: 'hash';
  hashType: 'jenkins' | 'sym';
  sreg?: Register;
  dreg: Register;
  len?: number;
  modulus: number;
  seed?: number;
  offset?: number;
}

export interface ObjrefExpr {
  type: 'objref';
  /** NFT_OBJECT_* */
  objType?: number;
  name?: string;
  /** Map form: the object is looked up in a set keyed by sreg. */
  setSreg?: Register;
  setName?: string;
  setId?: number;
}

export interface MasqExpr {
  type: 'masq';
  /** NF_NAT_RANGE_* (e.g. NF_NAT_RANGE_PROTO_RANDOM_FULLY). */
  flags?: number;
  regProtoMin?: Register;
  regProtoMax?: Register;
}

export interface FibExpr {
  type: 'fib';
  dreg: Register;
  /** NFT_FIB_RESULT_* */
  result: number;
  /** NFTA_FIB_F_* */
  flags: number;
}

export interface DynsetExpr {
  type: 'dynset';
  set: string;
  setId?: number;
  op: 'add' | 'update' | 'delete';
  sregKey: Register;
  sregData?: Register;
  /** 0 uses the set's own timeout; the kernel always dumps one. */
  timeoutMs?: bigint;
  /** NFT_DYNSET_F_*; the kernel always dumps them. */
  flags?: number;
}

/** An expression nfkube cannot interpret: kept whole so read-back can report it, never dropped. */
export interface OpaqueExpr {
  type: 'opaque';
  name: string;
  /** Raw NFTA_EXPR_DATA payload. */
  data: Buffer;
}

export type Expr =
  | PayloadExpr
  | MetaExpr
  | CmpExpr
  | BitwiseExpr
  | RangeExpr
  | LookupExpr
  | ImmediateExpr
  | CounterExpr
  | CtExpr
  | LimitExpr
  | LogExpr
  | RejectExpr
  | NatExpr
  | NumgenExpr
  | ByteorderExpr
  | HashExpr
  | ObjrefExpr
  | MasqExpr
  | FibExpr
  | DynsetExpr
  | OpaqueExpr;

export interface Rule {
  family: Family;
  table: string;
  chain: string;
  handle?: bigint;
  /** Insert after (NLM_F_APPEND) or before the rule with this handle. */
  position?: bigint;
  exprs: Expr[];
  /** Free text stored in NFTA_RULE_USERDATA as nft's comment TLV. */
  comment?: string;
}

/** nft data type ids (nftables src/datatype.h), the kernel stores them opaquely in NFTA_SET_KEY_TYPE. */
export const NFT_TYPE = {
  verdict: 1,
  integer: 4,
  ipv4_addr: 7,
  ipv6_addr: 8,
  ether_addr: 9,
  inet_proto: 12,
  inet_service: 13,
  mark: 19,
  ifname: 41,
} as const;
export type NftTypeName = keyof typeof NFT_TYPE;

export interface NftSet {
  family: Family;
  table: string;
  name: string;
  handle?: bigint;
  /** Key fields in order; more than one makes a concatenation. */
  key: NftTypeName[];
  /** For maps: the data type; 'verdict' makes a verdict map; more than one field makes a
   * concatenation (`ipv4_addr . inet_service`), each field padded to 4 bytes as in keys. */
  data?: NftTypeName | NftTypeName[];
  /** NFT_SET_* flags beyond those implied by key/data (interval, constant, timeout...), from
   * the package root's NFT_SET_INTERVAL etc. Default 0: a plain exact-match set (or map). */
  flags?: number;
  /** Transaction-local id so rules in the same batch can reference a new set. */
  id?: number;
  timeout?: bigint;
  /** The key (and map data) as nft expression text (`numgen random mod 65536`, `ip daddr`),
   * stored as NFTA_SET_USERDATA so `nft list` prints a `typeof` line `nft -f` can load back. */
  typeof?: { key: string; data?: string };
  /** NFTA_SET_EXPR/NFTA_SET_EXPRESSIONS: stateful expressions every element gets a copy of
   * (e.g. a counter, updated when a rule's dynset finds the element). */
  exprs?: Expr[];
}

export interface SetElement {
  key: Buffer;
  /** Upper bound (inclusive) for interval sets; nfkube sends NFTA_SET_ELEM_KEY_END. */
  keyEnd?: Buffer;
  data?: Buffer;
  verdict?: Verdict;
  /** NFT_SET_ELEM_* as read back. */
  flags?: number;
  /** NFTA_SET_ELEM_EXPR/NFTA_SET_ELEM_EXPRESSIONS as read back: the element's own stateful
   * expressions (their state, e.g. counter values, is not part of its identity or value). */
  exprs?: Expr[];
}

export interface Generation {
  id: number;
}

// --- transactions and read-back ---------------------------------------------------------------

export type TableVerb = 'add' | 'create' | 'delete' | 'destroy' | 'flush';
export type ChainVerb = 'add' | 'create' | 'delete' | 'destroy' | 'flush';
export type RuleVerb = 'add' | 'insert' | 'replace' | 'delete' | 'destroy';
export type SetVerb = 'add' | 'create' | 'delete' | 'destroy' | 'flush';
export type ElementVerb = 'add' | 'create' | 'delete' | 'destroy';

/** One change of a transaction: a verb applied to one object (or to elements of one set). */
export type Operation =
  | { kind: 'table'; verb: TableVerb; table: Table }
  | { kind: 'chain'; verb: ChainVerb; chain: Chain }
  | { kind: 'rule'; verb: RuleVerb; rule: Rule }
  | { kind: 'set'; verb: SetVerb; set: NftSet }
  | { kind: 'element'; verb: ElementVerb; set: NftSet; elements: SetElement[] };

export type NftObjectKind = Operation['kind'];
export type OperationOf<K extends NftObjectKind> = Extract<Operation, { kind: K }>;
export type VerbOf<K extends NftObjectKind> = OperationOf<K>['verb'];

/** Everything in one table, as read back or as desired. */
export interface TableContents {
  table: Table;
  chains: Chain[];
  /** Rules in kernel order, per chain. */
  rules: Rule[];
  sets: NftSet[];
  /** Elements per set name, as user-level (inclusive) ranges. */
  elements: Map<string, SetElement[]>;
}
