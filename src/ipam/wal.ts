/** The node-local write-ahead record of allocations: JSON lines appended and fdatasync'd before an
 * ADD is answered (or a DEL's address is reused), so a crashed agent never hands an address out
 * twice. Concurrent appends share one write and one sync (group commit). On open the file is
 * replayed and rewritten compacted (temp file, fsync, rename, fsync of the directory). A torn last
 * line (a crash mid-write) is dropped; a damaged line elsewhere stops the agent with its line
 * number, since guessing could hand out a live address. */
import { closeSync, existsSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, writeSync } from 'node:fs';
import { open, FileHandle } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Allocation } from './state';

export type WalRecord = { op: 'add'; key: string; alloc: Allocation } | { op: 'del'; key: string };

export class WalError extends Error {}

/** Reads a record file into the live allocations (key -> allocation). */
export function replay(path: string): Map<string, Allocation> {
  const live = new Map<string, Allocation>();
  if (!existsSync(path)) return live;
  const lines = readFileSync(path, 'utf8').split('\n');
  const last = lines.length - 1;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    if (line === '') continue;
    let rec: WalRecord;
    try {
      rec = JSON.parse(line) as WalRecord;
      if ((rec.op !== 'add' && rec.op !== 'del') || typeof rec.key !== 'string') throw new Error('not a record');
    } catch {
      // Only the final line can be torn by a crash; it was never acknowledged.
      if (i === last) break;
      throw new WalError(`${path}:${i + 1}: damaged allocation record; refusing to guess which addresses are in use`);
    }
    if (rec.op === 'add') live.set(rec.key, rec.alloc);
    else live.delete(rec.key);
  }
  return live;
}

function writeDurably(path: string, text: string): void {
  const tmp = `${path}.tmp`;
  const fd = openSync(tmp, 'w', 0o600);
  try {
    writeSync(fd, text);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(tmp, path);
  const dirFd = openSync(dirname(path), 'r');
  try {
    fsyncSync(dirFd);
  } finally {
    closeSync(dirFd);
  }
}

export class Wal {
  private pending: { text: string; done: Array<{ resolve: () => void; reject: (e: Error) => void }> } = { text: '', done: [] };
  private flushing?: Promise<void>;
  private dead = false;
  private records = 0;

  private constructor(
    readonly path: string,
    private file: FileHandle,
    private liveCount: () => number,
  ) {}

  /** Replays and compacts the record at path; returns the live allocations and the open log. */
  static async open(path: string, liveCount?: () => number): Promise<{ wal: Wal; live: Map<string, Allocation> }> {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    const live = replay(path);
    writeDurably(path, [...live].map(([key, alloc]) => JSON.stringify({ op: 'add', key, alloc }) + '\n').join(''));
    const file = await open(path, 'a', 0o600);
    const wal = new Wal(path, file, liveCount ?? (() => live.size));
    wal.records = live.size;
    return { wal, live };
  }

  /** Appends records; resolves once they are on disk. */
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
      try {
        if (this.dead) throw new WalError(`${this.path} is closed`);
        await this.file.write(batch.text);
        await this.file.datasync();
        for (const d of batch.done) d.resolve();
      } catch (err) {
        for (const d of batch.done) d.reject(err as Error);
      }
    }
    this.flushing = undefined;
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
      writeDurably(this.path, [...live].map(([key, alloc]) => JSON.stringify({ op: 'add', key, alloc }) + '\n').join(''));
      await this.file.close();
      this.file = await open(this.path, 'a', 0o600);
      this.records = live.size;
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
