/** The p-th percentile of ascending `sorted` (nearest rank); NaN when it is empty. */
export function percentile(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN;
}
