/** Runs the work on one CNI handle (network/containerID/ifname) in arrival order.
 *
 * Invariant: two calls for the same handle (an ADD and its DEL, a GC release) never overlap, so a
 * handle's allocation changes one step at a time; calls for different handles run concurrently.
 * An entry lives only while work for its handle is queued. */
export class HandleQueue {
  private readonly tails = new Map<string, Promise<unknown>>();

  /** Runs fn after every earlier call for the same handle (whether that one failed or not). */
  run<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.tails.set(key, tail);
    void tail.then(() => {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    });
    return next;
  }
}
