/** The blocks this node holds: claimed by creating their IPBlock (409: another node has it),
 * adopted from the API's list at start, given up when the API no longer gives them to this node,
 * and claimed back when addresses in a lost block are still held.
 *
 * Invariants: a block is used (in NodeState.blocks) only once the API confirmed this node holds it
 * (its create answered, or a read back shows this node); an unknown create is read back, never
 * taken as won; one claim per pool and family runs at a time; an address another node claimed
 * inside a held block (borrowed while an earlier holder lent it) is never handed out here; a list
 * judges only blocks adopted before it began. */
import { formatCidr, IpFamily, ipInCidr, parseCidr, parseIp, ParsedCidr } from '../net/ip';
import { isConflict, isUnknown } from './api';
import { BlockUpdates } from './block-updates';
import { BACKOFF_MS, ConfirmedApi, sleep } from './confirmed-api';
import { IpamContext } from './context';
import { BlockObject, blockManifest, ClaimObject, KObject, PLURALS, readBlock, readClaim } from './objects';
import { blockCidr, blockCount, blockName, parseBlockName, Pool, poolExhausted, rangeOf, startIndex } from './pool';
import { PoolCatalog } from './pool-catalog';
import { Publisher } from './publisher';
import { BlockState } from './state';

/** Probes per range when looking for an unclaimed block (bounded for huge v6 ranges). */
const MAX_PROBES = 4096;

/** Whether the API's listing of a block (undefined: not listed) still gives it to this node. */
export function listedAsHeld(held: BlockState, listed: BlockObject | undefined, nodeName: string): boolean {
  return listed !== undefined && listed.node === nodeName && listed.uid === held.uid;
}

export class BlockClaims {
  /** Names of blocks known to be held by someone (from lists and lost claims). */
  private readonly taken = new Set<string>();
  private readonly claiming = new Map<string, Promise<boolean>>();
  /** Orders block adoptions against block lists: a block adopted after a list began is not
   * judged by that list. */
  private seq = 0;
  private readonly adoptedSeq = new Map<string, number>();

  constructor(
    private readonly ctx: IpamContext,
    private readonly confirmed: ConfirmedApi,
    private readonly updates: BlockUpdates,
    private readonly pools: PoolCatalog,
    private readonly publisher: Publisher,
  ) {}

  noteTaken(name: string): void {
    this.taken.add(name);
  }

  /** A block released (a deleted Node's): it may be claimed again. */
  noteReleased(name: string): void {
    this.taken.delete(name);
  }

  /** True when every block of the pool is known taken. */
  exhausted(pool: Pool): boolean {
    return poolExhausted(pool, this.taken);
  }

  /** Uses a block the API gives this node; undefined (logged) when it fits no range of its pool. */
  adopt(obj: KObject): BlockState | undefined {
    const b = readBlock(obj);
    const pool = this.pools.get(b.pool);
    const cidr = parseCidr(b.cidr ?? '');
    const range = pool && cidr ? rangeOf(pool, cidr) : undefined;
    if (!pool || !cidr || !range || blockName(cidr) !== b.name) {
      this.ctx.log.error({ block: b.name, pool: b.pool, cidr: b.cidr }, 'IPBlock held by this node matches no range of its pool; not used');
      return undefined;
    }
    const state = new BlockState(b.name, b.uid, b.pool, range, cidr, b.lendFrom);
    this.ctx.state.blocks.set(b.name, state);
    this.adoptedSeq.set(b.name, ++this.seq);
    this.updates.remember(b.name, obj);
    this.taken.add(b.name);
    return state;
  }

  /** Borrowed addresses inside blocks this node holds are never handed out by it. */
  markForeignClaims(claims: ClaimObject[]): void {
    for (const c of claims) {
      if (c.node === this.ctx.nodeName) continue;
      const ip = parseIp(c.address ?? '');
      if (!ip) continue;
      for (const b of this.ctx.state.blocks.values()) {
        if (!ipInCidr(ip, b.cidr)) continue;
        const o = Number(ip.value - b.cidr.first);
        if (b.used[o] === 1) this.ctx.log.error({ address: c.address, claim: c.name, borrower: c.node }, 'an address this node uses is also claimed by another node');
        else b.used[o] = 3;
      }
    }
  }

  /** Claims one more block of the pool and family; false when every block is held. One claim
   * per pool and family runs at a time; concurrent callers share it. */
  claim(pool: Pool, family: IpFamily): Promise<boolean> {
    const k = `${pool.name}/${family}`;
    let p = this.claiming.get(k);
    if (!p) {
      p = this.claimNow(pool, family).finally(() => this.claiming.delete(k));
      this.claiming.set(k, p);
    }
    return p;
  }

