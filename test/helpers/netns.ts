/** Test sandboxes: every kernel-touching test runs in a namespace made here and removed after. */
import { execFileSync } from 'node:child_process';
import { Netns } from '../../src/netlink/netns';
import { NetlinkSocket } from '../../src/netlink/socket';

export interface Sandbox {
  netns: Netns;
  socket: NetlinkSocket;
  /** Runs an oracle tool (nft, ipset, iptables, ip) inside the sandbox; returns stdout. */
  run(cmd: string, args: string[], input?: string): string;
  close(): Promise<void>;
}

export function openSandbox(): Sandbox {
  const netns = Netns.create();
  const socket = NetlinkSocket.open({ netns });
  return {
    netns,
    socket,
    run(cmd, args, input) {
      return execFileSync('nsenter', [`--net=${netns.path}`, cmd, ...args], {
        input,
        encoding: 'utf8',
        stdio: ['pipe', 'pipe', 'pipe'],
        maxBuffer: 256 * 1024 * 1024,
      });
    },
    async close() {
      await socket.close();
      netns.close();
    },
  };
}

/** Runs fn with a fresh sandbox and always tears it down. */
export async function withSandbox<T>(fn: (sb: Sandbox) => Promise<T>): Promise<T> {
  const sb = openSandbox();
  try {
    return await fn(sb);
  } finally {
    await sb.close();
  }
}
