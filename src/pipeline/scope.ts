/** The names of what changed since the last commit: the scope of the next diff, so an event's
 * commit looks at what the event touched and nothing else. */
import { DiffScope } from '../ruleset/diff';

/** Accumulated names of what changed since the last commit. */
export class ChangeScope implements DiffScope {
  chains = new Set<string>();
  sets = new Set<string>();
  elements = new Map<string, Set<string>>();

  element(set: string, key: string): void {
    let keys = this.elements.get(set);
    if (!keys) this.elements.set(set, (keys = new Set()));
    keys.add(key);
  }

  get empty(): boolean {
    return this.chains.size === 0 && this.sets.size === 0 && this.elements.size === 0;
  }

  merge(other: ChangeScope): void {
    for (const c of other.chains) this.chains.add(c);
    for (const s of other.sets) this.sets.add(s);
    for (const [s, keys] of other.elements) for (const k of keys) this.element(s, k);
  }
}
