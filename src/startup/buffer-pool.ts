/** Node's Buffer pool, turned off for every nfkube process. Small Buffers from
 * `Buffer.allocUnsafe`/`Buffer.from` are carved from shared 8 KB slabs, and one kept Buffer keeps
 * its whole slab alive: the agent keeps tens of thousands of small values (rule `cmp` data,
 * element keys and data) in its desired and committed models, made among transient message
 * buffers, so under endpoint churn each re-rendered value pinned a slab whose other Buffers had
 * died (the long-running proxy agent at 5k Services x 50 endpoints: external memory 6 -> 36 MB
 * over 8000 writes; with no pool it stays at 3 MB). With no pool each Buffer owns exactly its
 * bytes (bench/HISTORY.md, s10-pool). */

/** Turns the pool off from here on (Buffers already carved keep their slabs). */
export function unpoolBuffers(): void {
  Buffer.poolSize = 0;
}
