/** Writes to the IPBlocks this node holds: read-modify-write conditioned on resourceVersion, from
 * the last copy the API returned (so a write usually needs no read first).
 *
 * Invariants: a write lands only on the version it was computed from (a 409 re-reads and
 * recomputes, at most 20 times); a block the API no longer gives this node is never written. */
import { ApiError, isConflict, isUnknown } from './api';
import { ConfirmedApi } from './confirmed-api';
import { IpamContext } from './context';
import { KObject, PLURALS } from './objects';

const MAX_UPDATE_ATTEMPTS = 20;

export class BlockUpdates {
  /** The last copy of each held block the API returned. */
  private readonly lastObject = new Map<string, KObject>();

  constructor(
    private readonly ctx: IpamContext,
    private readonly confirmed: ConfirmedApi,
  ) {}

  remember(name: string, obj: KObject): void {
    this.lastObject.set(name, obj);
  }

  forget(name: string): void {
    this.lastObject.delete(name);
  }

  /** Read-modify-write of one of this node's blocks, conditioned on resourceVersion. */
  async update(name: string, change: (obj: KObject) => void): Promise<void> {
    let obj = this.lastObject.get(name) ?? (await this.confirmed.readBack(PLURALS.blocks, name));
    for (let attempt = 0; attempt < MAX_UPDATE_ATTEMPTS; attempt++) {
      if (!obj || obj.spec?.node !== this.ctx.nodeName) {
        this.ctx.log.error({ block: name }, 'a block this node holds is gone from the API or held by another node');
        return;
      }
      const next = structuredClone(obj);
      change(next);
      try {
        const stored = await this.ctx.api.replace(PLURALS.blocks, next);
        this.lastObject.set(name, stored);
        return;
      } catch (err) {
        if (isConflict(err)) this.ctx.metrics?.conflicts.inc({ kind: 'update' });
        else if (isUnknown(err)) this.ctx.metrics?.retries.inc({ reason: 'update-unknown' });
        else throw err;
        obj = await this.confirmed.readBack(PLURALS.blocks, name);
        if (obj) this.lastObject.set(name, obj);
      }
    }
    throw new ApiError(`update ipblocks/${name}: gave up after repeated conflicts`, 409, false);
  }
}
