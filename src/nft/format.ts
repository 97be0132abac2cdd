/** nft(8) syntax for nfkube's objects: what `nft list` would print, for dry runs, logs and diffs.
 * Rules are printed by recognising the expression shapes nft itself uses; anything else is shown
 * in libnftnl's debug notation so nothing is hidden. */
import * as C from './constants';
import { mergeRanges, registerOffset } from './canonical';
import { describeExpr } from './expr';
import { Chain, Expr, NftSet, NftTypeName, Rule, SetElement, TableContents, Verdict } from './types';
import { formatIPv4, formatIPv6 } from '../net/ip-bytes';
import { CT_STATE, CT_STATUS, IPPROTO_NAME, NFPROTO_IPV4, NFPROTO_IPV6 } from '../net/protocols';
import { HOST_LE, readHostU32, TYPE_LEN, typeText } from './values';

type ValueKind = NftTypeName | 'nfproto' | 'iftype' | 'ct_state' | 'ct_status' | 'hex' | 'fib_addrtype' | 'fib_present';

interface Loaded {
  text: string;
  kind: ValueKind;
  /** A map lookup's result: its data may fill the registers after this one (a concatenation). */
  mapResult?: boolean;
  /** Set when this load implies a protocol dependency nft would not print. */
  impliesL3?: 'ip' | 'ip6';
  impliesL4?: boolean;
}

