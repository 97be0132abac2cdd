/** Network programming latency: for each change the agent commits, the time from the object's
 * last change in the API (ClusterChange.changedAt) and from its event's arrival to the kernel
 * commit. A change is counted once the agent has queued it (the observer's queueDepth rising),
 * so events that change nothing in the kernel are not; it is committed by the first sync that
 * started after it arrived. */
import type { ClusterChange } from '../k8s/source';

interface Waiting {
  kind: string;
  changedAt?: number;
  arrivedAt: number;
}

export interface ProgrammingLatencyClock {
  /** Monotonic milliseconds with sub-millisecond resolution (performance.now). */
  monotonic(): number;
  /** Milliseconds since the epoch (Date.now). */
  wall(): number;
}

export type ProgrammingObserver = (kind: string, sinceChange: number | undefined, sinceArrival: number) => void;

export class ProgrammingLatency {
  private arriving?: Waiting;
  private waiting: Waiting[] = [];

  constructor(
    private readonly observe: ProgrammingObserver,
    private readonly clock: ProgrammingLatencyClock = { monotonic: () => performance.now(), wall: () => Date.now() },
  ) {}

  /** Wraps the delivery of one change to the agent (deliver runs synchronously). */
  deliver(change: ClusterChange, deliver: () => void): void {
    this.arriving = { kind: change.kind, changedAt: change.changedAt, arrivedAt: this.clock.monotonic() };
    try {
      deliver();
    } finally {
      this.arriving = undefined;
    }
  }

  /** The agent queued the change being delivered: it will reach the kernel. */
  queued(): void {
    if (this.arriving) this.waiting.push(this.arriving);
    this.arriving = undefined;
  }

  /** A sync committed; it started `durationMs` ago and carries every change queued before. */
  committed(durationMs: number): void {
    if (this.waiting.length === 0) return;
    const now = this.clock.monotonic();
    const wall = this.clock.wall();
    const startedAt = now - durationMs;
    const later: Waiting[] = [];
    for (const w of this.waiting) {
      if (w.arrivedAt > startedAt) later.push(w);
      else this.observe(w.kind, w.changedAt === undefined ? undefined : (wall - w.changedAt) / 1000, (now - w.arrivedAt) / 1000);
    }
    this.waiting = later;
  }

  /** Changes queued and not yet committed. */
  get pending(): number {
    return this.waiting.length;
  }
}
