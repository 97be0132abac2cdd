/** The ruleset generation of this process's network namespace as seen from another process
 * (bench/generation-poller.js), so a bench times commits without a poll loop competing with the
 * measured agent or the test API server for this process's event loop. */
import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';

function sleep(msec: number): Promise<void> {
  return new Promise((r) => setTimeout(r, msec));
}

/** Generation changes as bench/generation-poller.js (another process) sees them. */
export class GenerationWatch {
  private readonly changes: { gen: number; at: bigint }[] = [];
  /** The poller's first line is the generation it found at its start, not a change. */
  private initial?: number;
  private readonly createdAt = process.hrtime.bigint();
  private waiter?: () => void;
  private readonly poller: ChildProcess;

  constructor() {
    this.poller = spawn(process.execPath, [join(__dirname, 'generation-poller.js')], { stdio: ['ignore', 'pipe', 'inherit'] });
    let buf = '';
    this.poller.stdout!.on('data', (d) => {
      buf += d;
      let nl;
      while ((nl = buf.indexOf('\n')) >= 0) {
        const [gen, at] = buf.slice(0, nl).split(' ');
        buf = buf.slice(nl + 1);
        if (this.initial === undefined) {
          this.initial = Number(gen);
          this.waiter?.();
          continue;
        }
        this.changes.push({ gen: Number(gen), at: BigInt(at) });
        this.waiter?.();
      }
    });
  }

  /** Resolves once the poller is watching (its first line is in): a commit after this is a change. */
  async ready(timeoutMs = 10_000): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (this.initial === undefined) {
      if (performance.now() > deadline) throw new Error('generation poller did not start');
      await sleep(5);
    }
  }

  /** Milliseconds from t0 (process.hrtime.bigint()) to the first change seen after it. */
  async after(t0: bigint, timeoutMs = 2000): Promise<number | undefined> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const c = this.changes.find((x) => x.at > t0);
      if (c) return Number(c.at - t0) / 1e6;
      const left = deadline - performance.now();
      if (left <= 0) return undefined;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.waiter = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  }

  /** Waits until no change has been seen for quietMs. */
  async settle(quietMs: number): Promise<void> {
    const last = () => this.changes[this.changes.length - 1]?.at ?? this.createdAt;
    while (Number(process.hrtime.bigint() - last()) / 1e6 < quietMs) await sleep(quietMs / 3);
  }

  /** The changes seen after t0: how many, and milliseconds from t0 to the last. */
  since(t0: bigint): { changes: number; lastMs?: number } {
    const after = this.changes.filter((c) => c.at > t0);
    return { changes: after.length, lastMs: after.length ? Number(after[after.length - 1].at - t0) / 1e6 : undefined };
  }

  stop(): void {
    this.poller.kill('SIGTERM');
  }
}
