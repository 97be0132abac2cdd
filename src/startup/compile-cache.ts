/** Keeps V8's compiled code of nfkube's CommonJS modules (its own and its dependencies') between
 * runs, so a start after the first skips most of the parsing and compiling.
 *
 * Node >= 22.1 has this built in (module.enableCompileCache): it is used where present. On older
 * Node a hook on Module.prototype._compile compiles each module as a vm.Script with V8's cached
 * data. The cache is one file per Node version, architecture and V8 flags, read once at start;
 * an entry is used only for the same file as it was: the same inode, size and change time (a
 * change time no program sets: package managers give files fixed modification times, never
 * their own change time), and V8 checks its own version and flags on top. Hashing the sources
 * instead cost as much as the cache saved. At exit (and ten seconds after start, for the agent
 * that runs for days) the file is rewritten when a module was missing or rejected, from the
 * scripts as they are then: with the functions compiled while running, not only at load.
 *
 * The cache must never be a way into the process nor a reason for it to fail: the directory is
 * used only if it is ours (owned by this user, not writable by group or others, not a symlink);
 * a file that does not decode is ignored and replaced; any failure of the hook falls back to
 * Node's own compile for that module; writing is best effort (write then rename). */
import { closeSync, constants, fstatSync, lstatSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import vm from 'node:vm';

/** How the cache ended up: Node's own, this module's hook, or none (and why). */
export type CompileCacheState = { mode: 'node'; dir: string } | { mode: 'hook'; dir: string; file: string } | { mode: 'off'; reason: string };

/** Where the cache lives: NFKUBE_COMPILE_CACHE (a directory, or `off`), else systemd's
 * CacheDirectory= (CACHE_DIRECTORY; its first entry), else NODE_COMPILE_CACHE, else a
 * per-user directory under the temporary directory (in the DaemonSet, its /tmp emptyDir, which
 * outlives container restarts). */
export function compileCacheDir(env: NodeJS.ProcessEnv = process.env): string | undefined {
  const own = env.NFKUBE_COMPILE_CACHE;
  if (own === 'off' || own === '0') return undefined;
  if (own) return own;
  if (env.CACHE_DIRECTORY) return join(env.CACHE_DIRECTORY.split(':')[0], 'compile-cache');
  if (env.NODE_COMPILE_CACHE) return env.NODE_COMPILE_CACHE;
  const uid = typeof process.getuid === 'function' ? process.getuid() : 0;
  return join(tmpdir(), `nfkube-compile-cache-${uid}`);
}

/** Creates dir (mode 0700) when missing; undefined when it is ours to use, else why not. */
export function unsafeDirReason(dir: string): string | undefined {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = lstatSync(dir);
    if (!st.isDirectory()) return `${dir} is not a directory`;
    const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid;
    if (st.uid !== uid) return `${dir} belongs to uid ${st.uid}, not ${uid}`;
    if (st.mode & 0o022) return `${dir} is writable by group or others`;
    return undefined;
  } catch (err) {
    return `${dir}: ${(err as Error).message}`;
  }
}

const MAGIC = Buffer.from('NFKCC\x00\x02\x00', 'latin1');
/** An entry's stamp: the file's inode, size and change time (ns), 8 bytes each. */
const STAMP_BYTES = 24;

/** The stamp of the file a module was read from; undefined when it cannot be read. */
export function fileStamp(filename: string): Buffer | undefined {
  const st = statSync(filename, { bigint: true, throwIfNoEntry: false });
  if (!st) return undefined;
  const stamp = Buffer.alloc(STAMP_BYTES);
  stamp.writeBigUInt64LE(BigInt.asUintN(64, st.ino), 0);
  stamp.writeBigUInt64LE(BigInt.asUintN(64, st.size), 8);
  stamp.writeBigUInt64LE(BigInt.asUintN(64, st.ctimeNs), 16);
  return stamp;
}

interface Entry {
  stamp: Buffer;
  data: Buffer;
}

/** The cache file's entries; an empty map for anything that does not decode whole. */
export function decodeCacheFile(buf: Buffer): Map<string, Entry> {
  const out = new Map<string, Entry>();
  if (buf.length < MAGIC.length + 4 || !buf.subarray(0, MAGIC.length).equals(MAGIC)) return out;
  let o = MAGIC.length;
  const count = buf.readUInt32LE(o);
  o += 4;
  for (let i = 0; i < count; i++) {
    if (o + 4 > buf.length) return new Map();
    const nameLen = buf.readUInt32LE(o);
    o += 4;
    if (o + nameLen + STAMP_BYTES + 4 > buf.length) return new Map();
    const name = buf.toString('utf8', o, o + nameLen);
    o += nameLen;
    const stamp = buf.subarray(o, o + STAMP_BYTES);
    o += STAMP_BYTES;
    const dataLen = buf.readUInt32LE(o);
    o += 4;
    if (o + dataLen > buf.length) return new Map();
    out.set(name, { stamp, data: buf.subarray(o, o + dataLen) });
    o += dataLen;
  }
  return o === buf.length ? out : new Map();
}

