/** The small collections the engine's indexes share. */

/** Multiset of strings: an element is in the set while its count is positive (two pods may
 * briefly share an address; removing one must not remove the address). */
export class CountedSet {
  readonly counts = new Map<string, number>();
  /** True when the element became present. */
  add(key: string): boolean {
    const n = this.counts.get(key) ?? 0;
    this.counts.set(key, n + 1);
    return n === 0;
  }
  /** True when the element became absent. */
  remove(key: string): boolean {
    const n = this.counts.get(key) ?? 0;
    if (n <= 1) {
      this.counts.delete(key);
      return n === 1;
    }
    this.counts.set(key, n - 1);
    return false;
  }
}

export function addTo<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  let s = map.get(key);
  if (!s) map.set(key, (s = new Set()));
  s.add(value);
}

export function removeFrom<K, V>(map: Map<K, Set<V>>, key: K, value: V): void {
  const s = map.get(key);
  if (!s) return;
  s.delete(value);
  if (s.size === 0) map.delete(key);
}
