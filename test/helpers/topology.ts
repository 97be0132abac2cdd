/** Test-only pod networks: one "node" network namespace and one namespace per pod, wired either
 * routed (a veth per pod, /32 and /128 routes on the node, as most CNIs do) or bridged (every pod
 * on one Linux bridge inside the node, with br_netfilter handing bridged IP traffic to the inet
 * hooks, as kube-router's own CNI setup does). Built with `ip` in named namespaces
 * (`nfk-<random>-...`) and always removed again; the host's own namespace is never touched. */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { routedPodCommands } from './routed-pod';

const execFileAsync = promisify(execFile);

export type TopologyKind = 'routed' | 'bridged';

export interface PodPlacement {
  namespace: string;
  name: string;
}

export interface PodEndpoint extends PodPlacement {
  /** `namespace/name`, the key used in reachability matrices. */
  id: string;
  ipv4: string;
  ipv6: string;
  /** Path of the pod's network namespace, for `nsenter --net=`. */
  netnsPath: string;
}

export interface Topology {
  kind: TopologyKind;
  /** Path of the node's network namespace. */
  nodeNetnsPath: string;
  /** The node's own addresses: the source of node-to-pod traffic (kubelet probes). */
  nodeIPv4: string;
  nodeIPv6: string;
  pods: PodEndpoint[];
  /** Runs a command inside the node's network namespace; rejects with its stderr on failure. */
  runInNode(cmd: string, args: string[], opts?: { input?: string; cwd?: string }): Promise<string>;
  close(): void;
}

/** The conformance layout: Kubernetes namespaces x, y, z with pods a, b, c in each. */
export const CONFORMANCE_NAMESPACES = ['x', 'y', 'z'] as const;
export const CONFORMANCE_POD_NAMES = ['a', 'b', 'c'] as const;

export function conformancePods(): PodPlacement[] {
  return CONFORMANCE_NAMESPACES.flatMap((namespace) => CONFORMANCE_POD_NAMES.map((name) => ({ namespace, name })));
}

/** Pod addresses: the i-th pod gets 198.18.0.(10+i') and 2001:db8::(10+i') where i' groups the
 * pods of one namespace in a decade (x: .10-.12, y: .20-.22, z: .30-.32), so CIDRs in the
 * ipBlock cases are easy to read. */
export function podAddress(index: number): { ipv4: string; ipv6: string } {
  const host = 10 * (Math.floor(index / 3) + 1) + (index % 3);
  return { ipv4: `198.18.0.${host}`, ipv6: `2001:db8::${host}` };
}

const ROUTED_NODE = { ipv4: '198.19.255.1', ipv6: '2001:db8:ffff::1' };
const BRIDGED_NODE = { ipv4: '198.18.0.1', ipv6: '2001:db8::1' };

/** Whether this kernel gives each namespace its own bridge-nf-call-* switches (br_netfilter
 * loaded, kernel >= 5.3); undefined when it does, else the reason the bridged variant can't run. */
export function bridgeNetfilterUnavailable(): string | undefined {
  const probeNs = `nfk-${randomBytes(4).toString('hex')}-brcheck`;
  execFileSync('ip', ['netns', 'add', probeNs], { stdio: 'pipe' });
  try {
    execFileSync(
      'nsenter',
      [`--net=/var/run/netns/${probeNs}`, 'sysctl', '-q', '-w', 'net.bridge.bridge-nf-call-iptables=1', 'net.bridge.bridge-nf-call-ip6tables=1'],
      { stdio: 'pipe' },
    );
    return undefined;
  } catch (err) {
    return `br_netfilter is not available per network namespace on this kernel (${firstLine(err)})`;
  } finally {
    execFileSync('ip', ['netns', 'del', probeNs], { stdio: 'ignore' });
  }
}

function firstLine(err: unknown): string {
  const e = err as { stderr?: Buffer | string; message?: string };
  return String(e.stderr || e.message || err).trim().split('\n')[0];
}

