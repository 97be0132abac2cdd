/** Collects what a ClusterSource delivers and lets a test wait for a particular change. */
import type { ClusterChange, SourceError, SourceHandlers } from '../../src/k8s/source';

type Waiter<T> = { from: number; match: (x: T) => boolean; resolve: (x: T) => void };

export class Recorder implements SourceHandlers {
  readonly changes: ClusterChange[] = [];
  readonly errors: SourceError[] = [];
  private changeWaiters: Waiter<ClusterChange>[] = [];
  private errorWaiters: Waiter<SourceError>[] = [];

  onChange = (change: ClusterChange): void => {
    this.changes.push(change);
    this.changeWaiters = settle(this.changeWaiters, this.changes);
  };

  onError = (err: SourceError): void => {
    this.errors.push(err);
    this.errorWaiters = settle(this.errorWaiters, this.errors);
  };

  /** The first change from index `from` on (default: the next one) that matches. */
  change(match: (c: ClusterChange) => boolean, from = this.changes.length): Promise<ClusterChange> {
    return wait(this.changeWaiters, this.changes, from, match);
  }

  error(match: (e: SourceError) => boolean, from = this.errors.length): Promise<SourceError> {
    return wait(this.errorWaiters, this.errors, from, match);
  }

  /** Changes from `from` on, as `type kind key` lines: easy to compare whole. */
  summary(from = 0): string[] {
    return this.changes.slice(from).map((c) => `${c.type} ${c.kind} ${c.key}`);
  }
}

function wait<T>(waiters: Waiter<T>[], seen: T[], from: number, match: (x: T) => boolean): Promise<T> {
  const found = seen.slice(from).find(match);
  if (found !== undefined) return Promise.resolve(found);
  return new Promise((resolve) => waiters.push({ from, match, resolve }));
}

function settle<T>(waiters: Waiter<T>[], seen: T[]): Waiter<T>[] {
  const latest = seen[seen.length - 1];
  return waiters.filter((w) => {
    if (seen.length - 1 < w.from || !w.match(latest)) return true;
    w.resolve(latest);
    return false;
  });
}
