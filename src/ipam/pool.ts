/** IPPool objects as typed data: validation (every error names the pool and the field), the
 * blocks a pool divides into, their object names, and which addresses of a block may be handed
 * out. Pure: no I/O. */
import { formatCidr, formatIp, IpFamily, parseCidr, parseIp, ParsedCidr } from '../net/ip';
import { KObject, LabelSelector, matchesSelector } from './objects';

export const DEFAULT_BLOCK_PREFIX: Record<IpFamily, number> = { v4: 26, v6: 122 };
const BITS: Record<IpFamily, number> = { v4: 32, v6: 128 };
/** Blocks are tracked as per-ordinal arrays: at most 65,536 addresses each (/16, /112). */
const MAX_BLOCK_BITS = 16;

export interface PoolRange {
  family: IpFamily;
  cidr: ParsedCidr;
  /** Prefix length of each block of this range. */
  blockPrefix: number;
}

export interface Pool {
  name: string;
  ranges: PoolRange[];
  nodeSelector?: LabelSelector;
}

export class PoolError extends Error {}

/** Validates an IPPool object. Throws a PoolError naming the pool and the field. */
export function parsePool(obj: KObject): Pool {
  const name = obj?.metadata?.name;
  if (typeof name !== 'string' || !name) throw new PoolError('IPPool: metadata.name is required');
  const where = (field: string) => `IPPool ${name}: ${field}`;
  const spec = obj.spec;
  if (!spec || typeof spec !== 'object') throw new PoolError(`${where('spec')} is required`);
  if (!Array.isArray(spec.cidrs) || spec.cidrs.length === 0) throw new PoolError(`${where('spec.cidrs')} must list at least one CIDR`);
  const blockSize = spec.blockSize ?? {};
  if (typeof blockSize !== 'object') throw new PoolError(`${where('spec.blockSize')} must be an object like {ipv4: 26, ipv6: 122}`);
  const prefixFor = (family: IpFamily): number => {
    const key = family === 'v4' ? 'ipv4' : 'ipv6';
    const v = blockSize[key] ?? DEFAULT_BLOCK_PREFIX[family];
    const bits = BITS[family];
    if (!Number.isInteger(v) || v < bits - MAX_BLOCK_BITS || v > bits) {
      throw new PoolError(`${where(`spec.blockSize.${key}`)}: ${JSON.stringify(v)} is not a prefix length from ${bits - MAX_BLOCK_BITS} to ${bits}`);
    }
    return v;
  };
  const ranges: PoolRange[] = spec.cidrs.map((text: unknown, i: number) => {
    const cidr = typeof text === 'string' ? parseCidr(text) : undefined;
    if (!cidr || formatCidr(cidr) !== canonicalCidrText(text as string)) {
      throw new PoolError(`${where(`spec.cidrs[${i}]`)}: ${JSON.stringify(text)} is not a CIDR with its host bits clear`);
    }
    const blockPrefix = prefixFor(cidr.family);
    if (blockPrefix < cidr.prefix) throw new PoolError(`${where(`spec.cidrs[${i}]`)}: ${text} is smaller than one /${blockPrefix} block`);
    return { family: cidr.family, cidr, blockPrefix };
  });
  for (let i = 0; i < ranges.length; i++) {
    for (let j = i + 1; j < ranges.length; j++) {
      if (overlaps(ranges[i].cidr, ranges[j].cidr)) throw new PoolError(`${where(`spec.cidrs[${j}]`)} overlaps spec.cidrs[${i}]`);
    }
  }
  const sel = spec.nodeSelector;
  if (sel !== undefined && (typeof sel !== 'object' || sel === null)) throw new PoolError(`${where('spec.nodeSelector')} must be a label selector`);
  return { name, ranges, nodeSelector: sel ?? undefined };
}

/** Normalises the address part so "2001:DB8::/32" and "2001:db8::/32" compare equal. */
function canonicalCidrText(text: string): string {
  const c = parseCidr(text);
  const slash = text.indexOf('/');
  const ip = parseIp(text.slice(0, slash));
  return c && ip ? `${formatIp(ip.family, ip.value)}/${c.prefix}` : text;
}

