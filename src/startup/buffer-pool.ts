/** Node's Buffer pool, turned off for a long-running nfkube process. Small Buffers from
 * `Buffer.allocUnsafe`/`Buffer.from` are carved from shared 8 KB slabs, and one kept Buffer keeps
 * its whole slab alive: the agent keeps small values (rule `cmp` data, element keys and data) in
 * its desired and committed models, each change's made among transient Buffers, so under endpoint
 * churn each re-rendered value pinned a slab whose other Buffers had died (the proxy agent at 5k
 * Services x 50 endpoints: RSS after 8000 writes 413 MiB, 392 without the pool). A process that
 * syncs once and exits keeps the pool: nothing it keeps outlives it, and without the pool its peak
 * was 1-2 MiB higher, not lower (bench/HISTORY.md, s10-pool). */

/** Turns the pool off from here on unless argv asks for one sync (`--once`); true when turned
 * off. Buffers already carved keep their slabs. */
export function unpoolBuffers(argv: readonly string[]): boolean {
  if (argv.includes('--once')) return false;
  Buffer.poolSize = 0;
  return true;
}
