/** What every part of one node's IPAM service shares: the API, the node's state, its log and
 * metrics, its clock, and whether it still runs.
 *
 * Invariant: once the service stopped or crashed, no part writes to the API or the record, or
 * answers a request (`alive()` throws at each step that would). */
import type { Logger } from 'pino';
import { CNI_ERR } from '../cni/protocol';
import type { IpamApi } from './api';
import type { IpamMetrics } from './metrics';
import type { NodeState } from './state';

/** A request that failed with a CNI error code. */
export class IpamError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Whether the service still runs: a stop or a crash ends it for every part at once. */
export class Liveness {
  private dead = false;

  get stopped(): boolean {
    return this.dead;
  }

  stop(): void {
    this.dead = true;
  }

  /** Throws when the service stopped: called before each step that writes or answers. */
  alive(): void {
    if (this.dead) throw new IpamError(CNI_ERR.tryAgainLater, 'the ipam agent stopped');
  }
}

export interface IpamContext {
  readonly api: IpamApi;
  readonly nodeName: string;
  readonly state: NodeState;
  readonly log: Logger;
  readonly metrics?: IpamMetrics;
  readonly now: () => number;
  readonly life: Liveness;
}
