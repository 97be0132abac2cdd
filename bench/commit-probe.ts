/** A second netlink writer on the node, for bench/batches.bench.ts: in its own process (run inside
 * the bench's namespace), it commits one element to a set of its own table, again and again, ~1 ms
 * apart, and times each commit from send to ack. The kernel runs one nf_tables commit at a time
 * (the commit mutex), so while another process's transaction is in the kernel this one waits: its
 * latency is what a container runtime or kubelet writing rules would see.
 * Prints `ready` once its table exists; when stdin closes (or after 10 minutes) it prints one
 * JSON line, `[[startEpochMs, latencyMs], ...]`, and exits. */
import { performance } from 'node:perf_hooks';
import { ipv4 } from '../src/net/ip-bytes';
import { NetlinkSocket } from '../src/netlink/socket';
import { commit, Transaction } from '../src/nft/transaction';
import { NftSet } from '../src/nft/types';

const LIMIT_MS = 600_000;

async function main(): Promise<void> {
  const socket = NetlinkSocket.open();
  const table = { family: 'inet' as const, name: 'nfkube-probe' };
  const set: NftSet = { family: 'inet', table: table.name, name: 'probe', key: ['ipv4_addr'] };
  await commit(socket, new Transaction().addTable(table).addSet(set), { echo: false });
  let done = false;
  process.stdin.on('close', () => void (done = true)).resume();
  process.stdout.write('ready\n');
  const samples: [number, number][] = [];
  const until = performance.now() + LIMIT_MS;
  for (let i = 0; !done && performance.now() < until; i++) {
    const element = [{ key: ipv4(`198.18.255.${i % 250}`) }];
    const tx = i % 500 < 250 ? new Transaction().addElements(set, element) : new Transaction().deleteElements(set, element);
    const t0 = performance.now();
    await commit(socket, tx, { echo: false });
    samples.push([performance.timeOrigin + t0, performance.now() - t0]);
    await new Promise((resolve) => setTimeout(resolve, 1));
  }
  process.stdout.write(`${JSON.stringify(samples)}\n`);
  await socket.close();
}

void main();