/** Builds a topology; on any failure everything made so far is removed before rethrowing. */
export function createTopology(kind: TopologyKind, placements: PodPlacement[] = conformancePods()): Topology {
  const prefix = `nfk-${randomBytes(3).toString('hex')}`;
  const created: string[] = [];
  const nsPath = (ns: string): string => `/var/run/netns/${ns}`;
  const sh = (args: string[]): void => {
    try {
      execFileSync('ip', args, { stdio: 'pipe' });
    } catch (err) {
      throw new Error(`ip ${args.join(' ')}: ${firstLine(err)}`);
    }
  };
  const sysctl = (ns: string, settings: string[]): void => {
    try {
      execFileSync('nsenter', [`--net=${nsPath(ns)}`, 'sysctl', '-q', '-w', ...settings], { stdio: 'pipe' });
    } catch (err) {
      throw new Error(`sysctl ${settings.join(' ')} in ${ns}: ${firstLine(err)}`);
    }
  };
  const addNetns = (ns: string): void => {
    sh(['netns', 'add', ns]);
    created.push(ns);
    sh(['-n', ns, 'link', 'set', 'lo', 'up']);
    // No duplicate address detection: addresses are usable at once, and these links are private.
    sysctl(ns, ['net.ipv6.conf.all.accept_dad=0', 'net.ipv6.conf.default.accept_dad=0']);
  };
  const removeAll = (): void => {
    for (const ns of created.reverse()) {
      try {
        execFileSync('ip', ['netns', 'del', ns], { stdio: 'ignore' });
      } catch {
        // Already gone: nothing to remove.
      }
    }
    created.length = 0;
    process.removeListener('exit', removeAll);
  };
  // Named namespaces outlive the process: a test runner exiting early must not leave them behind.
  process.once('exit', removeAll);

  const node = kind === 'routed' ? ROUTED_NODE : BRIDGED_NODE;
  const nodeNs = `${prefix}-node`;
  try {
    addNetns(nodeNs);
    sysctl(nodeNs, ['net.ipv4.ip_forward=1', 'net.ipv6.conf.all.forwarding=1', 'net.ipv4.conf.all.rp_filter=0']);
    // Rejections are ICMP errors sent by the node: unthrottled, so every rejected probe sees its
    // own error instead of timing out behind the per-host and global ICMP rate limits.
    sysctl(nodeNs, ['net.ipv4.icmp_ratelimit=0', 'net.ipv6.icmp.ratelimit=0', 'net.ipv4.icmp_msgs_per_sec=1000000',
      'net.ipv4.icmp_msgs_burst=1000000']);
    if (kind === 'routed') {
      // The node's own addresses live on its loopback (this kernel may lack the dummy link
      // type); pods reach them through their veth.
      sh(['-n', nodeNs, 'addr', 'add', `${node.ipv4}/32`, 'dev', 'lo']);
      sh(['-n', nodeNs, 'addr', 'add', `${node.ipv6}/128`, 'dev', 'lo']);
    } else {
      sysctl(nodeNs, ['net.bridge.bridge-nf-call-iptables=1', 'net.bridge.bridge-nf-call-ip6tables=1']);
      sh(['-n', nodeNs, 'link', 'add', 'br0', 'type', 'bridge', 'stp_state', '0', 'mcast_snooping', '0']);
      sh(['-n', nodeNs, 'addr', 'add', `${node.ipv4}/24`, 'dev', 'br0']);
      sh(['-n', nodeNs, 'addr', 'add', `${node.ipv6}/64`, 'dev', 'br0', 'nodad']);
      sh(['-n', nodeNs, 'link', 'set', 'br0', 'up']);
    }

    const pods = placements.map((placement, index): PodEndpoint => {
      const { ipv4, ipv6 } = podAddress(index);
      const podNs = `${prefix}-${placement.namespace}-${placement.name}`;
      const hostIf = `nfk${index}`;
      addNetns(podNs);
      sh(['-n', nodeNs, 'link', 'add', hostIf, 'type', 'veth', 'peer', 'name', 'eth0', 'netns', podNs]);
      if (kind === 'routed') {
        for (const args of routedPodCommands(nodeNs, podNs, hostIf, { v4: ipv4, v6: ipv6 }, { v4: node.ipv4, v6: node.ipv6 })) sh(args);
      } else {
        sh(['-n', podNs, 'addr', 'add', `${ipv4}/24`, 'dev', 'eth0']);
        sh(['-n', podNs, 'addr', 'add', `${ipv6}/64`, 'dev', 'eth0', 'nodad']);
        sh(['-n', podNs, 'link', 'set', 'eth0', 'up']);
        sh(['-n', podNs, 'route', 'add', 'default', 'via', node.ipv4, 'dev', 'eth0']);
        sh(['-n', podNs, '-6', 'route', 'add', 'default', 'via', node.ipv6, 'dev', 'eth0']);
        sh(['-n', nodeNs, 'link', 'set', hostIf, 'master', 'br0']);
        sh(['-n', nodeNs, 'link', 'set', hostIf, 'up']);
      }
      return { ...placement, id: `${placement.namespace}/${placement.name}`, ipv4, ipv6, netnsPath: nsPath(podNs) };
    });

    return {
      kind,
      nodeNetnsPath: nsPath(nodeNs),
      nodeIPv4: node.ipv4,
      nodeIPv6: node.ipv6,
      pods,
      async runInNode(cmd, args, opts = {}) {
        const child = execFileAsync('nsenter', [`--net=${nsPath(nodeNs)}`, cmd, ...args], {
          cwd: opts.cwd,
          encoding: 'utf8',
          maxBuffer: 64 * 1024 * 1024,
        });
        // A command that exits without reading its input closes the pipe: not an error here.
        child.child.stdin?.on('error', () => undefined);
        if (opts.input !== undefined) child.child.stdin?.end(opts.input);
        else child.child.stdin?.end();
        try {
          return (await child).stdout;
        } catch (err) {
          const e = err as { stderr?: string; stdout?: string; message: string };
          throw new Error(`${cmd} ${args.join(' ')} (in node netns) failed: ${e.stderr || e.message}${e.stdout ? `\nstdout: ${e.stdout}` : ''}`);
        }
      },
      close: removeAll,
    };
  } catch (err) {
    removeAll();
    throw err;
  }
}
