/** Values as nft writes them, by what the register holds: addresses, ports, protocol and
 * interface names, conntrack state bits, marks, route types. */
import * as C from '../constants';
import { NftTypeName, Verdict } from '../types';
import { formatIPv4, formatIPv6 } from '../../net/ip-bytes';
import { CT_STATE, CT_STATUS, IPPROTO_NAME, NFPROTO_IPV4, NFPROTO_IPV6 } from '../../net/protocols';
import { HOST_LE, readHostU32 } from '../values';

export type ValueKind = NftTypeName | 'nfproto' | 'iftype' | 'ct_state' | 'ct_status' | 'hex' | 'fib_addrtype' | 'fib_present';

const CT_STATES = Object.entries(CT_STATE).map(([name, bit]) => [bit, name] as const);

/** The fields meta and ct load or set, by key: their nft name and the kind of value they hold. */
export const CT_KEYS: Record<number, [string, ValueKind]> = {
  [C.NFT_CT_STATE]: ['ct state', 'ct_state'],
  [C.NFT_CT_MARK]: ['ct mark', 'mark'],
  [C.NFT_CT_STATUS]: ['ct status', 'ct_status'],
};
export const META_KEYS: Record<number, [string, ValueKind]> = {
  [C.NFT_META_MARK]: ['meta mark', 'mark'],
  [C.NFT_META_IIFNAME]: ['iifname', 'ifname'],
  [C.NFT_META_OIFNAME]: ['oifname', 'ifname'],
  [C.NFT_META_NFPROTO]: ['meta nfproto', 'nfproto'],
  [C.NFT_META_IIFTYPE]: ['meta iiftype', 'iftype'],
  [C.NFT_META_L4PROTO]: ['meta l4proto', 'inet_proto'],
};

/** Byte lengths a value of each kind can have; a value of any other length (a cmp shorter than
 * the field it compares, bytes nfkube did not write) is printed raw, never read past its end. */
const VALUE_LENGTHS: Partial<Record<ValueKind, readonly number[]>> = {
  ipv4_addr: [4],
  ipv6_addr: [16],
  inet_service: [2],
  inet_proto: [1],
  nfproto: [1],
  iftype: [2],
  ct_state: [4],
  ct_status: [4],
  mark: [4],
  ether_addr: [6],
  integer: [1, 2, 3, 4],
  fib_addrtype: [4],
  fib_present: [4],
};

function fitsKind(b: Buffer, kind: ValueKind): boolean {
  if (b.length === 0) return false;
  if (kind === 'ifname') return b.length <= 16;
  const lengths = VALUE_LENGTHS[kind];
  return lengths === undefined || lengths.includes(b.length);
}

// RTN_* (linux/rtnetlink.h), as nft names them.
const FIB_ADDRTYPES = ['unspec', 'unicast', 'local', 'broadcast', 'anycast', 'multicast', 'blackhole', 'unreachable', 'prohibit'];

export function formatValue(b: Buffer, kind: ValueKind): string {
  if (!fitsKind(b, kind)) return `0x${b.toString('hex')}`;
  switch (kind) {
    case 'ipv4_addr':
      return formatIPv4(b);
    case 'ipv6_addr':
      return formatIPv6(b);
    case 'inet_service':
      return String(b.readUInt16BE(0));
    case 'inet_proto':
      return IPPROTO_NAME[b[0]] ?? String(b[0]);
    case 'iftype': {
      // A host-order ARPHRD_*; only Ethernet (1) has a name nfkube writes.
      const type = HOST_LE ? b.readUInt16LE(0) : b.readUInt16BE(0);
      return type === 1 ? 'ether' : String(type);
    }
    case 'nfproto':
      return b[0] === NFPROTO_IPV4 ? 'ipv4' : b[0] === NFPROTO_IPV6 ? 'ipv6' : String(b[0]);
    case 'ifname': {
      // An exact match compares the terminating NUL too; a prefix match (`"veth*"`) only the
      // prefix's bytes.
      const nul = b.indexOf(0);
      return nul < 0 ? `"${b.toString('utf8')}*"` : `"${b.toString('utf8', 0, nul)}"`;
    }
    case 'ct_state': {
      const v = b.readUInt32LE(0);
      return CT_STATES.filter(([bit]) => v & bit).map(([, n]) => n).join(',') || '0x0';
    }
    case 'ct_status': {
      const v = b.readUInt32LE(0);
      const names = Object.entries(CT_STATUS).filter(([, bit]) => v & bit);
      // A bit without a name here stays a number, so nothing is lost in the text.
      const rest = names.reduce((r, [, bit]) => r & ~bit, v);
      return [...names.map(([n]) => n), ...(rest ? [`0x${rest.toString(16)}`] : [])].join(',') || '0x0';
    }
    case 'mark':
      return `0x${b.readUInt32LE(0).toString(16).padStart(8, '0')}`;
    case 'ether_addr':
      // nft parses a link-layer address only in this form (`Invalid LL address` for hex).
      return [...b].map((x) => x.toString(16).padStart(2, '0')).join(':');
    case 'integer':
      // Four-byte integers (numgen and hash results) are in host byte order.
      if (b.length === 4) return String(readHostU32(b));
      return String(b.readUIntBE(0, b.length));
    case 'fib_addrtype':
      return FIB_ADDRTYPES[readHostU32(b)] ?? `0x${b.toString('hex')}`;
    case 'fib_present':
      return readHostU32(b) === 0 ? 'missing' : 'exists';
    default:
      return `0x${b.toString('hex')}`;
  }
}

export function formatVerdict(v: Verdict): string {
  return v.kind === 'jump' || v.kind === 'goto' ? `${v.kind} ${v.chain}` : v.kind;
}
