/** Gives a handle its addresses (one per family of its pool) and takes them back: from this node's
 * own blocks first (no API call), else a newly claimed block, else the tails it lent that nobody
 * borrowed, else one address borrowed from another node. A block is claimed ahead of need when
 * the free addresses of a pool and family fall under the watermark.
 *
 * Invariants: an ADD that fails holds nothing (what it took is given back) unless its record may
 * be on disk, in which case its addresses stay marked until a restart replays the record; a handle
 * between choosing addresses and answering is `inflight`, and GC leaves it alone; a released
 * address is marked free only after the release is on disk. */
import { CNI_ERR, IpamRequest } from '../cni/protocol';
import { IpFamily } from '../net/ip';
import { BlockClaims } from './block-claims';
import { ConfirmedApi } from './confirmed-api';
import { IpamContext, IpamError } from './context';
import { AllocationLedger } from './ledger';
import { Lending } from './lending';
import { PLURALS, PodRef } from './objects';
import { Pool } from './pool';
import { PoolCatalog } from './pool-catalog';
import { Publisher } from './publisher';
import { AllocatedIp, Allocation } from './state';

/** Free addresses a node keeps for itself: the configured watermark, else a quarter block. */
export function watermarkFor(configured: number | undefined, blockSize: number): number {
  return configured ?? Math.max(1, Math.floor(blockSize / 4));
}

/** The pod a request's CNI_ARGS name, if they name one. */
export function podOf(args: Record<string, string> | undefined): PodRef | undefined {
  const namespace = args?.K8S_POD_NAMESPACE;
  const name = args?.K8S_POD_NAME;
  if (!namespace || !name) return undefined;
  const uid = args?.K8S_POD_UID;
  return { namespace, name, ...(uid ? { uid } : {}) };
}

export interface AllocatorParts {
  confirmed: ConfirmedApi;
  pools: PoolCatalog;
  blocks: BlockClaims;
  lending: Lending;
  ledger: AllocationLedger;
  publisher: Publisher;
}

export class Allocator {
  /** Handles whose ADD is between choosing addresses and answering: GC leaves them alone. */
  readonly inflight = new Set<string>();

  constructor(
    private readonly ctx: IpamContext,
    private readonly parts: AllocatorParts,
    /** Claim a new block when fewer free addresses than this remain (default: a quarter block). */
    private readonly watermark: number | undefined,
  ) {}

  private watermarkOf(blockSize: number): number {
    return watermarkFor(this.watermark, blockSize);
  }

  /** ADD for a handle (serialised per handle by the caller): its addresses, recorded. */
  async add(key: string, req: IpamRequest): Promise<AllocatedIp[]> {
    const { state } = this.ctx;
    const existing = state.allocations.get(key);
    if (existing) return existing.ips;
    const pool = await this.parts.pools.poolFor(req.pool);
    const families = [...new Set(pool.ranges.map((r) => r.family))];
    const pod = podOf(req.args);
    const ips: AllocatedIp[] = [];
    /** Set when the record may hold the allocation although the append failed. */
    let maybeRecorded = false;
    this.inflight.add(key);
    try {
      for (const family of families) ips.push(await this.allocateOne(pool, family, key, pod));
      this.ctx.life.alive();
      const alloc: Allocation = { network: req.network, containerID: req.containerID!, ifname: req.ifname!, pool: pool.name, ips, pod, at: this.ctx.now() };
      const failed = await this.parts.ledger.add(key, alloc);
      if (failed) {
        // When the line may be on disk (it could not be cut back off), the addresses stay marked
        // (a restart replays the record and decides), never handed to another pod meanwhile.
        maybeRecorded = failed.maybeWritten;
        throw failed.error;
      }
      this.ctx.life.alive();
      for (const ip of ips) if (!ip.claim) this.parts.publisher.markChanged(ip.block);
      this.parts.publisher.schedule();
      this.claimAhead(pool, families);
      return ips;
    } catch (err) {
      // Nothing was answered: give back what this attempt took (borrowed claims are deleted, or
      // left for GC if that fails).
      if (!state.allocations.has(key) && !this.ctx.life.stopped && !maybeRecorded) this.giveBack(ips);
      throw err;
    } finally {
      this.inflight.delete(key);
    }
  }

  private giveBack(ips: AllocatedIp[]): void {
    for (const ip of ips) {
      if (ip.claim) {
        const claim = ip.claim;
        void this.parts.confirmed.deleteConfirmed(PLURALS.claims, claim.name, claim.uid).catch((err) => this.ctx.log.warn({ err, claim: claim.name }, 'releasing a borrowed address failed; GC will'));
      } else {
        const b = this.ctx.state.blocks.get(ip.block);
        const o = b?.ordinalOf(ip.address);
        if (b && o !== undefined) b.release(o);
      }
    }
  }

  private async allocateOne(pool: Pool, family: IpFamily, key: string, pod: PodRef | undefined): Promise<AllocatedIp> {
    const { blocks, lending } = this.parts;
    for (let attempt = 0; ; attempt++) {
      const got = this.ctx.state.takeLocal(pool.name, family);
      if (got) {
        return { family, address: got.block.address(got.ordinal), prefix: got.block.range.cidr.prefix, block: got.block.name };
      }
      this.ctx.life.alive();
      const claimed = await blocks.claim(pool, family);
      this.ctx.life.alive();
      if (claimed) continue;
      if (await lending.takeBack(pool, family)) continue;
      if (attempt > 2) break;
      const borrowed = await lending.borrow(pool, family, key, pod);
      if (borrowed) return borrowed;
      break;
    }
    throw new IpamError(CNI_ERR.tryAgainLater, `IPPool ${pool.name}: no free ${family === 'v4' ? 'IPv4' : 'IPv6'} address (no unclaimed block and nothing to borrow)`);
  }

  /** Claims a new block ahead of need when free addresses fall under the watermark. */
  private claimAhead(pool: Pool, families: IpFamily[]): void {
    for (const family of families) {
      const blocks = this.ctx.state.blocksOf(pool.name, family);
      if (this.ctx.state.freeIn(pool.name, family) < this.watermarkOf(blocks[0]?.size ?? 64)) {
        void this.parts.blocks.claim(pool, family).catch((err) => this.ctx.log.warn({ err, pool: pool.name, family }, 'claiming a block ahead of need failed'));
      }
    }
  }

  /** Releases a handle (serialised per handle by the caller): recorded on disk first, then its
   * addresses become free. False when the handle holds nothing. */
  async release(key: string, reason: string): Promise<boolean> {
    const alloc = await this.parts.ledger.remove(key);
    if (!alloc) return false;
    this.ctx.life.alive();
    this.ctx.state.releaseAllocation(alloc);
    for (const ip of alloc.ips) {
      if (ip.claim) {
        const claim = ip.claim;
        await this.parts.confirmed.deleteConfirmed(PLURALS.claims, claim.name, claim.uid).catch((err) => this.ctx.log.warn({ err, claim: claim.name }, 'deleting a borrowed address claim failed; GC will retry'));
      } else this.parts.publisher.markChanged(ip.block);
    }
    if (reason !== 'del') this.ctx.metrics?.gcReleases.inc({ reason });
    this.parts.publisher.schedule();
    return true;
  }
}
