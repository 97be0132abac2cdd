/** One node's IPAM state in memory: the blocks it holds (a use mark per ordinal) and its
 * allocations by handle. Every change here is synchronous, so two requests in one process can never
 * pick the same ordinal; durability is ledger.ts's job, the API the other parts'. */
import { formatIp, IpFamily, parseIp, ParsedCidr } from '../net/ip';
import type { IpamUsage } from './metrics';
import { PodRef } from './objects';
import { blockSize, PoolRange, reservedInRange } from './pool';

export interface AllocatedIp {
  family: IpFamily;
  address: string;
  /** Prefix length of the pool range (what the pod is configured with). */
  prefix: number;
  block: string;
  /** Set when the address was borrowed from another node's block through an IPAddressClaim. */
  claim?: { name: string; uid: string };
}

export interface Allocation {
  network: string;
  containerID: string;
  ifname: string;
  pool: string;
  ips: AllocatedIp[];
  pod?: PodRef;
  /** When the allocation was made (ms since the epoch): GC only judges it by a later pod list. */
  at: number;
}

/** Why a recorded allocation is malformed ("alloc.ips[0].address is not a string"), or undefined:
 * a state record is read back as untrusted bytes, checked field by field before it is used. */
export function allocationProblem(a: unknown): string | undefined {
  if (!isObject(a)) return 'alloc is not an object';
  for (const f of ['network', 'containerID', 'ifname', 'pool'] as const) if (typeof a[f] !== 'string') return `alloc.${f} is not a string`;
  if (typeof a.at !== 'number') return 'alloc.at is not a number';
  if (a.pod !== undefined && (!isObject(a.pod) || typeof a.pod.namespace !== 'string' || typeof a.pod.name !== 'string')) return 'alloc.pod is not a pod reference';
  if (!Array.isArray(a.ips)) return 'alloc.ips is not a list';
  for (const [i, ip] of a.ips.entries()) {
    const at = `alloc.ips[${i}]`;
    if (!isObject(ip)) return `${at} is not an object`;
    if (ip.family !== 'v4' && ip.family !== 'v6') return `${at}.family is not v4 or v6`;
    for (const f of ['address', 'block'] as const) if (typeof ip[f] !== 'string') return `${at}.${f} is not a string`;
    if (!Number.isInteger(ip.prefix)) return `${at}.prefix is not an integer`;
    if (ip.claim !== undefined && (!isObject(ip.claim) || typeof ip.claim.name !== 'string' || typeof ip.claim.uid !== 'string')) return `${at}.claim is not a claim reference`;
  }
  return undefined;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** CNI attachments are identified by network name, container ID and interface name. */
export function handleKey(network: string, containerID: string, ifname: string): string {
  return `${network}/${containerID}/${ifname}`;
}

export class BlockState {
  readonly size: number;
  readonly used: Uint8Array;
  usedCount = 0;
  /** Where the next search starts: freed addresses are reused last, not first. */
  private cursor = 0;

  constructor(
    readonly name: string,
    public uid: string,
    readonly pool: string,
    readonly range: PoolRange,
    readonly cidr: ParsedCidr,
    /** The owner allocates only below this ordinal; at and above it the block lends. */
    public lendFrom: number | undefined,
  ) {
    this.size = blockSize(range);
    this.used = new Uint8Array(this.size);
    for (let i = 0; i < this.size; i++) {
      if (reservedInRange(range, cidr.first + BigInt(i))) {
        this.used[i] = 2;
      }
    }
  }

  get family(): IpFamily {
    return this.cidr.family;
  }

  get limit(): number {
    return this.lendFrom ?? this.size;
  }

  /** Free ordinals the owner may still use. */
  get free(): number {
    let n = 0;
    for (let i = 0; i < this.limit; i++) if (this.used[i] === 0) n++;
    return n;
  }

  /** Marks and returns a free ordinal below the limit, or undefined. */
  take(): number | undefined {
    const limit = this.limit;
    for (let k = 0; k < limit; k++) {
      const i = (this.cursor + k) % limit;
      if (this.used[i] === 0) {
        this.used[i] = 1;
        this.usedCount++;
        this.cursor = (i + 1) % limit;
        return i;
      }
    }
    return undefined;
  }

  mark(ordinal: number): void {
    if (this.used[ordinal] === 0) {
      this.used[ordinal] = 1;
      this.usedCount++;
    }
  }

  release(ordinal: number): void {
    if (this.used[ordinal] === 1) {
      this.used[ordinal] = 0;
      this.usedCount--;
    }
  }

  /** One past the highest ordinal in use (0 when empty). */
  get highWater(): number {
    for (let i = this.size - 1; i >= 0; i--) if (this.used[i] === 1) return i + 1;
    return 0;
  }

  address(ordinal: number): string {
    return formatIp(this.family, this.cidr.first + BigInt(ordinal));
  }

  ordinalOf(address: string): number | undefined {
    const ip = parseIp(address);
    if (!ip || ip.family !== this.family || ip.value < this.cidr.first || ip.value > this.cidr.last) return undefined;
    return Number(ip.value - this.cidr.first);
  }
}

export class NodeState {
  readonly blocks = new Map<string, BlockState>();
  readonly allocations = new Map<string, Allocation>();

  blocksOf(pool: string, family: IpFamily): BlockState[] {
    return [...this.blocks.values()].filter((b) => b.pool === pool && b.family === family);
  }

  freeIn(pool: string, family: IpFamily): number {
    return this.blocksOf(pool, family).reduce((n, b) => n + b.free, 0);
  }

  /** Takes a free address from this node's own blocks of the pool and family. */
  takeLocal(pool: string, family: IpFamily): { block: BlockState; ordinal: number } | undefined {
    // Fill the fullest block first so emptier blocks stay whole (and lendable).
    const candidates = this.blocksOf(pool, family).sort((a, b) => b.usedCount - a.usedCount || (a.name < b.name ? -1 : 1));
    for (const block of candidates) {
      const ordinal = block.take();
      if (ordinal !== undefined) return { block, ordinal };
    }
    return undefined;
  }

  /** Marks the addresses of an allocation as used in the blocks held. */
  markAllocation(a: Allocation): void {
    for (const ip of a.ips) {
      if (ip.claim) continue;
      const b = this.blocks.get(ip.block);
      const o = b?.ordinalOf(ip.address);
      if (b && o !== undefined) b.mark(o);
    }
  }

  releaseAllocation(a: Allocation): void {
    for (const ip of a.ips) {
      if (ip.claim) continue;
      const b = this.blocks.get(ip.block);
      const o = b?.ordinalOf(ip.address);
      if (b && o !== undefined) b.release(o);
    }
  }

  /** Blocks, addresses in use (borrowed ones included) and free addresses, per pool and family. */
  usage(): IpamUsage[] {
    const rows = new Map<string, IpamUsage>();
    for (const b of this.blocks.values()) {
      const k = `${b.pool}/${b.family}`;
      const row = rows.get(k) ?? { pool: b.pool, family: b.family, blocks: 0, inUse: 0, free: 0 };
      row.blocks++;
      row.free += b.free;
      rows.set(k, row);
    }
    for (const a of this.allocations.values()) {
      for (const ip of a.ips) {
        const k = `${a.pool}/${ip.family}`;
        const row = rows.get(k) ?? { pool: a.pool, family: ip.family, blocks: 0, inUse: 0, free: 0 };
        row.inUse++;
        rows.set(k, row);
      }
    }
    return [...rows.values()];
  }
}
