/** A node for the service proxy's packet tests: a node namespace with routed pods (veth, /32 and
 * /128 routes) and an external client on an uplink link, each running svc-pod.js. Named
 * namespaces `nfkp-<random>-…`, always removed again; the host's namespace is never touched.
 *
 *   client  198.18.100.2 / 2001:db8:100::2  --uplink--  node 198.18.100.1 / 2001:db8:100::1
 *   pod i   198.18.1.(10+i) / 2001:db8:1::(10+i), pod CIDRs 198.18.1.0/24, 2001:db8:1::/64 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { SvcOutcome, SvcProbe } from './svc-pod';

export const NODE_V4 = '198.18.100.1';
export const NODE_V6 = '2001:db8:100::1';
export const CLIENT_V4 = '198.18.100.2';
export const CLIENT_V6 = '2001:db8:100::2';
export const POD_CIDRS = ['198.18.1.0/24', '2001:db8:1::/64'];
export const podV4 = (i: number) => `198.18.1.${10 + i}`;
export const podV6 = (i: number) => `2001:db8:1::${(10 + i).toString(16)}`;

export interface Host {
  name: string;
  nsPath: string;
  probe(p: Omit<SvcProbe, 'id' | 'timeoutMs'> & { timeoutMs?: number }): Promise<SvcOutcome>;
}

/** `count` probes one after another; the replies (`name source`) or errors (`error CODE`), in order. */
export async function probes(from: Host, host: string, port: number, protocol: 'tcp' | 'udp', count: number, timeoutMs = 2000): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const o = await from.probe({ host, port, protocol, timeoutMs });
    out.push('reply' in o ? o.reply : `error ${o.error}`);
  }
  return out;
}

export interface ServiceNet {
  nodeNsPath: string;
  client: Host;
  pods: Host[];
  /** A probe from the node itself (host-originated traffic). */
  node: Host;
  run(args: string[]): string;
  close(): void;
}

function firstLine(err: unknown): string {
  const e = err as { stderr?: Buffer | string; message?: string };
  return String(e.stderr || e.message || err).trim().split('\n')[0];
}

export async function createServiceNet(podCount: number, ports: { tcp: number[]; udp: number[] }): Promise<ServiceNet> {
  const prefix = `nfkp-${randomBytes(3).toString('hex')}`;
  const created: string[] = [];
  const children: ChildProcess[] = [];
  const nsPath = (ns: string) => `/var/run/netns/${ns}`;
  const ip = (args: string[]) => {
    try {
      execFileSync('ip', args, { stdio: 'pipe' });
    } catch (err) {
      throw new Error(`ip ${args.join(' ')}: ${firstLine(err)}`);
    }
  };
  const sysctl = (ns: string, settings: string[]) => execFileSync('nsenter', [`--net=${nsPath(ns)}`, 'sysctl', '-q', '-w', ...settings], { stdio: 'pipe' });
  const addNetns = (ns: string) => {
    ip(['netns', 'add', ns]);
    created.push(ns);
    ip(['-n', ns, 'link', 'set', 'lo', 'up']);
    sysctl(ns, ['net.ipv6.conf.all.accept_dad=0', 'net.ipv6.conf.default.accept_dad=0']);
  };
  const close = () => {
    for (const c of children) c.kill('SIGKILL');
    for (const ns of created.reverse()) {
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {
        // Already gone.
      }
    }
    created.length = 0;
    process.removeListener('exit', close);
  };
  process.once('exit', close);
  const script = join(__dirname, 'svc-pod.js');
  const start = async (name: string, ns: string, serve: boolean): Promise<Host> => {
    const args = [`--net=${nsPath(ns)}`, process.execPath, script, '--name', name];
    if (serve) args.push('--tcp', ports.tcp.join(','), '--udp', ports.udp.join(','));
    const child = spawn('nsenter', args, { stdio: ['pipe', 'pipe', 'inherit'] });
    children.push(child);
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
  };
  try {
    const nodeNs = `${prefix}-node`;
    addNetns(nodeNs);
    sysctl(nodeNs, ['net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1', 'net.ipv4.conf.all.rp_filter=0', 'net.ipv4.icmp_ratelimit=0', 'net.ipv6.icmp.ratelimit=0']);
    const clientNs = `${prefix}-client`;
    addNetns(clientNs);
    ip(['-n', nodeNs, 'link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', clientNs]);
    ip(['-n', nodeNs, 'addr', 'add', `${NODE_V4}/24`, 'dev', 'uplink']);
    ip(['-n', nodeNs, 'addr', 'add', `${NODE_V6}/64`, 'dev', 'uplink', 'nodad']);
    ip(['-n', nodeNs, 'link', 'set', 'uplink', 'up']);
    ip(['-n', clientNs, 'addr', 'add', `${CLIENT_V4}/24`, 'dev', 'eth0']);
    ip(['-n', clientNs, 'addr', 'add', `${CLIENT_V6}/64`, 'dev', 'eth0', 'nodad']);
    ip(['-n', clientNs, 'link', 'set', 'eth0', 'up']);
    ip(['-n', clientNs, 'route', 'add', 'default', 'via', NODE_V4]);
    // The node's own default route goes out the uplink, as a real node's does: service addresses
    // are routable (to nowhere) before the proxy translates them.
    ip(['-n', nodeNs, 'route', 'add', 'default', 'via', CLIENT_V4]);
    ip(['-n', nodeNs, '-6', 'route', 'add', 'default', 'via', CLIENT_V6]);
    ip(['-n', clientNs, '-6', 'route', 'add', 'default', 'via', NODE_V6]);
    const podNames: string[] = [];
    for (let i = 0; i < podCount; i++) {
      const ns = `${prefix}-pod${i}`;
      addNetns(ns);
      podNames.push(ns);
      const hostIf = `pod${i}`;
      ip(['-n', nodeNs, 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', ns]);
      ip(['-n', ns, 'addr', 'add', `${podV4(i)}/32`, 'dev', 'eth0']);
      ip(['-n', ns, 'addr', 'add', `${podV6(i)}/128`, 'dev', 'eth0', 'nodad']);
      ip(['-n', ns, 'link', 'set', 'eth0', 'up']);
      ip(['-n', ns, 'route', 'add', `${NODE_V4}/32`, 'dev', 'eth0', 'scope', 'link']);
      ip(['-n', ns, 'route', 'add', 'default', 'via', NODE_V4, 'dev', 'eth0']);
      ip(['-n', ns, '-6', 'route', 'add', 'default', 'via', 'fe80::1', 'dev', 'eth0']);
      ip(['-n', nodeNs, 'link', 'set', hostIf, 'up']);
      ip(['-n', nodeNs, 'addr', 'add', 'fe80::1/64', 'dev', hostIf, 'nodad']);
      ip(['-n', nodeNs, 'route', 'add', `${podV4(i)}/32`, 'dev', hostIf, 'src', NODE_V4]);
      ip(['-n', nodeNs, '-6', 'route', 'add', `${podV6(i)}/128`, 'dev', hostIf, 'src', NODE_V6]);
    }
    const client = await start('client', clientNs, false);
    const pods = await Promise.all(podNames.map((ns, i) => start(`pod${i}`, ns, true)));
    const node = await start('node', nodeNs, false);
    return {
      nodeNsPath: nsPath(nodeNs),
      client,
      pods,
      node,
      run: (args) => execFileSync('nsenter', [`--net=${nsPath(nodeNs)}`, ...args], { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] }),
      close,
    };
  } catch (err) {
    close();
    throw err;
  }
}
