/** Lending and borrowing single addresses once a pool has no unclaimed block: a node lends the
 * unused tail of its blocks (spec.lendFrom), takes back what nobody borrowed when it runs short,
 * and borrows one address from another node's lent tail by creating its IPAddressClaim (named
 * from the address, so two borrowers collide on create).
 *
 * Invariants: the owner stops using a lent ordinal before the block says it lends it, and says it
 * no longer lends before using it again (conditional updates); a lender keeps at least its
 * watermark of free addresses below what it lends; a node short of addresses lends nothing; a
 * borrowed address is used only after its claim is created (or read back as this node's) AND the
 * block, re-read, is still the one lent from and still lends that address (else the claim is
 * deleted); claims already made when a tail is taken back stay their borrowers'. */
import { formatIp, IpFamily, parseCidr } from '../net/ip';
import { isConflict, isUnknown } from './api';
import { BlockClaims } from './block-claims';
import { BlockUpdates } from './block-updates';
import { BACKOFF_MS, ConfirmedApi, sleep } from './confirmed-api';
import { IpamContext } from './context';
import { claimManifest, KObject, PLURALS, PodRef, readBlock, readClaim } from './objects';
import { addressClaimName, Pool, rangeOf, reservedInRange } from './pool';
import { AllocatedIp } from './state';

/** Where a block with free addresses from highWater up to limit starts lending: the upper half of
 * its unused tail, keeping at least `watermark` free addresses below; undefined when that leaves
 * nothing to lend. Pure. */
export function lendTarget(highWater: number, limit: number, watermark: number): number | undefined {
  const target = Math.max(highWater + Math.ceil((limit - highWater) / 2), highWater + watermark);
  return target < limit ? target : undefined;
}

/** Where a lent tail starts once what nobody borrowed is taken back: just above the highest
 * borrowed ordinal, or undefined (lend nothing) when nothing is borrowed. Pure. */
export function lendFromAfterTakeBack(borrowedOrdinals: number[]): number | undefined {
  return borrowedOrdinals.length > 0 ? Math.max(...borrowedOrdinals) + 1 : undefined;
}

export class Lending {
  constructor(
    private readonly ctx: IpamContext,
    private readonly confirmed: ConfirmedApi,
    private readonly updates: BlockUpdates,
    private readonly blocks: BlockClaims,
    /** Free addresses a node keeps for itself, for a block of that size. */
    private readonly watermarkOf: (blockSize: number) => number,
  ) {}

  /** When the pool has no unclaimed block left, this node lends the upper half of the unused
   * tail of each block it holds, keeping at least its watermark of free addresses below the lent
   * part: it stops using those ordinals first, then says so in the block (a conditional update).
   * It takes back what nobody borrowed when it runs short itself (takeBack). */
  async lendIfExhausted(pool: Pool): Promise<void> {
    for (const b of this.ctx.state.blocks.values()) {
      if (b.pool !== pool.name) continue;
      const target = lendTarget(b.highWater, b.limit, this.watermarkOf(b.size));
      if (target === undefined) continue;
      b.lendFrom = target;
      await this.updates.update(b.name, (obj) => {
        const current = obj.spec.lendFrom;
        obj.spec.lendFrom = typeof current === 'number' ? Math.min(current, target) : target;
      });
      this.ctx.log.info({ block: b.name, lendFrom: target }, 'pool exhausted: lending the unused tail of a block');
    }
  }

