/** A small tmpfs for IPAM's state directory, mounted in a private mount namespace that a holder
 * process keeps alive (the machine's own mounts are never touched; the mount goes when the holder
 * is killed), and agents run inside that namespace (nsenter) as their own processes. The test
 * reaches the files through /proc/<holder>/root. Needs root, unshare and nsenter. */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const CRASH_AGENT = resolve(__dirname, 'crash-agent.js');
const FILLER_BYTES = 4096;

export function canMountTmpfs(): boolean {
  return typeof process.getuid === 'function' && process.getuid() === 0;
}

/** Resolves with the first stdout line of a child; rejects when it exits first. */
export function firstLine(child: ChildProcess, what: string): Promise<string> {
  return new Promise((res, rej) => {
    let out = '';
    let err = '';
    child.stderr?.on('data', (c) => (err += c));
    child.stdout?.on('data', (c) => {
      out += c;
      const nl = out.indexOf('\n');
      if (nl >= 0) res(out.slice(0, nl));
    });
    child.once('exit', (code, signal) => rej(new Error(`${what} exited (${code ?? signal}) before it was ready: ${err.trim()}`)));
  });
}

export interface RunningAgent {
  proc: ChildProcess;
  port: number;
  /** SIGKILL, and wait until it is gone. */
  kill(): Promise<void>;
}

export class SmallTmpfs {
  private fillers = 0;

  private constructor(
    private readonly holder: ChildProcess,
    /** The mount point, as the namespace's processes see it. */
    readonly dir: string,
  ) {}

  static async mount(sizeKiB: number): Promise<SmallTmpfs> {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-ipam-tmpfs-'));
    const holder = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', `mount -t tmpfs -o size=${sizeKiB}k,mode=0700 nfkube-test "$0" && echo mounted && exec sleep 3600`, dir], { stdio: ['ignore', 'pipe', 'pipe'] });
    await firstLine(holder, 'the tmpfs holder');
    return new SmallTmpfs(holder, dir);
  }

  /** A path inside the tmpfs, as this (outside) process reaches it. */
  outside(name: string): string {
    return join(`/proc/${this.holder.pid}/root`, this.dir, name);
  }

  /** Fills the file system up with 4 KiB files, then frees `leavePages` of them. */
  fill(leavePages: number): void {
    for (;;) {
      try {
        writeFileSync(this.outside(`filler-${this.fillers}`), Buffer.alloc(FILLER_BYTES, 1));
        this.fillers++;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
        break;
      }
    }
    this.free(leavePages + 1); // the last, partial filler too
  }

  /** Frees n pages (removes n fillers; false when none is left). */
  free(n: number): boolean {
    for (let i = 0; i < n; i++) {
      const name = readdirSync(this.outside('')).find((f) => f.startsWith('filler-'));
      if (!name) return false;
      unlinkSync(this.outside(name));
    }
    return true;
  }

  /** Starts crash-agent.js inside the namespace with its state directory on the tmpfs. */
  async startAgent(kubeconfig: string, nodeName: string, socketPath: string): Promise<RunningAgent> {
    const proc = spawn('nsenter', [`--mount=/proc/${this.holder.pid}/ns/mnt`, '--', process.execPath, CRASH_AGENT, kubeconfig, nodeName, this.dir, socketPath], { stdio: ['ignore', 'pipe', 'pipe'] });
    const { port } = JSON.parse(await firstLine(proc, 'the ipam agent')) as { port: number };
    const gone = new Promise<void>((r) => proc.once('exit', () => r()));
    return {
      proc,
      port,
      async kill() {
        proc.kill('SIGKILL');
        await gone;
      },
    };
  }

  async unmount(): Promise<void> {
    const gone = new Promise<void>((r) => this.holder.once('exit', () => r()));
    this.holder.kill('SIGKILL');
    await gone;
    rmdirSync(this.dir);
  }
}
