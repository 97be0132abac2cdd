/** What every set kind shares: a set lives while policies reference it. The first reference
 * creates it; the last one going leaves it until the end of the call (`settle`), so a set
 * dropped and re-added within one call is never torn down. */

import type { SetLedger, SettledSets } from '../delta-recorder';

export abstract class ReferencedSets<State extends { refs: number }, S> implements SettledSets<S> {
  protected readonly sets = new Map<string, State>();

  /** Changes of these sets are reported into `ledger`. */
  constructor(protected readonly ledger: SetLedger) {}

  get size(): number {
    return this.sets.size;
  }

  ids(): Iterable<string> {
    return this.sets.keys();
  }

  /** A policy no longer references the set. */
  unref(id: string): void {
    this.ledger.touch(id, true);
    this.sets.get(id)!.refs--;
  }

  settle(id: string): boolean {
    const state = this.sets.get(id);
    if (!state) return false;
    if (state.refs > 0) return true;
    this.dropped(id, state);
    this.sets.delete(id);
    return false;
  }

  abstract contents(id: string): S;

  /** Counts a reference to set `id`: false when the set is not held, for the caller to create
   * it (with one reference). */
  protected counted(id: string): boolean {
    const existing = this.sets.get(id);
    this.ledger.touch(id, existing !== undefined);
    if (!existing) return false;
    existing.refs++;
    return true;
  }

  /** Undoes what the kind filed for a set being dropped. */
  protected dropped(_id: string, _state: State): void {}
}
