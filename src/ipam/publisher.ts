/** Publishes this node's allocations to its blocks' status.allocations, so the API shows who holds
 * what (for `ipam show`/`check`, and for a restart that lost its record): changes are coalesced
 * and written a delay later, one conditional update per changed block.
 *
 * Invariants: a block marked changed is written at least once after the mark (a failed write
 * marks it again); one publish runs at a time; each write states the whole of the block's
 * allocations at that moment (never a delta), so a late or repeated write is still true.
 * Borrowed addresses are not published (their IPAddressClaim says it). */
import { BlockUpdates } from './block-updates';
import { IpamContext } from './context';
import { BlockObject } from './objects';
import { Allocation, BlockState } from './state';

export type StatusAllocations = BlockObject['allocations'];

/** Each named block's status.allocations (ordinal -> handle and pod) from the node's
 * allocations. Pure. */
export function statusAllocations(names: Iterable<string>, allocations: ReadonlyMap<string, Allocation>, blocks: ReadonlyMap<string, BlockState>): Map<string, StatusAllocations> {
  const byBlock = new Map<string, StatusAllocations>();
  for (const n of names) byBlock.set(n, {});
  for (const [key, a] of allocations) {
    for (const ip of a.ips) {
      const rec = byBlock.get(ip.block);
      if (!rec || ip.claim) continue;
      const o = blocks.get(ip.block)?.ordinalOf(ip.address);
      if (o !== undefined) rec[String(o)] = { handle: key, ...(a.pod ? { pod: a.pod } : {}) };
    }
  }
  return byBlock;
}

export class Publisher {
  private readonly changed = new Set<string>();
  private timer?: NodeJS.Timeout;
  private publishing?: Promise<void>;

  constructor(
    private readonly ctx: IpamContext,
    private readonly updates: BlockUpdates,
    /** Delay before changes are written, coalescing bursts. */
    private readonly delayMs: number,
  ) {}

  markChanged(block: string): void {
    this.changed.add(block);
  }

  schedule(): void {
    if (this.ctx.life.stopped || this.timer || this.changed.size === 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.flush().catch((err) => this.ctx.log.warn({ err }, 'publishing allocations failed'));
    }, this.delayMs);
    this.timer.unref();
  }

  /** No more scheduled writes (a flush may still be asked for). */
  cancel(): void {
    clearTimeout(this.timer);
  }

  /** Writes each changed block's allocations into its status now. */
  async flush(): Promise<void> {
    while (this.publishing) await this.publishing;
    if (this.ctx.life.stopped) return;
    this.publishing = (async () => {
      const names = [...this.changed];
      this.changed.clear();
      const byBlock = statusAllocations(names, this.ctx.state.allocations, this.ctx.state.blocks);
      await Promise.all(
        names.map((n) =>
          this.ctx.state.blocks.has(n)
            ? this.updates
                .update(n, (obj) => {
                  obj.status = { allocations: byBlock.get(n) };
                })
                .catch((err) => {
                  this.changed.add(n);
                  throw err;
                })
            : Promise.resolve(),
        ),
      );
    })().finally(() => {
      this.publishing = undefined;
      this.schedule();
    });
    await this.publishing;
  }
}