export function overlaps(a: ParsedCidr, b: ParsedCidr): boolean {
  return a.family === b.family && a.first <= b.last && b.first <= a.last;
}

/** Pairs of pools whose ranges overlap: an agent refuses to allocate from either. */
export function overlappingPools(pools: Pool[]): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (let i = 0; i < pools.length; i++) {
    for (let j = i + 1; j < pools.length; j++) {
      if (pools[i].ranges.some((a) => pools[j].ranges.some((b) => overlaps(a.cidr, b.cidr)))) out.push([pools[i].name, pools[j].name]);
    }
  }
  return out;
}

export function poolSelectsNode(pool: Pool, labels: Record<string, string>): boolean {
  return pool.nodeSelector === undefined || matchesSelector(pool.nodeSelector, labels);
}

export function blockCount(range: PoolRange): bigint {
  return 1n << BigInt(range.blockPrefix - range.cidr.prefix);
}

export function blockSize(range: PoolRange): number {
  return 1 << (BITS[range.family] - range.blockPrefix);
}

/** The index-th block of a range. */
export function blockCidr(range: PoolRange, index: bigint): ParsedCidr {
  const size = BigInt(blockSize(range));
  const first = range.cidr.first + index * size;
  return { family: range.family, first, last: first + size - 1n, prefix: range.blockPrefix };
}

function dashed(family: IpFamily, value: bigint): string {
  if (family === 'v4') return formatIp('v4', value).replace(/\./g, '-');
  const groups: string[] = [];
  for (let i = 7; i >= 0; i--) groups.push(((value >> BigInt(i * 16)) & 0xffffn).toString(16));
  return groups.join('-');
}

/** The IPBlock object name of a block: derived from its CIDR alone, so two nodes claiming the same
 * block create the same name and collide (409), whatever pool they came from. */
export function blockName(cidr: ParsedCidr): string {
  return `${cidr.family}-${dashed(cidr.family, cidr.first)}-${cidr.prefix}`;
}

/** The block CIDR encoded in an IPBlock name (the inverse of blockName). */
export function parseBlockName(name: string): ParsedCidr | undefined {
  const m = /^(v4|v6)-(.+)-(\d+)$/.exec(name);
  if (!m) return undefined;
  const parts = m[2].split('-');
  const text = m[1] === 'v4' ? parts.join('.') : parts.join(':');
  return parseCidr(`${text}/${m[3]}`);
}

/** True when every block of the pool is known taken (only decidable for small ranges). */
export function poolExhausted(pool: Pool, taken: ReadonlySet<string>): boolean {
  for (const r of pool.ranges) {
    const count = blockCount(r);
    if (count > 65536n) return false;
    for (let i = 0n; i < count; i++) if (!taken.has(blockName(blockCidr(r, i)))) return false;
  }
  return true;
}

/** The IPAddressClaim object name of one borrowed address. */
export function addressClaimName(family: IpFamily, value: bigint): string {
  return `${family}-${dashed(family, value)}`;
}

/** Addresses of a range never handed out: the v4 network and broadcast addresses and the v6
 * subnet-router anycast address, since pods get the pool's prefix length. */
export function reservedInRange(range: PoolRange, value: bigint): boolean {
  const { cidr } = range;
  if (range.family === 'v4') return cidr.prefix < 31 && (value === cidr.first || value === cidr.last);
  return cidr.prefix < 127 && value === cidr.first;
}

/** The range of a pool that holds a block CIDR, if any. */
export function rangeOf(pool: Pool, cidr: ParsedCidr): PoolRange | undefined {
  return pool.ranges.find((r) => r.family === cidr.family && r.blockPrefix === cidr.prefix && cidr.first >= r.cidr.first && cidr.last <= r.cidr.last);
}

/** FNV-1a of the node name: where a node starts looking for a free block, so nodes starting
 * together spread over the range instead of all racing for its first block. */
export function startIndex(node: string, count: bigint): bigint {
  let h = 0xcbf29ce484222325n;
  for (const ch of Buffer.from(node, 'utf8')) h = ((h ^ BigInt(ch)) * 0x100000001b3n) & 0xffffffffffffffffn;
  return count === 0n ? 0n : h % count;
}