  private async claimNow(pool: Pool, family: IpFamily): Promise<boolean> {
    for (let pass = 0; pass < 2; pass++) {
      for (const range of pool.ranges.filter((r) => r.family === family)) {
        const count = blockCount(range);
        const start = startIndex(`${this.ctx.nodeName}/${range.cidr.first}`, count);
        const probes = count < BigInt(MAX_PROBES) ? Number(count) : MAX_PROBES;
        for (let i = 0; i < probes; i++) {
          const cidr = blockCidr(range, (start + BigInt(i)) % count);
          const name = blockName(cidr);
          if (this.taken.has(name)) continue;
          this.ctx.life.alive();
          const won = await this.tryClaim(name, pool, cidr);
          if (won) return true;
        }
      }
      // Every block we knew of was taken: refresh the list once (some may have been released).
      if (pass === 0) {
        const objs = await this.confirmed.listBlocks();
        this.taken.clear();
        for (const o of objs) this.taken.add(o.metadata?.name);
      }
    }
    // No lending here: this node is short of addresses itself.
    return false;
  }

  /** Creates the block's IPBlock. Resolves true only when the API confirms this node holds it. */
  private async tryClaim(name: string, pool: Pool, cidr: ParsedCidr): Promise<boolean> {
    const manifest = blockManifest({ name, pool: pool.name, cidr: formatCidr(cidr), node: this.ctx.nodeName });
    for (let attempt = 0; ; attempt++) {
      let obj: KObject | undefined;
      try {
        obj = await this.ctx.api.create(PLURALS.blocks, manifest);
      } catch (err) {
        if (!isConflict(err) && !isUnknown(err)) throw err;
        if (isConflict(err)) this.ctx.metrics?.conflicts.inc({ kind: 'block' });
        else this.ctx.metrics?.retries.inc({ reason: 'block-create-unknown' });
        // Read back: the create may have landed (ours) or another node may hold the block.
        obj = await this.confirmed.readBack(PLURALS.blocks, name);
        this.ctx.life.alive();
        if (!obj) {
          if (isConflict(err)) continue; // deleted in between: try again
          if (attempt >= BACKOFF_MS.length) throw err;
          await sleep(BACKOFF_MS[attempt]);
          continue;
        }
      }
      this.ctx.life.alive();
      this.taken.add(name);
      const b = readBlock(obj);
      if (b.node !== this.ctx.nodeName) {
        this.ctx.metrics?.blockClaims.inc({ result: 'lost' });
        return false;
      }
      this.ctx.metrics?.blockClaims.inc({ result: 'won' });
      const state = this.ctx.state.blocks.get(name) ?? this.adopt(obj);
      if (!state) return false;
      // Addresses borrowed from this block while an earlier holder lent it stay theirs.
      const claims = await this.confirmed.listClaims();
      this.markForeignClaims(claims.map(readClaim));
      this.publisher.markChanged(name);
      this.publisher.schedule();
      this.ctx.log.info({ block: name, pool: pool.name }, 'claimed block');
      return true;
    }
  }

  /** Claims back a block that still holds recorded addresses, and marks them used again. */
  async reclaimLost(name: string, poolName: string): Promise<void> {
    const pool = this.pools.get(poolName);
    const cidr = parseBlockName(name);
    if (!pool || !cidr) return;
    await this.tryClaim(name, pool, cidr);
    for (const a of this.ctx.state.allocations.values()) this.ctx.state.markAllocation(a);
  }

  /** Call before listing blocks for judgeListed. */
  beginList(): number {
    return ++this.seq;
  }

  /** Takes a fresh list of all blocks as the truth: what is taken, and which held blocks the API
   * no longer gives this node (released as a deleted Node's, or by hand). Nothing more is taken
   * from those, and one is claimed back if addresses in it are still held. */
  async judgeListed(blocks: BlockObject[], listSeq: number): Promise<void> {
    this.taken.clear();
    for (const b of blocks) this.taken.add(b.name);
    const current = new Map(blocks.map((b) => [b.name, b]));
    for (const [name, b] of [...this.ctx.state.blocks]) {
      const now = current.get(name);
      if (listedAsHeld(b, now, this.ctx.nodeName) || (this.adoptedSeq.get(name) ?? 0) > listSeq) continue;
      this.ctx.state.blocks.delete(name);
      this.updates.forget(name);
      this.ctx.log.error({ block: name, holder: now?.node }, 'a block this node held is gone from the API; no more addresses are taken from it');
      const stillHeld = [...this.ctx.state.allocations.values()].find((a) => a.ips.some((ip) => !ip.claim && ip.block === name));
      if (stillHeld && !now) await this.reclaimLost(name, stillHeld.pool).catch((err) => this.ctx.log.error({ err, block: name }, 'reclaiming block failed'));
    }
  }
}
