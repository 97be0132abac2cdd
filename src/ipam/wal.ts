/** The node-local write-ahead record of allocations: JSON lines appended and fdatasync'd before an
 * ADD is answered (or a DEL's address is reused), so a crashed agent never hands an address out
 * twice. Concurrent appends share one write and one sync (group commit). A write that fails or is
 * cut short (a full file system) is cut back off the file (ftruncate to the last synced length)
 * before its callers hear of the failure, so nothing after it lands behind a torn line; while the
 * cut fails the record is `torn` and refuses appends until a later cut succeeds. On open the file
 * is replayed and rewritten compacted (a new temporary file, fsync, rename, fsync of the
 * directory), or, when that cannot be written, cut back to its last whole line. A torn last line
 * (a crash mid-write) is dropped; a damaged line elsewhere stops the agent with its line number,
 * since guessing could hand out a live address. */
import { closeSync, constants, fsyncSync, ftruncateSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { open, FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import { unsafeDirReason } from '../startup/compile-cache';
import { Allocation, allocationProblem } from './state';

export type WalRecord = { op: 'add'; key: string; alloc: Allocation } | { op: 'del'; key: string };

export class WalError extends Error {
  constructor(
    message: string,
    /** False when the failed records are known to be absent from the file. */
    readonly maybeWritten = false,
  ) {
    super(message);
  }
}

/** Opens state files: never through a symlink another user planted, never someone else's file. */
const APPEND_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;
const NEW_FILE_FLAGS = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** The live allocations of a record file, and the byte length of its whole lines. */
export interface Replayed {
  live: Map<string, Allocation>;
  wholeBytes: number;
}

/** Reads a record file into the live allocations (key -> allocation). */
export function replay(path: string): Map<string, Allocation> {
  return replayFile(path).live;
}

function recordProblem(rec: unknown): string | undefined {
  if (typeof rec !== 'object' || rec === null) return 'not a record';
  const r = rec as Record<string, unknown>;
  if (r.op !== 'add' && r.op !== 'del') return 'op is not add or del';
  if (typeof r.key !== 'string') return 'key is not a string';
  return r.op === 'add' ? allocationProblem(r.alloc) : undefined;
}

export function replayFile(path: string): Replayed {
  const live = new Map<string, Allocation>();
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { live, wholeBytes: 0 };
    throw err;
  }
  let bytes: Buffer;
  try {
    bytes = readFileSync(fd);
  } finally {
    closeSync(fd);
  }
  const wholeBytes = bytes.lastIndexOf(0x0a) + 1;
  const lines = bytes.toString('utf8').split('\n');
  const last = lines.length - 1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line === '') continue;
    let rec: WalRecord;
    try {
      rec = JSON.parse(line) as WalRecord;
    } catch {
      // Only the final line can be torn by a crash; it was never acknowledged.
      if (i === last) break;
      throw new WalError(`${path}:${i + 1}: damaged allocation record; refusing to guess which addresses are in use`);
    }
    const problem = recordProblem(rec);
    if (problem) throw new WalError(`${path}:${i + 1}: damaged allocation record (${problem}); refusing to guess which addresses are in use`);
    if (rec.op === 'add') live.set(rec.key, rec.alloc);
    else live.delete(rec.key);
  }
  return { live, wholeBytes };
}

function compacted(live: Map<string, Allocation>): string {
  return [...live].map(([key, alloc]) => JSON.stringify({ op: 'add', key, alloc }) + '\n').join('');
}

function writeAll(fd: number, text: string): void {
  const buf = Buffer.from(text);
  for (let off = 0; off < buf.length; ) off += writeSync(fd, buf, off);
}