  /** This node is out of addresses: the lent tails of its blocks of the pool and family are taken
   * back down to just above the highest address borrowed from each. The block says so first (a
   * conditional update); a borrower whose claim lands later finds the block no longer lends that
   * address and drops the claim; claims already made are re-read and stay theirs. True when
   * addresses came back. */
  async takeBack(pool: Pool, family: IpFamily): Promise<boolean> {
    const lending = this.ctx.state.blocksOf(pool.name, family).filter((b) => b.lendFrom !== undefined);
    if (lending.length === 0) return false;
    const borrowed = (await this.confirmed.listClaims()).map(readClaim);
    let gained = false;
    for (const b of lending) {
      const ordinals = borrowed.filter((c) => c.block === b.name && c.blockUID === b.uid).map((c) => b.ordinalOf(c.address ?? '') ?? -1);
      const lendFrom = lendFromAfterTakeBack(ordinals);
      if (lendFrom !== undefined && lendFrom <= b.lendFrom!) continue;
      await this.updates.update(b.name, (obj) => {
        if (lendFrom === undefined) delete obj.spec.lendFrom;
        else obj.spec.lendFrom = lendFrom;
      });
      this.blocks.markForeignClaims((await this.confirmed.listClaims()).map(readClaim));
      b.lendFrom = lendFrom;
      gained = true;
      this.ctx.log.info({ block: b.name, lendFrom }, 'out of addresses: took back the unborrowed tail of a lent block');
    }
    return gained;
  }

  /** Takes one address from another node's lent range by creating its IPAddressClaim, then
   * checks the block is still the one it lent from and still lends that address (else the claim
   * is dropped: the owner may have taken its tail back). */
  async borrow(pool: Pool, family: IpFamily, key: string, pod: PodRef | undefined): Promise<AllocatedIp | undefined> {
    const blocks = (await this.confirmed.listBlocks()).map(readBlock);
    const claims = new Set((await this.confirmed.listClaims()).map((c) => c.metadata?.name as string));
    for (const b of blocks) {
      if (b.pool !== pool.name || b.node === this.ctx.nodeName || b.lendFrom === undefined) continue;
      const cidr = parseCidr(b.cidr ?? '');
      const range = cidr && rangeOf(pool, cidr);
      if (!cidr || !range || cidr.family !== family) continue;
      const size = Number(cidr.last - cidr.first + 1n);
      for (let o = Math.max(0, b.lendFrom); o < size; o++) {
        const value = cidr.first + BigInt(o);
        if (reservedInRange(range, value)) continue;
        const name = addressClaimName(family, value);
        if (claims.has(name)) continue;
        this.ctx.life.alive();
        const address = formatIp(family, value);
        const manifest = claimManifest({ name, pool: pool.name, address, node: this.ctx.nodeName, block: b.name, blockUID: b.uid, handle: key, pod });
        const claim = await this.createClaim(manifest, key);
        if (!claim) {
          claims.add(name);
          continue;
        }
        const current = await this.confirmed.readBack(PLURALS.blocks, b.name);
        const stillLent = current ? readBlock(current).lendFrom : undefined;
        if (!current || current.metadata?.uid !== b.uid || stillLent === undefined || stillLent > o) {
          await this.confirmed.deleteConfirmed(PLURALS.claims, name, claim.uid);
          continue;
        }
        this.ctx.log.info({ address, block: b.name, lender: b.node }, 'borrowed an address');
        return { family, address, prefix: range.cidr.prefix, block: b.name, claim: { name, uid: claim.uid } };
      }
    }
    return undefined;
  }

  /** Creates a claim; its uid when this node holds it (created, or read back as this handle's). */
  private async createClaim(manifest: KObject, key: string): Promise<{ uid: string } | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        const obj = await this.ctx.api.create(PLURALS.claims, manifest);
        return { uid: obj.metadata.uid };
      } catch (err) {
        if (!isConflict(err) && !isUnknown(err)) throw err;
        if (isConflict(err)) this.ctx.metrics?.conflicts.inc({ kind: 'claim' });
        else this.ctx.metrics?.retries.inc({ reason: 'claim-create-unknown' });
        const obj = await this.confirmed.readBack(PLURALS.claims, manifest.metadata.name);
        if (obj) {
          const c = readClaim(obj);
          return c.node === this.ctx.nodeName && c.handle === key ? { uid: c.uid } : undefined;
        }
        if (isConflict(err)) continue;
        if (attempt >= BACKOFF_MS.length) throw err;
        await sleep(BACKOFF_MS[attempt]);
      }
    }
  }
}
