/** Real TCP traffic between the sandbox's namespaces: a listener on every container port of
 * every pod address, and connection probes made from inside a source namespace. */
import { createServer, isIPv4, type Server } from 'node:net';
import { constants } from 'node:os';
import type { Netns } from '../netlink/netns';
import type { SandboxPod } from './sandbox';
import type { IpFamily } from '../net/ip';

export interface Target {
  pod: SandboxPod;
  port: number;
  address: string;
  family: IpFamily;
}

/** allowed: the handshake completed; blocked: no answer within the timeout (dropped);
 * otherwise the errno name of the failed connect (ECONNREFUSED for a reject). */
export type Outcome = 'allowed' | 'blocked' | string;

const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([name, n]) => [n, name]));

export class Listeners {
  private readonly servers: Server[] = [];
  readonly targets: Target[] = [];

  /** Listens on each TCP container port of each pod, on each of its addresses. */
  static async start(pods: SandboxPod[]): Promise<Listeners> {
    const listeners = new Listeners();
    try {
      for (const pod of pods) {
        for (const port of pod.pod.ports.filter((p) => p.protocol === 'TCP')) {
          for (const address of pod.pod.ips) {
            await listeners.listen(pod.netns, address, port.containerPort);
            listeners.targets.push({ pod, port: port.containerPort, address, family: isIPv4(address) ? 'v4' : 'v6' });
          }
        }
      }
      return listeners;
    } catch (err) {
      await listeners.close();
      throw err;
    }
  }

  private listen(ns: Netns, address: string, port: number): Promise<void> {
    const fd = ns.listenTcp(address, port);
    // Accept and hang up: a completed handshake is the whole answer.
    const server = createServer((socket) => socket.destroy());
    this.servers.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ fd }, () => resolve());
    });
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

/** One TCP connect from inside `from` to the target. */
export async function probe(from: Netns, target: Target, timeoutMs: number): Promise<Outcome> {
  const errno = await from.connectTcp(target.address, target.port, timeoutMs);
  if (errno === 0) return 'allowed';
  if (errno === constants.errno.ETIMEDOUT) return 'blocked';
  return ERRNO_NAMES.get(errno) ?? `E${errno}`;
}
