/** The most recent drop records, bounded, for `nfkube drops` through the agent's /drops: what
 * happened lately and, for followers, what happens next. Memory is fixed: the oldest record
 * goes when a new one comes past the capacity. */
import type { DropRecord } from './drop-log';

/** A drop record with when it was logged (ms since the epoch). */
export interface TimedDrop {
  time: number;
  drop: DropRecord;
}

export const DROP_RING_CAPACITY = 4096;

export class DropRing {
  private readonly entries: TimedDrop[] = [];
  /** Where the next record goes once the ring is full. */
  private next = 0;
  private readonly followers = new Set<(d: TimedDrop) => void>();

  constructor(private readonly capacity = DROP_RING_CAPACITY) {}

  push(drop: DropRecord, time = Date.now()): void {
    const entry = { time, drop };
    if (this.entries.length < this.capacity) this.entries.push(entry);
    else {
      this.entries[this.next] = entry;
      this.next = (this.next + 1) % this.capacity;
    }
    for (const f of this.followers) f(entry);
  }

  /** The records logged at or after `since`, oldest first. */
  since(since: number): TimedDrop[] {
    const ordered = [...this.entries.slice(this.next), ...this.entries.slice(0, this.next)];
    return ordered.filter((e) => e.time >= since);
  }

  /** Calls `f` with each record from now on, until the returned function is called. */
  follow(f: (d: TimedDrop) => void): () => void {
    this.followers.add(f);
    return () => this.followers.delete(f);
  }
}