function writeDurably(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  // A left-over (or planted) temporary name is removed, not followed: unlink never follows a link.
  try {
    unlinkSync(tmp);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  const fd = openSync(tmp, NEW_FILE_FLAGS, 0o600);
  try {
    writeAll(fd, text);
    fsyncSync(fd);
  } catch (err) {
    closeSync(fd);
    unlinkSync(tmp);
    throw err;
  }
  closeSync(fd);
  renameSync(tmp, path);
  const dirFd = openSync(dirname(path), 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

/** Cuts a record file back to its whole lines (in place: no space is needed). */
function cutTornTail(path: string, wholeBytes: number): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW);
  try {
    ftruncateSync(fd, wholeBytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

export class Wal {
  private pending: { text: string; done: Array<{ resolve: () => void; reject: (e: Error) => void }> } = { text: '', done: [] };
  private flushing?: Promise<void>;
  private dead = false;
  private records = 0;
  /** Bytes of the file known synced and whole: where a failed write is cut back to. */
  private synced: number;
  /** Set while the file may end in a torn write that could not be cut off. */
  private torn?: string;
  /** Why the last append failed; cleared by the next one that succeeds. */
  private failure?: string;

  private constructor(
    readonly path: string,
    private file: FileHandle,
    private liveCount: () => number,
    synced: number,
  ) {
    this.synced = synced;
  }

  /** Replays and compacts the record at path; returns the live allocations and the open log. */
  static async open(path: string, liveCount?: () => number, onRepair?: (reason: string) => void): Promise<{ wal: Wal; live: Map<string, Allocation> }> {
    // Another user's writable directory could hold a planted link or a replaced record.
    const unsafe = unsafeDirReason(dirname(path));
    if (unsafe) throw new WalError(`--ipam-state-dir: ${unsafe}; refusing to keep allocations there`);
    const { live, wholeBytes } = replayFile(path);
    const text = compacted(live);
    let synced = Buffer.byteLength(text);
    try {
      writeDurably(path, text);
    } catch (err) {
      // No room for a compacted copy (a full file system): keep the file, minus any torn tail.
      cutTornTail(path, wholeBytes);
      synced = wholeBytes;
      onRepair?.(`compacting ${path} failed (${(err as Error).message}); kept it as it is, cut to its last whole record`);
    }
    const file = await open(path, APPEND_FLAGS, 0o600);
    const wal = new Wal(path, file, liveCount ?? (() => live.size), synced);
    wal.records = live.size;
    return { wal, live };
  }

  /** Why records cannot be written now (undefined while they can). */
  get problem(): string | undefined {
    return this.torn ?? this.failure;
  }

  /** Appends records; resolves once they are on disk. A WalError whose maybeWritten is false
   * means none of them is in the file. */
  append(records: WalRecord[]): Promise<void> {
    if (this.dead) return Promise.reject(new WalError(`${this.path} is closed`));
    return new Promise<void>((resolve, reject) => {
      this.pending.text += records.map((r) => JSON.stringify(r) + '\n').join('');
      this.pending.done.push({ resolve, reject });
      this.records += records.length;
      this.flushing ??= this.flushLoop();
    });
  }

  private async flushLoop(): Promise<void> {
    while (this.pending.done.length > 0) {
      const batch = this.pending;
      this.pending = { text: '', done: [] };
      let err: WalError | undefined;
      try {
        if (this.dead) throw new WalError(`${this.path} is closed`);
        if (this.torn) await this.cutBack();
        err = await this.writeBatch(Buffer.from(batch.text));
      } catch (e) {
        err = e instanceof WalError ? e : new WalError(`${this.path}: ${(e as Error).message}`, true);
      }
      if (err) for (const d of batch.done) d.reject(err);
      else for (const d of batch.done) d.resolve();
    }
    this.flushing = undefined;
  }

  /** Writes and syncs one batch; on failure cuts it back off and says whether that worked. */
  private async writeBatch(buf: Buffer): Promise<WalError | undefined> {
    try {
      const { bytesWritten } = await this.file.write(buf, 0, buf.length);
      if (bytesWritten !== buf.length) throw new Error(`short write: ${bytesWritten} of ${buf.length} bytes`);
      await this.file.datasync();
      this.synced += buf.length;
      this.failure = undefined;
      return undefined;
    } catch (e) {
      const reason = `recording to ${this.path} failed: ${(e as Error).message}`;
      this.failure = reason;
      this.torn = reason;
      try {
        await this.cutBack();
        return new WalError(`${reason}; nothing was recorded`, false);
      } catch {
        return new WalError(`${reason}; the record may hold part of it`, true);
      }
    }
  }

  private async cutBack(): Promise<void> {
    await this.file.truncate(this.synced);
    await this.file.datasync();
    this.torn = undefined;
  }

  /** True when the log holds many more records than live allocations (worth compacting). */
  get bloated(): boolean {
    return this.records > 1024 && this.records > 4 * this.liveCount();
  }

  /** Rewrites the log as just the live allocations (the caller's current map: records still
   * queued are appended after it, and replaying them again is harmless). */
  async compact(live: Map<string, Allocation>): Promise<void> {
    while (this.flushing) await this.flushing;
    if (this.dead) return;
    this.flushing = (async () => {
      const text = compacted(live);
      writeDurably(this.path, text);
      await this.file.close();
      this.file = await open(this.path, APPEND_FLAGS, 0o600);
      this.records = live.size;
      this.synced = Buffer.byteLength(text);
      this.torn = undefined;
    })().finally(() => {
      this.flushing = this.pending.done.length > 0 ? this.flushLoop() : undefined;
    });
    await this.flushing;
  }

  /** Stops the log: later appends fail. Records already synced stay. */
  async close(): Promise<void> {
    this.dead = true;
    await this.flushing;
    await this.file.close().catch(() => undefined);
  }

  /** A crash, as far as the caller can tell: nothing more is written, nothing is awaited. */
  abandon(): void {
    this.dead = true;
    void this.file.close().catch(() => undefined);
  }
}
