/** `nfkube agent` as the DaemonSet runs it, as a process inside a simulated node's namespace,
 * with a kubeconfig holding the DaemonSet ServiceAccount's token; its pino lines are kept for
 * the test to wait on and to check. */
import { ChildProcess, spawn } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { waitFor } from './api';
import { REPO_ROOT } from './control-plane';

export type LogLine = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export class AgentProcess {
  readonly lines: LogLine[] = [];
  private readonly exited: Promise<number | null>;

  private constructor(
    readonly child: ChildProcess,
    readonly nodeName: string,
  ) {
    createInterface({ input: child.stderr! }).on('line', (line) => {
      try {
        this.lines.push(JSON.parse(line) as LogLine);
      } catch {
        this.lines.push({ level: 50, msg: line });
      }
    });
    this.exited = new Promise((res) => child.once('exit', (code) => res(code)));
    process.once('exit', () => child.kill('SIGKILL'));
  }

  /** Debug lines name every changed object in a commit; the bench asks for info. */
  static start(netnsPath: string, nodeName: string, kubeconfig: string, args: string[] = [], logLevel = 'debug'): AgentProcess {
    const child = spawn('nsenter', [`--net=${netnsPath}`, process.execPath, join(REPO_ROOT, 'bin', 'nfkube'), 'agent', '--kubeconfig', kubeconfig,
      '--node-name', nodeName, '--metrics-addr', '127.0.0.1:9476', '--log-level', logLevel, ...args], { cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe'] });
    return new AgentProcess(child, nodeName);
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Lines at warn (40) or above, as `msg` texts. */
  problems(since = 0): string[] {
    return this.lines.slice(since).filter((l) => l.level >= 40).map((l) => String(l.msg));
  }

  /** Waits for a line matching `match`, from line `since` on. */
  async waitForLine(what: string, match: (l: LogLine) => boolean, since = 0, deadlineMs = 60_000): Promise<LogLine> {
    return waitFor(what, () => {
      if (!this.running) throw new Error(`agent on ${this.nodeName} exited: ${this.problems().slice(-5).join(' | ')}`);
      return this.lines.slice(since).find(match);
    }, deadlineMs, 50);
  }

  /** Its first full commit: the line `sync` logs once the initial state is in the kernel. */
  waitForFirstSync(): Promise<LogLine> {
    return this.waitForLine(`the first sync of the agent on ${this.nodeName}`, (l) => l.msg === 'sync committed' || /already matches/.test(String(l.msg)), 0, 120_000);
  }

  async stop(): Promise<number | null> {
    if (this.running) this.child.kill('SIGTERM');
    const killer = setTimeout(() => this.child.kill('SIGKILL'), 10_000);
    const code = await this.exited;
    clearTimeout(killer);
    return code;
  }
}
