/** Usage errors: one line, with the closest known name when the given one is a likely typo. */
import { editDistance } from '../edit-distance';

/** A mistake in how a command was called: reported as one line, never with a stack or the usage. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** The known name closest to `given`, when close enough to be a typo (a third of its length). */
export function closest(given: string, known: Iterable<string>): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const k of known) {
    const d = editDistance(given, k);
    if (d < bestDistance) [best, bestDistance] = [k, d];
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(given.length / 3)) ? best : undefined;
}

/** ` (did you mean X?)` or ''. */
export function didYouMean(given: string, known: Iterable<string>, render: (k: string) => string = (k) => k): string {
  const k = closest(given, known);
  return k === undefined ? '' : `; did you mean ${render(k)}?`;
}