const CT_STATES = Object.entries(CT_STATE).map(([name, bit]) => [bit, name] as const);
const CT_KEYS: Record<number, [string, ValueKind]> = {
  [C.NFT_CT_STATE]: ['ct state', 'ct_state'],
  [C.NFT_CT_MARK]: ['ct mark', 'mark'],
  [C.NFT_CT_STATUS]: ['ct status', 'ct_status'],
};
const META_KEYS: Record<number, [string, ValueKind]> = {
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

// NF_NAT_RANGE_* as nft prints them after `masquerade`, in its order.
const MASQ_FLAGS: [number, string][] = [
  [C.NF_NAT_RANGE_PROTO_RANDOM, 'random'],
  [C.NF_NAT_RANGE_PROTO_RANDOM_FULLY, 'fully-random'],
  [C.NF_NAT_RANGE_PERSISTENT, 'persistent'],
];
// RTN_* (linux/rtnetlink.h), as nft names them.
const FIB_ADDRTYPES = ['unspec', 'unicast', 'local', 'broadcast', 'anycast', 'multicast', 'blackhole', 'unreachable', 'prohibit'];
const FIB_FLAGS: [number, string][] = [
  [C.NFTA_FIB_F_SADDR, 'saddr'],
  [C.NFTA_FIB_F_DADDR, 'daddr'],
  [C.NFTA_FIB_F_MARK, 'mark'],
  [C.NFTA_FIB_F_IIF, 'iif'],
  [C.NFTA_FIB_F_OIF, 'oif'],
];

/** `meta mark | 0x4000`, `meta mark ^ 0x4000`, `meta mark & 0x4000`: nft's reading of a boolean
 * bitwise on a mark. */
function markArithmetic(text: string, mask: Buffer, xor: Buffer): string {
  const m = mask.readUInt32LE(0);
  const x = xor.readUInt32LE(0);
  const hex = (n: number) => `0x${n.toString(16).padStart(8, '0')}`;
  if (x === 0) return `${text} & ${hex(m)}`;
  if (m === 0xffffffff) return `${text} ^ ${hex(x)}`;
  if ((m & x) === 0 && ((m | x) >>> 0) === 0xffffffff) return `${text} | ${hex(x)}`;
  return `${text} & ${hex(m)} ^ ${hex(x)}`;
}

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

function payloadField(e: Extract<Expr, { type: 'payload' }>, l3: 'ip' | 'ip6' | undefined, l4: string | undefined): Loaded | undefined {
  if (e.base === 'network') {
    if ((l3 ?? (e.len === 4 ? 'ip' : undefined)) === 'ip' && e.len === 4 && (e.offset === 12 || e.offset === 16)) {
      return { text: `ip ${e.offset === 12 ? 'saddr' : 'daddr'}`, kind: 'ipv4_addr', impliesL3: 'ip' };
    }
    if ((l3 ?? (e.len === 16 ? 'ip6' : undefined)) === 'ip6' && e.len === 16 && (e.offset === 8 || e.offset === 24)) {
      return { text: `ip6 ${e.offset === 8 ? 'saddr' : 'daddr'}`, kind: 'ipv6_addr', impliesL3: 'ip6' };
    }
  }
  if (e.base === 'll' && e.len === 6 && (e.offset === 0 || e.offset === 6)) {
    return { text: `ether ${e.offset === 0 ? 'daddr' : 'saddr'}`, kind: 'ether_addr' };
  }
  if (e.base === 'transport' && e.len === 1 && e.offset === 0 && l4 === 'ipv6-icmp') {
    return { text: 'icmpv6 type', kind: 'integer', impliesL4: true };
  }
  if (e.base === 'transport' && e.len === 2 && (e.offset === 0 || e.offset === 2)) {
    return { text: `${l4 ?? 'th'} ${e.offset === 0 ? 'sport' : 'dport'}`, kind: 'inet_service', impliesL4: l4 !== undefined };
  }
  return undefined;
}

/** A rule's expressions in nft syntax. */
export function formatRuleBody(rule: Expr[]): string {
  // nft writes a range it parsed (`tcp dport 80-90`) as cmp gte + cmp lte: printed as the range.
  const exprs = mergeRanges(rule);
  const out: { text: string; dependencyOf?: 'll' | 'l3' | 'l4' }[] = [];
  const regs = new Map<number, Loaded>();
  const pending: number[] = [];
  let l3: 'ip' | 'ip6' | undefined;
  let l4: string | undefined;
  let lastBitwise: { reg: number; mask?: Buffer } | undefined;
  /** Constants loaded by immediate, for the nat statement that reads them. */
  const immData = new Map<number, Buffer>();
  const take = (sreg: number): Loaded | undefined => {
    const first = regs.get(sreg);
    if (!first) return undefined;
    const at = pending.indexOf(sreg);
    const chain = at < 0 ? [sreg] : pending.splice(at);
    const parts = chain.map((r) => regs.get(r)).filter((x): x is Loaded => !!x);
    for (const r of chain) regs.delete(r);
    return parts.length > 1 ? { text: parts.map((p) => p.text).join(' . '), kind: 'hex' } : first;
  };
  const load = (reg: number | undefined, l: Loaded) => {
    if (reg === undefined) return;
    regs.set(reg, l);
    pending.push(reg);
  };
  for (let i = 0; i < exprs.length; i++) {
    const e = exprs[i];
    switch (e.type) {
      case 'payload': {
        if (e.dreg === undefined) break;
        const f = payloadField(e, l3, l4);
        load(e.dreg, f ?? { text: `@${e.base === 'll' ? 'll' : e.base === 'network' ? 'nh' : e.base === 'transport' ? 'th' : 'ih'},${e.offset * 8},${e.len * 8}`, kind: 'hex' });
        continue;
      }
      case 'meta': {
        if (e.sreg !== undefined) {
          const src = take(e.sreg);
          const [text] = META_KEYS[e.key] ?? [`meta key ${e.key}`];
          if (!src) break;
          out.push({ text: `${text} set ${src.text}` });
          continue;
        }
        if (e.dreg === undefined) break;
        const [text, kind] = META_KEYS[e.key] ?? [`meta key ${e.key}`, 'hex' as ValueKind];
        load(e.dreg, { text, kind });
        continue;
      }
      case 'ct': {
        const [text, kind] = CT_KEYS[e.key] ?? [`ct key ${e.key}`, 'hex' as ValueKind];
        if (e.sreg !== undefined) {
          const src = take(e.sreg);
          if (!src || !CT_KEYS[e.key]) break;
          out.push({ text: `${text} set ${src.text}` });
          continue;
        }
        if (e.dreg === undefined) break;
        load(e.dreg, { text, kind });
        continue;
      }
      case 'bitwise':
        if (regs.get(e.sreg)?.kind === 'mark' && e.mask && e.xor && e.op !== 'lshift' && e.op !== 'rshift') {
          const src = take(e.sreg)!;
          load(e.dreg, { text: markArithmetic(src.text, e.mask, e.xor), kind: 'mark' });
          continue;
        }
        if (regs.get(e.sreg)?.kind === 'integer' && e.len === 4 && (e.op === 'lshift' || e.op === 'rshift') && e.shift !== undefined) {
          const src = take(e.sreg)!;
          load(e.dreg, { text: `${src.text} ${e.op === 'lshift' ? '<<' : '>>'} ${e.shift}`, kind: 'integer' });
          continue;
        }
        if (regs.get(e.sreg)?.kind === 'integer' && e.len === 4 && e.mask?.length === 4 && e.xor?.length === 4 && e.op !== 'lshift' && e.op !== 'rshift' && (readHostU32(e.mask) & readHostU32(e.xor)) === 0) {
          // nft lists a boolean bitwise that sets bits of a host-order integer as
          // `& (mask|xor) | xor`.
          const src = take(e.sreg)!;
          load(e.dreg, { text: `${src.text} & ${(readHostU32(e.mask) | readHostU32(e.xor)) >>> 0} | ${readHostU32(e.xor)}`, kind: 'integer' });
          continue;
        }
        if (regs.has(e.sreg) && e.mask && e.op !== 'lshift' && e.op !== 'rshift') {
          const src = regs.get(e.sreg)!;
          regs.delete(e.sreg);
          pending.splice(pending.indexOf(e.sreg), 1);
          load(e.dreg, src);
          lastBitwise = { reg: e.dreg, mask: e.mask };
          continue;
        }
        break;
      case 'cmp': {
        const src = take(e.sreg);
        if (!src) break;
        const ops: Record<string, string> = { eq: '', neq: '!= ', lt: '< ', lte: '<= ', gt: '> ', gte: '>= ' };
        if ((src.kind === 'ct_state' || src.kind === 'ct_status') && lastBitwise?.reg === e.sreg && lastBitwise.mask && e.op === 'neq' && e.data.length === 4 && e.data.readUInt32LE(0) === 0) {
          out.push({ text: `${src.text} ${formatValue(lastBitwise.mask, src.kind)}` });
        } else if (lastBitwise?.reg === e.sreg && lastBitwise.mask && (src.kind === 'ipv4_addr' || src.kind === 'ipv6_addr')) {
          const prefix = [...lastBitwise.mask].reduce((n, byte) => n + byte.toString(2).replace(/0/g, '').length, 0);
          out.push({ text: `${src.text} ${ops[e.op]}${formatValue(e.data, src.kind)}/${prefix}` });
        } else {
          // After arithmetic (`meta mark & 0x4000`) the comparison needs its operator spelled out.
          const op = e.op === 'eq' && / [&|^] /.test(src.text) ? '== ' : ops[e.op];
          out.push({ text: `${src.text} ${op}${formatValue(e.data, src.kind)}` });
        }
        lastBitwise = undefined;
        if (src.text === 'meta nfproto' && e.op === 'eq') {
          l3 = e.data[0] === NFPROTO_IPV4 ? 'ip' : e.data[0] === NFPROTO_IPV6 ? 'ip6' : undefined;
          out[out.length - 1].dependencyOf = 'l3';
        }
        if (src.text === 'meta iiftype' && e.op === 'eq' && formatValue(e.data, 'iftype') === 'ether') out[out.length - 1].dependencyOf = 'll';
        if (src.text === 'meta l4proto' && e.op === 'eq' && IPPROTO_NAME[e.data[0]]) {
          l4 = IPPROTO_NAME[e.data[0]];
          out[out.length - 1].dependencyOf = 'l4';
        }
        continue;
      }
      case 'range': {
        const src = take(e.sreg);
        if (!src) break;
        out.push({ text: `${src.text} ${e.op === 'neq' ? '!= ' : ''}${formatValue(e.from, src.kind)}-${formatValue(e.to, src.kind)}` });
        continue;
      }
      case 'lookup': {
        // A map lookup leaves its key register alone, so later lookups can read the same key; its
        // result is an operand (of a nat statement), not a field of a concatenation.
        if (e.dreg !== undefined && e.dreg !== C.NFT_REG_VERDICT && regs.has(e.sreg)) {
          regs.set(e.dreg, { text: `${regs.get(e.sreg)!.text} map @${e.set}`, kind: 'hex', mapResult: true });
          continue;
        }
        const src = take(e.sreg);
        if (!src) break;
        if (e.dreg === C.NFT_REG_VERDICT) out.push({ text: `${src.text} vmap @${e.set}` });
        else out.push({ text: `${src.text} ${e.invert ? '!= ' : ''}@${e.set}` });
        continue;
      }
      case 'immediate':
        if (e.dreg === C.NFT_REG_VERDICT && e.verdict) {
          out.push({ text: formatVerdict(e.verdict) });
          continue;
        }
        // A constant a later `meta mark set` / `ct mark set` stores: printed as its value.
        if (e.data) {
          const setter = exprs.slice(i + 1).find((x) => (x.type === 'meta' || x.type === 'ct') && x.sreg === e.dreg);
          const key = setter?.type === 'meta' ? META_KEYS[setter.key] : setter?.type === 'ct' ? CT_KEYS[setter.key] : undefined;
          if (key) {
            load(e.dreg, { text: formatValue(e.data, key[1]), kind: key[1] });
            continue;
          }
        }
        // A constant for a nat statement later in the rule is printed by that statement; any
        // other use keeps the raw form, so nothing is hidden.
        if (e.data && exprs.some((x, j) => j > i && x.type === 'nat' && (x.regAddrMin === e.dreg || x.regProtoMin === e.dreg))) {
          immData.set(e.dreg, e.data);
          continue;
        }
        break;
      case 'fib': {
        const flags = FIB_FLAGS.filter(([bit]) => e.flags & bit).map(([, t]) => t).join(' . ');
        if (e.result === C.NFT_FIB_RESULT_ADDRTYPE) load(e.dreg, { text: `fib ${flags} type`, kind: 'fib_addrtype' });
        // `fib saddr . iif oif missing`: the flag makes the result whether a route was found.
        else if (e.result === C.NFT_FIB_RESULT_OIF && e.flags & C.NFTA_FIB_F_PRESENT) load(e.dreg, { text: `fib ${flags} oif`, kind: 'fib_present' });
        else break;
        continue;
      }
      case 'byteorder':
        // nft converts a host-order value that keys a network-order set, and does not print it.
        if (e.sreg === e.dreg && regs.get(e.sreg)?.kind === 'integer') continue;
        break;
      case 'numgen':
        load(e.dreg, { text: `numgen ${e.ngType} mod ${e.modulus}${e.offset ? ` offset ${e.offset}` : ''}`, kind: 'integer' });
        continue;
      case 'nat': {
        const fam = e.family === NFPROTO_IPV4 ? 'ip' : e.family === NFPROTO_IPV6 ? 'ip6' : undefined;
        // Registers loaded by a map lookup: nft prints their expressions, `to <addr>:<port>`.
        const addrExpr = e.regAddrMin !== undefined && !immData.has(e.regAddrMin) ? regs.get(e.regAddrMin) : undefined;
        const portExpr = e.regProtoMin !== undefined && !immData.has(e.regProtoMin) ? regs.get(e.regProtoMin) : undefined;
        // One lookup of `address . port` data: the port follows the address in the registers.
        const portInMap = addrExpr?.mapResult === true && e.regProtoMin !== undefined && !portExpr && registerOffset(e.regProtoMin) === registerOffset(e.regAddrMin!) + (fam === 'ip' ? 4 : 16);
        if (fam && addrExpr && (e.regProtoMin === undefined || portExpr || portInMap) && e.regAddrMax === e.regAddrMin && e.regProtoMax === e.regProtoMin) {
          out.push({ text: `${e.natType} ${fam} to ${addrExpr.text}${portExpr ? `:${portExpr.text}` : ''}` });
          continue;
        }
        const addr = e.regAddrMin !== undefined ? immData.get(e.regAddrMin) : undefined;
        const port = e.regProtoMin !== undefined ? immData.get(e.regProtoMin) : undefined;
        if (!fam || (e.regAddrMin !== undefined && !addr) || (e.regProtoMin !== undefined && !port)) break;
        let to = addr ? (fam === 'ip' ? formatIPv4(addr) : `[${formatIPv6(addr)}]`) : '';
        if (port) to += `:${port.readUInt16BE(0)}`;
        out.push({ text: `${e.natType} ${fam} to ${to}` });
        continue;
      }
      case 'masq': {
        const flags = e.flags ?? 0;
        const opts = MASQ_FLAGS.filter(([bit]) => flags & bit).map(([, t]) => t);
        out.push({ text: ['masquerade', ...opts].join(' ') });
        continue;
      }
      case 'dynset': {
        const src = take(e.sregKey);
        if (!src || e.sregData !== undefined) break;
        out.push({ text: `${e.op} @${e.set} { ${src.text}${e.timeoutMs ? ` timeout ${e.timeoutMs}ms` : ''} }` });
        continue;
      }
      case 'counter':
        out.push({ text: `counter packets ${e.packets} bytes ${e.bytes}` });
        continue;
      case 'reject': {
        const icmpx = ['no-route', 'port-unreachable', 'host-unreachable', 'admin-prohibited'];
        if (e.rejectType === C.NFT_REJECT_TCP_RST) out.push({ text: 'reject with tcp reset' });
        else if (e.rejectType === C.NFT_REJECT_ICMPX_UNREACH) out.push({ text: `reject with icmpx ${icmpx[e.icmpCode] ?? e.icmpCode}` });
        else out.push({ text: `reject with icmp ${e.icmpCode}` });
        continue;
      }
      case 'log': {
        const parts = ['log'];
        if (e.prefix !== undefined) parts.push(`prefix "${e.prefix}"`);
        if (e.group !== undefined) parts.push(`group ${e.group}`);
        out.push({ text: parts.join(' ') });
        continue;
      }
      case 'limit':
        out.push({ text: `limit rate ${e.flags & C.NFT_LIMIT_F_INV ? 'over ' : ''}${e.rate}/${e.unit === 1n ? 'second' : e.unit === 60n ? 'minute' : `${e.unit}s`}${e.limitType === 'bytes' ? ' bytes' : ''} burst ${e.burst}${e.limitType === 'bytes' ? '' : ' packets'}` });
        continue;
      case 'opaque':
        out.push({ text: `# unknown expression "${e.name}" (${e.data.length} bytes)` });
        continue;
      default:
        break;
    }
    out.push({ text: describeExpr(e) });
  }
  const printedL3 = out.some((o) => /^ip6? [sd]addr/.test(o.text) || / ip6? [sd]addr/.test(o.text));
  const printedL4 = out.some((o) => /(^| )((tcp|udp|sctp) [sd]port|icmpv6 type)/.test(o.text));
  const printedLL = out.some((o) => /(^| )ether [sd]addr/.test(o.text));
  return out
    .filter((o) => !(o.dependencyOf === 'll' && printedLL) && !(o.dependencyOf === 'l3' && printedL3) && !(o.dependencyOf === 'l4' && printedL4))
    .map((o) => o.text)
    .join(' ');
}

export function formatRule(r: Rule): string {
  const body = formatRuleBody(r.exprs);
  const comment = r.comment !== undefined ? ` comment "${r.comment}"` : '';
  const handle = r.handle !== undefined ? ` # handle ${r.handle}` : '';
  return `${body}${comment}${handle}`;
}

function formatKey(set: Pick<NftSet, 'key' | 'flags'>, key: Buffer): string {
  // nft sends the keys of an interval set in network byte order (the kernel orders them with
  // memcmp) and lists them so, numgen results included.
  if (set.key.length === 1 && set.key[0] === 'integer' && key.length === 4 && (set.flags ?? 0) & C.NFT_SET_INTERVAL) return String(key.readUInt32BE(0));
  if (set.key.length === 1) return formatValue(key, set.key[0]);
  return formatFields(key, set.key);
}

/** A concatenation's fields, each padded to 4 bytes; with `end`, a range as nft writes it: each
 * field's own range, `tcp . 8000-8100`. */
function formatFields(b: Buffer, fields: readonly NftTypeName[], end?: Buffer): string {
  const parts: string[] = [];
  let pos = 0;
  for (const f of fields) {
    const from = b.subarray(pos, pos + TYPE_LEN[f]);
    const to = end?.subarray(pos, pos + TYPE_LEN[f]);
    parts.push(to === undefined || from.equals(to) ? formatValue(from, f) : `${formatValue(from, f)}-${formatValue(to, f)}`);
    pos += (TYPE_LEN[f] + 3) & ~3;
  }
  return parts.join(' . ');
}

export function formatElement(set: Pick<NftSet, 'key' | 'data' | 'flags'>, e: SetElement): string {
  const range = e.keyEnd && !e.keyEnd.equals(e.key) ? e.keyEnd : undefined;
  let s = range && set.key.length > 1 ? formatFields(e.key, set.key, range) : formatKey(set, e.key);
  if (range && set.key.length === 1) s += `-${formatKey(set, range)}`;
  if (e.verdict) s += ` : ${formatVerdict(e.verdict)}`;
  else if (e.data && set.data) s += ` : ${typeof set.data === 'string' ? formatValue(e.data, set.data) : formatFields(e.data, set.data)}`;
  // As nft lists an element's own counter (read back; a rendered element has none).
  for (const x of e.exprs ?? []) if (x.type === 'counter') s += ` counter packets ${x.packets} bytes ${x.bytes}`;
  return s;
}

/** `type ipv4_addr . inet_service : verdict`, or the set's own `typeof` when it has one; nft
 * refuses a bare `integer` key, which nfkube uses only for maps looked up with a numgen result,
 * so an untyped one is written as that expression's type. */
export function setType(s: NftSet): string {
  const data = s.data ? ` : ${typeText(s.data)}` : '';
  if (s.typeof) return `typeof ${s.typeof.key}${s.typeof.data !== undefined ? ` : ${s.typeof.data}` : data}`;
  if (s.key.length === 1 && s.key[0] === 'integer') return `typeof numgen random mod 1${data}`;
  return `type ${s.key.join(' . ')}${data}`;
}

export function setFlagNames(s: NftSet): string[] {
  const names: string[] = [];
  const flags = s.flags ?? 0;
  if (flags & C.NFT_SET_CONSTANT) names.push('constant');
  if (flags & C.NFT_SET_INTERVAL) names.push('interval');
  if (flags & C.NFT_SET_TIMEOUT) names.push('timeout');
  if (flags & C.NFT_SET_EVAL) names.push('dynamic');
  return names;
}

export function formatSet(s: NftSet, elements?: SetElement[], indent = '\t'): string {
  const kind = s.data ? 'map' : 'set';
  const lines = [`${kind} ${s.name} {`, `\t${setType(s)}`];
  const flags = setFlagNames(s);
  if (flags.length) lines.push(`\tflags ${flags.join(',')}`);
  if (s.timeout) lines.push(`\ttimeout ${s.timeout % 1000n === 0n ? `${s.timeout / 1000n}s` : `${s.timeout}ms`}`);
  if (s.exprs?.some((e) => e.type === 'counter')) lines.push('\tcounter');
  if (elements?.length) lines.push(`\telements = { ${elements.map((e) => formatElement(s, e)).join(',\n\t\t     ')} }`);
  lines.push('}');
  return lines.map((l) => indent + l).join('\n');
}

function formatChainHeader(c: Chain): string {
  if (!c.base) return '';
  const b = c.base;
  return `\t\ttype ${b.type} hook ${b.hook}${b.device ? ` device "${b.device}"` : ''} priority ${b.priority}; policy ${b.policy};\n`;
}

export function formatTable(t: TableContents): string {
  const parts: string[] = [];
  for (const s of t.sets) parts.push(formatSet(s, t.elements.get(s.name)));
  for (const c of t.chains) {
    const rules = t.rules.filter((r) => r.chain === c.name).map((r) => `\t\t${formatRule(r)}\n`);
    parts.push(`\tchain ${c.name} {\n${formatChainHeader(c)}${rules.join('')}\t}`);
  }
  const comment = t.table.comment !== undefined ? `\tcomment "${t.table.comment}"\n${parts.length ? '\n' : ''}` : '';
  return `table ${t.table.family} ${t.table.name} {\n${comment}${parts.join('\n\n')}\n}\n`;
}
