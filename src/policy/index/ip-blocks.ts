/** ipBlock sets: fixed contents (compiled from the policy alone), counted by the policies
 * referencing them. */

import type { SetLedger, SettledSets } from '../delta-recorder';
import type { IpBlockSet } from '../ir';

export class IpBlockSetIndex implements SettledSets<IpBlockSet> {
  private readonly sets = new Map<string, { set: IpBlockSet; refs: number }>();

  constructor(private readonly ledger: SetLedger) {}

  get size(): number {
    return this.sets.size;
  }

  ids(): Iterable<string> {
    return this.sets.keys();
  }

  ref(set: IpBlockSet): void {
    const existing = this.sets.get(set.id);
    this.ledger.touch(set.id, existing !== undefined);
    if (existing) existing.refs++;
    else this.sets.set(set.id, { set, refs: 1 });
  }

  /** A policy no longer references the set; `settle` drops it once nothing does. */
  unref(id: string): void {
    this.ledger.touch(id, true);
    this.sets.get(id)!.refs--;
  }

  settle(id: string): boolean {
    const held = this.sets.get(id);
    if (!held) return false;
    if (held.refs > 0) return true;
    this.sets.delete(id);
    return false;
  }

  contents(id: string): IpBlockSet {
    return this.sets.get(id)!.set;
  }
}
