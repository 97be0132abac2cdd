/** Runs one piece of kernel work at a time for every table: a resync's read-back generation
 * must not be bumped by another table's commit in between. */
export class Lane {
  private last: Promise<void> = Promise.resolve();
  /** Pieces of work queued or running. */
  private queued = 0;

  get busy(): Promise<void> {
    return this.last;
  }

  /** Runs fn after the work queued before it. An idle lane starts it on the next tick: after
   * the code that asked (a source delivering every event of one read: they are committed
   * together), before Node's own stream bookkeeping for that read, which a promise hop waits
   * for (~80 µs an event, measured). */
  run<T>(fn: () => Promise<T>): Promise<T> {
    this.queued++;
    const run =
      this.queued === 1
        ? new Promise<T>((resolve, reject) =>
            process.nextTick(() => {
              try {
                resolve(fn());
              } catch (err) {
                reject(err);
              }
            }),
          )
        : this.last.then(fn);
    this.last = run.then(
      () => void this.queued--,
      () => void this.queued--,
    );
    return run;
  }
}
