/** A process of its own that polls the ruleset generation of its network namespace (one
 * NFT_MSG_GETGEN every ~50 µs) and prints `GENERATION MONOTONIC_NS` at start and on each change,
 * so a bench sees a commit from outside the agent without blocking its own event loop.
 * CLOCK_MONOTONIC (process.hrtime) is one clock for every process on the machine. The polling
 * itself competes with the measured agent for the CPUs (~20k wake-ups a second): on a loaded
 * machine a 500 µs pause (NFKUBE_BENCH_POLL_US=500) measured lower latencies despite the
 * coarser resolution. (`nft monitor`, woken by the kernel instead, measured a p99 of 158 ms: it
 * falls behind.)
 * Run: node dist/bench/generation-poller.js (runs until killed). */
import { NetlinkSocket } from '../src/netlink/socket';
import { getGeneration } from '../src/nft/generation';

/** NFKUBE_BENCH_POLL_US: the pause between polls (default 50 µs). */
const POLL_MS = Number(process.env.NFKUBE_BENCH_POLL_US ?? 50) / 1000;

async function main(): Promise<void> {
  const socket = NetlinkSocket.open();
  const cell = new Int32Array(new SharedArrayBuffer(4));
  let last = -1;
  for (;;) {
    const gen = await getGeneration(socket);
    if (gen !== last) {
      last = gen;
      // A pipe's write is synchronous on Linux: the line is out before the next poll.
      process.stdout.write(`${gen} ${process.hrtime.bigint()}\n`);
    }
    Atomics.wait(cell, 0, 0, POLL_MS);
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
