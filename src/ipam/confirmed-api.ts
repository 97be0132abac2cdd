/** API calls whose outcome is confirmed: a read retried until answered, a delete made sure of, a
 * list retried through unknown outcomes, with bounded backoff.
 *
 * Invariant: an UNKNOWN outcome (timeout, reset, 5xx) is never taken as success: it is retried or
 * read back; a definite refusal is the caller's to handle. Retries are bounded in count. */
import { isConflict, isUnknown, Plural } from './api';
import { IpamContext } from './context';
import { KObject, PLURALS } from './objects';

export const BACKOFF_MS = [20, 50, 100, 200, 400, 800, 1600];
const READ_BACK_ATTEMPTS = 8;

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export class ConfirmedApi {
  constructor(private readonly ctx: IpamContext) {}

  /** GET until answered: the truth about a write whose outcome was unknown. */
  async readBack(plural: Plural, name: string): Promise<KObject | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.ctx.api.get(plural, name);
      } catch (err) {
        if (!isUnknown(err) || attempt >= READ_BACK_ATTEMPTS) throw err;
        this.ctx.metrics?.retries.inc({ reason: 'read-back' });
        await sleep(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]);
        this.ctx.life.alive();
      }
    }
  }

  /** Deletes an object (by uid) and makes sure it is gone. */
  async deleteConfirmed(plural: Plural, name: string, uid: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.ctx.api.remove(plural, name, uid);
        return;
      } catch (err) {
        if (isConflict(err)) return; // another object of that name now: ours is gone
        if (!isUnknown(err) || attempt >= BACKOFF_MS.length) throw err;
        this.ctx.metrics?.retries.inc({ reason: 'delete-unknown' });
        const obj = await this.readBack(plural, name);
        if (!obj || obj.metadata?.uid !== uid) return;
        await sleep(BACKOFF_MS[attempt]);
      }
    }
  }

  async retry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!isUnknown(err) || attempt >= BACKOFF_MS.length) throw err;
        this.ctx.metrics?.retries.inc({ reason: what });
        await sleep(BACKOFF_MS[attempt]);
        this.ctx.life.alive();
      }
    }
  }

  listBlocks(): Promise<KObject[]> {
    return this.retry('list blocks', () => this.ctx.api.list(PLURALS.blocks));
  }

  listClaims(): Promise<KObject[]> {
    return this.retry('list claims', () => this.ctx.api.list(PLURALS.claims));
  }
}
