/** The parts every service-proxy packet network is built from: named namespaces
 * (`nfkp-<random>-…`, always removed again), routed pods behind a node (veth, /32 and /128
 * routes, as most CNIs do), and svc-pod.js processes standing in for pods and clients. The host's
 * own namespace is never touched. */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Addrs, routedPodCommands } from '../helpers/routed-pod';
import type { SvcOutcome, SvcProbe } from './svc-pod';

export interface Host {
  name: string;
  nsPath: string;
  probe(p: Omit<SvcProbe, 'id' | 'timeoutMs'> & { timeoutMs?: number }): Promise<SvcOutcome>;
}

export interface ServePorts {
  tcp: number[];
  udp: number[];
}

function firstLine(err: unknown): string {
  const e = err as { stderr?: Buffer | string; message?: string };
  return String(e.stderr || e.message || err).trim().split('\n')[0];
}

export const nsPath = (ns: string) => `/var/run/netns/${ns}`;

/** Sysctls of a node: it forwards, does not drop asymmetric replies, and sends every ICMP error
 * a reject asks for (no rate limit). */
export const NODE_SYSCTLS = ['net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1', 'net.ipv4.conf.all.rp_filter=0', 'net.ipv4.icmp_ratelimit=0', 'net.ipv6.icmp.ratelimit=0'];

export class NetnsBuilder {
  readonly prefix = `nfkp-${randomBytes(3).toString('hex')}`;
  private readonly created: string[] = [];
  private readonly children: ChildProcess[] = [];
  private readonly onExit = () => this.close();

  constructor() {
    process.once('exit', this.onExit);
  }

  ip(args: string[]): void {
    try {
      execFileSync('ip', args, { stdio: 'pipe' });
    } catch (err) {
      throw new Error(`ip ${args.join(' ')}: ${firstLine(err)}`);
    }
  }

  sysctl(ns: string, settings: string[]): void {
    execFileSync('nsenter', [`--net=${nsPath(ns)}`, 'sysctl', '-q', '-w', ...settings], { stdio: 'pipe' });
  }

  /** A fresh namespace `<prefix>-<suffix>` with lo up and no duplicate address detection. */
  addNetns(suffix: string): string {
    const ns = `${this.prefix}-${suffix}`;
    this.ip(['netns', 'add', ns]);
    this.created.push(ns);
    this.ip(['-n', ns, 'link', 'set', 'lo', 'up']);
    this.sysctl(ns, ['net.ipv6.conf.all.accept_dad=0', 'net.ipv6.conf.default.accept_dad=0']);
    return ns;
  }

  /** A pod namespace routed from the node: its addresses on eth0, the node's end `hostIf` with
   * host routes to it (source: the node's addresses), default routes back via the node. */
  addRoutedPod(nodeNs: string, suffix: string, hostIf: string, addr: Addrs, nodeAddr: Addrs): string {
    const ns = this.addNetns(suffix);
    this.ip(['-n', nodeNs, 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
    for (const args of routedPodCommands(nodeNs, ns, hostIf, addr, nodeAddr)) this.ip(args);
    return ns;
  }

  /** Runs svc-pod.js as `name` in namespace `ns`, serving `ports` if given. */
  async start(name: string, ns: string, ports?: ServePorts): Promise<Host> {
    const args = [`--net=${nsPath(ns)}`, process.execPath, join(__dirname, 'svc-pod.js'), '--name', name];
    if (ports) args.push('--tcp', ports.tcp.join(','), '--udp', ports.udp.join(','));
    const child = spawn('nsenter', args, { stdio: ['pipe', 'pipe', 'inherit'] });
    this.children.push(child);
    const waiting = new Map<number, (o: SvcOutcome) => void>();
    let ready!: () => void;
    const readyP = new Promise<void>((r) => (ready = r));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const o = JSON.parse(line) as SvcOutcome;
      if (o.id === 0) return ready();
      waiting.get(o.id)?.(o);
      waiting.delete(o.id);
    });
    await readyP;
    let next = 1;
    return {
      name,
      nsPath: nsPath(ns),
      probe(p) {
        const id = next++;
        return new Promise((resolve) => {
          waiting.set(id, resolve);
          child.stdin!.write(JSON.stringify({ timeoutMs: 2000, ...p, id }) + '\n');
        });
      },
    };
  }

  /** Runs a command inside namespace `ns`; returns stdout. */
  run(ns: string, args: string[], input?: string): string {
    return execFileSync('nsenter', [`--net=${nsPath(ns)}`, ...args], { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
  }

  /** Kills the processes and removes the namespaces, newest first. */
  close(): void {
    for (const c of this.children.splice(0)) c.kill('SIGKILL');
    for (const ns of this.created.reverse()) {
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {
        // Already gone.
      }
    }
    this.created.length = 0;
    process.removeListener('exit', this.onExit);
  }
}
