/** How far V8 lets the old generation grow past what survived the last full GC before it runs
 * the next one. By default 2-4x, picked from how fast it collects: at 250k endpoints the
 * long-running agent's RSS held ~200 MB of garbage after endpoint churn (a heap snapshot: mostly
 * dead objects waiting for a full GC). A fixed 20% keeps RSS near the live heap and still sets
 * no limit of its own, so a larger cluster is never refused memory it needs
 * (docs/proxy-performance.md). The flag is not allowed in NODE_OPTIONS: bin/nfkube sets it at
 * start. */
import { setFlagsFromString } from 'node:v8';

export const HEAP_GROWING_PERCENT = 20;

/** Sets the growth unless node was started with its own; true when set here. V8 reads the flag
 * at each full GC, so setting it while running takes effect from the next one. */
export function limitHeapGrowth(execArgv: readonly string[] = process.execArgv): boolean {
  if (execArgv.some((a) => a.startsWith('--heap-growing-percent'))) return false;
  setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
  return true;
}