export function encodeCacheFile(entries: Iterable<[string, Entry]>): Buffer {
  const parts: Buffer[] = [MAGIC, Buffer.alloc(4)];
  let count = 0;
  for (const [name, e] of entries) {
    const nameBuf = Buffer.from(name, 'utf8');
    const head = Buffer.alloc(4);
    head.writeUInt32LE(nameBuf.length);
    const len = Buffer.alloc(4);
    len.writeUInt32LE(e.data.length);
    parts.push(head, nameBuf, e.stamp, len, e.data);
    count++;
  }
  parts[1].writeUInt32LE(count);
  return Buffer.concat(parts);
}

/** The cache file's name: V8 rejects data made by another version or with other flags, so each
 * combination gets its own file instead of rewriting one back and forth. */
export function cacheFileName(): string {
  return `nfkube-${process.version}-${process.arch}-${fnv1a([process.execArgv.join(' '), process.env.NODE_OPTIONS ?? ''].join('\n'))}.v8cache`;
}

/** 32-bit FNV-1a of a string's UTF-16 code units, as hex: a file name, not a check. */
function fnv1a(text: string): string {
  let h = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193) >>> 0;
  return h.toString(16).padStart(8, '0');
}

export interface CompileStats {
  /** Modules compiled from cached data. */
  hits: number;
  /** Modules without an entry (or whose file changed). */
  misses: number;
  /** Entries V8 refused. */
  rejected: number;
  /** Modules left to Node's own compile (ES module syntax, dynamic import). */
  passed: number;
}

type CompiledWrapper = (exports: unknown, require: NodeJS.Require, module: Module, filename: string, dirname: string) => unknown;

/** The compiled scripts of one process, with what the cache file held at start. */
export class CodeCache {
  readonly stats: CompileStats = { hits: 0, misses: 0, rejected: 0, passed: 0 };
  private readonly entries: Map<string, Entry>;
  private readonly scripts = new Map<string, { script: vm.Script; stamp: Buffer }>();
  private dirty = false;

  constructor(readonly file: string) {
    this.entries = readOwnFile(file);
  }

  /** The module wrapper compiled for filename, from cached data when it has a matching entry;
   * undefined when Node should compile it (it does not compile as a CommonJS script here). */
  compile(content: string, filename: string): CompiledWrapper | undefined {
    // V8 loses the dynamic-import callback of scripts built from cached data (Node 20), so a
    // module that may import() is compiled by Node.
    if (content.includes('import(')) {
      this.stats.passed++;
      return undefined;
    }
    const stamp = fileStamp(filename);
    if (!stamp) {
      this.stats.passed++;
      return undefined;
    }
    const entry = this.entries.get(filename);
    const cachedData = entry?.stamp.equals(stamp) ? entry.data : undefined;
    let script: vm.Script;
    try {
      script = new vm.Script(Module.wrap(content), { filename, cachedData });
    } catch {
      // ES module syntax, a syntax error: Node's loader reports or handles it as it always does.
      this.stats.passed++;
      return undefined;
    }
    if (cachedData && !script.cachedDataRejected) this.stats.hits++;
    else {
      if (cachedData) this.stats.rejected++;
      else this.stats.misses++;
      this.dirty = true;
    }
    this.scripts.set(filename, { script, stamp });
    return script.runInThisContext({ displayErrors: true }) as CompiledWrapper;
  }

  /** Rewrites the file when a module had no usable entry: entries of the modules this process
   * compiled, from their code as it is now, plus the file's other entries (modules another
   * command loads). Best effort. */
  save(): boolean {
    if (!this.dirty) return false;
    this.dirty = false;
    const next = new Map(this.entries);
    for (const [name, { script, stamp }] of this.scripts) {
      try {
        next.set(name, { stamp, data: script.createCachedData() });
      } catch {
        next.delete(name);
      }
    }
    const tmp = `${this.file}.${process.pid}.tmp`;
    try {
      // A new file (a stale one from a process of the same pid removed first): an existing
      // name, a FIFO or a symlink, is never opened, so the save at exit cannot block it.
      rmSync(tmp, { force: true });
      writeFileSync(tmp, encodeCacheFile(next), { mode: 0o600, flag: 'wx' });
      renameSync(tmp, this.file);
      for (const [name, e] of next) this.entries.set(name, e);
      return true;
    } catch {
      try {
        unlinkSync(tmp);
      } catch {
        // Nothing was written.
      }
      return false;
    }
  }
}

