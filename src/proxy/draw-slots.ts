/** Which load-balancing chains of one family hash to each draw slot (render.ts), as claims of the
 * desired model: a chain holds its slot while no other chain hashes there, and a block's endpoint
 * map exists while some chain hashes into it. */
import type { IpFamily } from '../net/ip';
import type { DesiredModel } from '../pipeline/desired-model';
import { N, type DrawSlot, type ProxyRenderer } from './render';

export class DrawSlots {
  constructor(
    private readonly desired: DesiredModel,
    private readonly renderer: ProxyRenderer,
  ) {}

  /** Enters the chain (its block's map made with the block's first chain); returns the chain
   * whose slot it takes away, and whether it holds its slot. */
  enter(chain: string, f: IpFamily, slot: DrawSlot): { displaced?: string; holds: boolean } {
    const entry = slotEntry(f, slot);
    const before = this.desired.claimants(entry);
    if (before.has(chain)) return { holds: before.size === 1 };
    const displaced = before.size === 1 ? [...before][0] : undefined;
    this.desired.claim(entry, chain);
    this.desired.claimSet(N.endpointDraws(f, slot.block), chain, () => ({ set: this.renderer.endpointMap(f, slot.block), elements: new Map() }));
    return { displaced, holds: displaced === undefined };
  }

  /** Removes the chain from its slot; returns the chain that now holds the slot alone. Its block's
   * map stays until releaseBlock, after the chain's elements are out of it. */
  leave(chain: string, f: IpFamily, slot: DrawSlot): string | undefined {
    const entry = slotEntry(f, slot);
    if (!this.desired.claimants(entry).has(chain)) return undefined;
    this.desired.release(entry, chain);
    const rest = this.desired.claimants(entry);
    return rest.size === 1 ? [...rest][0] : undefined;
  }

  /** The chain no longer hashes into its block: the block's map goes with its last chain. */
  releaseBlock(chain: string, f: IpFamily, slot: DrawSlot): void {
    this.desired.releaseSet(N.endpointDraws(f, slot.block), chain);
  }
}

function slotEntry(f: IpFamily, slot: DrawSlot): string {
  return `draw ${f} ${slot.block} ${slot.id}`;
}
