/** The node's allocations kept durable: NodeState.allocations mirrored in the write-ahead record
 * (<stateDir>/<node>.wal), every change on disk before anyone hears of it.
 *
 * Invariants: an allocation is on disk before ADD answers, and one whose line is known not
 * written is not held; a released handle leaves the map only once its release is on disk (so its
 * addresses are reused only then); a failed write leaves the map as it was before the call. */
import { CNI_ERR } from '../cni/protocol';
import { IpamContext, IpamError } from './context';
import { Allocation } from './state';
import { Wal, WalError } from './wal';

/** Why an allocation was not recorded: the error for the request, and whether its line may be on
 * disk anyway (then a restart's replay decides; its addresses must not go to another pod). */
export interface RecordFailure {
  error: Error;
  maybeWritten: boolean;
}

/** A record that could not be written fails the request with an I/O error (CNI code 5). */
function recordingFailed(err: unknown): Error {
  return err instanceof WalError ? new IpamError(CNI_ERR.ioFailure, err.message) : (err as Error);
}

export class AllocationLedger {
  private wal?: Wal;

  constructor(
    private readonly ctx: IpamContext,
    readonly path: string,
  ) {}

  /** Why allocations cannot be recorded now, or undefined. */
  get problem(): string | undefined {
    return this.wal ? this.wal.problem : 'the allocation record is not open';
  }

  /** Replays the record into NodeState.allocations and opens it for appends. */
  async open(): Promise<void> {
    const { wal, live } = await Wal.open(this.path, () => this.ctx.state.allocations.size, (reason) => this.ctx.log.warn({ path: this.path }, reason));
    this.wal = wal;
    for (const [k, a] of live) this.ctx.state.allocations.set(k, a);
  }

  /** A start that failed after open: the record is closed and nothing replayed is held. */
  async discard(): Promise<void> {
    const wal = this.wal;
    this.wal = undefined;
    await wal?.close();
    this.ctx.state.allocations.clear();
  }

  /** Holds an allocation and records it; on failure it is no longer held. */
  async add(key: string, alloc: Allocation): Promise<RecordFailure | undefined> {
    this.ctx.state.allocations.set(key, alloc);
    try {
      await this.wal!.append([{ op: 'add', key, alloc }]);
      return undefined;
    } catch (err) {
      this.ctx.state.allocations.delete(key);
      return { error: recordingFailed(err), maybeWritten: !(err instanceof WalError) || err.maybeWritten };
    }
  }

  /** Records the release of a handle; its allocation, or undefined when none is held. On failure
   * the handle is held again and the error thrown. */
  async remove(key: string): Promise<Allocation | undefined> {
    const alloc = this.ctx.state.allocations.get(key);
    if (!alloc) return undefined;
    this.ctx.state.allocations.delete(key);
    try {
      await this.wal!.append([{ op: 'del', key }]);
    } catch (err) {
      this.ctx.state.allocations.set(key, alloc);
      throw recordingFailed(err);
    }
    return alloc;
  }

  /** Records, then holds, allocations found elsewhere (the API's) for handles the record lacks. */
  async hold(found: Map<string, Allocation>): Promise<void> {
    await this.wal!.append([...found].map(([key, alloc]) => ({ op: 'add' as const, key, alloc })));
    for (const [key, alloc] of found) this.ctx.state.allocations.set(key, alloc);
  }

  async compactIfBloated(): Promise<void> {
    if (this.wal?.bloated) await this.wal.compact(this.ctx.state.allocations);
  }

  async close(): Promise<void> {
    await this.wal?.close();
  }

  /** A crash: nothing more is written. */
  abandon(): void {
    this.wal?.abandon();
  }
}