/** The file's entries if it is a regular file of ours; none otherwise. */
function readOwnFile(file: string): Map<string, Entry> {
  let fd: number | undefined;
  try {
    // Non-blocking: a FIFO in its place would otherwise hang the start until something wrote to it.
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
    const st = fstatSync(fd);
    const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid;
    if (!st.isFile() || st.uid !== uid || st.mode & 0o022) return new Map();
    return decodeCacheFile(readFileSync(fd));
  } catch {
    return new Map();
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** A module's require, as Node makes it, from public parts of Module. */
function makeRequire(mod: Module): NodeJS.Require {
  const M = Module as unknown as {
    _resolveFilename(request: string, parent: Module, isMain: boolean, options?: { paths?: string[] }): string;
    _resolveLookupPaths(request: string, parent: Module): string[] | null;
    _extensions: NodeJS.RequireExtensions;
    _cache: NodeJS.Dict<NodeJS.Module>;
  };
  const require = ((id: string) => mod.require(id)) as NodeJS.Require;
  const resolve = ((request: string, options?: { paths?: string[] }) => M._resolveFilename(request, mod, false, options)) as NodeJS.RequireResolve;
  resolve.paths = (request: string) => M._resolveLookupPaths(request, mod);
  require.resolve = resolve;
  require.main = process.mainModule;
  require.extensions = M._extensions;
  require.cache = M._cache;
  return require;
}

/** When the agent has started and its first sync is done: the scripts then hold the functions
 * a start runs. */
const SAVE_AFTER_MS = 10_000;

let state: CompileCacheState | undefined;
let hooked: CodeCache | undefined;

/** What the hook did so far in this process (undefined without the hook). */
export function compileCacheStats(): CompileStats | undefined {
  return hooked && { ...hooked.stats };
}

/** Turns the compile cache on for the rest of this process, once: Node's own where it has one,
 * else the hook. Never throws. */
export function enableCompileCache(env: NodeJS.ProcessEnv = process.env): CompileCacheState {
  if (state) return state;
  const dir = compileCacheDir(env);
  if (!dir) return (state = { mode: 'off', reason: 'NFKUBE_COMPILE_CACHE=off' });
  const unsafe = unsafeDirReason(dir);
  if (unsafe) return (state = { mode: 'off', reason: unsafe });
  const builtin = (Module as unknown as { enableCompileCache?: (dir: string) => unknown }).enableCompileCache;
  if (typeof builtin === 'function') {
    try {
      builtin(dir);
      return (state = { mode: 'node', dir });
    } catch (err) {
      return (state = { mode: 'off', reason: (err as Error).message });
    }
  }
  if (process.execArgv.some((a) => a.startsWith('--experimental-policy'))) return (state = { mode: 'off', reason: 'a policy manifest checks every module Node loads' });
  // Node registers a module's source map while compiling it, which the hook's compile skips.
  if ((process as { sourceMapsEnabled?: boolean }).sourceMapsEnabled) return (state = { mode: 'off', reason: 'source maps are enabled' });
  const cache = (hooked = new CodeCache(join(dir, cacheFileName())));
  const proto = Module.prototype as unknown as { _compile(this: Module, content: string, filename: string, format?: string): unknown };
  const nodeCompile = proto._compile;
  proto._compile = function (this: Module, content: string, filename: string, format?: string) {
    let wrapper: CompiledWrapper | undefined;
    if (format !== 'module' && !content.startsWith('#!')) {
      try {
        wrapper = cache.compile(content, filename);
      } catch {
        wrapper = undefined;
      }
    }
    // eslint-disable-next-line prefer-rest-params
    if (!wrapper) return nodeCompile.apply(this, arguments as unknown as [string, string, string?]);
    return wrapper.call(this.exports, this.exports, makeRequire(this), this, filename, dirname(filename));
  };
  process.once('exit', () => cache.save());
  setTimeout(() => cache.save(), SAVE_AFTER_MS).unref();
  return (state = { mode: 'hook', dir, file: cache.file });
}
