/** A process of its own that watches the ruleset generation of its network namespace and prints
 * `GENERATION MONOTONIC_NS` at start and on each change, so a bench sees a commit from outside
 * the agent without blocking its own event loop. CLOCK_MONOTONIC (process.hrtime) is one clock
 * for every process on the machine.
 *
 * By default it sleeps on a netlink socket in the NFNLGRP_NFTABLES group: the kernel sends each
 * commit's NFT_MSG_NEWGEN (after the commit's object notifications), and the poller stamps it when
 * woken (a socket filter keeps the object notifications out). Polling NFT_MSG_GETGEN instead (NFKUBE_BENCH_POLL_US=50: a poll every ~50 µs, the way
 * this bench worked before) measured the poller more than the agent on this shared machine: ~20k
 * wake-ups a second compete with the agent for the CPUs, and a poller that never sleeps long gets
 * no wake-up preference from the scheduler, so it saw a commit a median 0.5-5 ms late (an agent's
 * own stamp after the kernel's ack came before the poller's). Joining the group makes the kernel
 * build a notification per object the agent commits (a few per event: microseconds). Should the
 * listener's queue overflow, the generation is read again with NFT_MSG_GETGEN.
 * Run: node dist/bench/generation-poller.js (runs until killed). */
import { decodeNfMessages } from '../src/netlink/message';
import { acceptFirstMessageType } from '../src/netlink/bpf';
import { NetlinkSocket } from '../src/netlink/socket';
import * as C from '../src/nft/constants';
import { decodeGeneration, getGeneration } from '../src/nft/generation';
import { msg } from '../src/nft/objects/codec';

/** NFKUBE_BENCH_POLL_US: poll NFT_MSG_GETGEN with this pause between polls instead of listening. */
const POLL_US = process.env.NFKUBE_BENCH_POLL_US;
/** linux/netfilter/nfnetlink.h: the nf_tables notification group. */
const NFNLGRP_NFTABLES = 7;

let last = -1;
/** Held for the process's life: a collected socket would close. */
let listener: NetlinkSocket | undefined;

function report(gen: number, at = process.hrtime.bigint()): void {
  if (gen === last) return;
  last = gen;
  // A pipe's write is synchronous on Linux: the line is out before the next message.
  process.stdout.write(`${gen} ${at}\n`);
}

async function poll(socket: NetlinkSocket, pauseMs: number): Promise<void> {
  const cell = new Int32Array(new SharedArrayBuffer(4));
  for (;;) {
    report(await getGeneration(socket));
    Atomics.wait(cell, 0, 0, pauseMs);
  }
}

async function listen(socket: NetlinkSocket): Promise<void> {
  const newGen = msg(C.NFT_MSG_NEWGEN);
  listener = socket.sibling();
  // The kernel sends a commit's object notifications together and its NEWGEN alone, after
  // them: filtered, the listener is woken once per commit, when it is complete (woken for each
  // notification datagram, it preempted the agent mid-commit).
  listener.attachFilter(acceptFirstMessageType(newGen));
  listener.joinGroup(NFNLGRP_NFTABLES);
  let rereading = false;
  listener.listen((messages, overruns, errno) => {
    const at = process.hrtime.bigint();
    if (errno) throw new Error(`generation listener: read failed, errno ${errno}`);
    for (const m of decodeNfMessages(messages)) if (m.type === newGen) report(decodeGeneration(m.payload), at);
    // Dropped messages may include the last NEWGEN: read the generation itself.
    if (overruns && !rereading) {
      rereading = true;
      void getGeneration(socket).then((gen) => {
        rereading = false;
        report(gen);
      });
    }
  });
  // Joined before this read: no commit falls between the two.
  report(await getGeneration(socket));
}

async function main(): Promise<void> {
  const socket = NetlinkSocket.open();
  if (POLL_US !== undefined) await poll(socket, Number(POLL_US) / 1000);
  else await listen(socket);
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
