import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { IpsetClient } from '../../src/ipset/client';
import { parseElement } from '../../src/ipset/element';
import { syncSets, SyncMode } from '../../src/ipset/sync';
import { DesiredSet } from '../../src/ipset/types';
import { NetlinkSocket } from '../../src/netlink/socket';
import { withSandbox } from '../helpers/netns';

const SETS = 450;
const MEMBERS = 50;
const CHURN = 0.1;
const ROUNDS = 20;

/** Deterministic pseudo-random numbers, so a failure replays. */
function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

const addr = (n: number) => `198.18.${(n >> 8) & 255}.${n & 255}`;

/** Members present before and after the coming sync, as "set member" lines. */
type ToChecker = { probes: string[] } | { stop: true };
type FromChecker = { ready: true } | { checks: number; misses: string[] };

/** The checker, on its own thread and socket so it never waits for the writer's event loop: tests
 * random probes in a tight loop. New probes take effect between batches, and are acknowledged
 * only then, so no batch of the previous round's probes runs during the next sync. */
async function checker(nsPath: string, seed: number): Promise<void> {
  const port = parentPort!;
  const socket = NetlinkSocket.open({ netns: nsPath });
  const client = new IpsetClient(socket);
  const random = rng(seed);
  let probes: { set: string; type: 'hash:ip'; element: ReturnType<typeof parseElement> }[] = [];
  let next: string[] | undefined;
  let running = true;
  let checks = 0;
  const misses: string[] = [];
  port.on('message', (m: ToChecker) => {
    if ('stop' in m) running = false;
    else next = m.probes;
  });
  while (running) {
    if (next) {
      probes = next.map((line) => {
        const [set, member] = line.split(' ');
        return { set, type: 'hash:ip', element: parseElement('hash:ip', 'inet', member) };
      });
      next = undefined;
      port.postMessage({ ready: true } satisfies FromChecker);
    }
    if (probes.length === 0) {
      await new Promise((resolve) => setImmediate(resolve));
      continue;
    }
    const sample = Array.from({ length: 400 }, () => probes[Math.floor(random() * probes.length)]);
    const present = await client.testEach(sample);
    checks += sample.length;
    present.forEach((ok, i) => {
      if (!ok) misses.push(`${sample[i].set} ${sample[i].element.key}`);
    });
  }
  await socket.close();
  port.postMessage({ checks, misses } satisfies FromChecker);
}

async function noEmptyWindow(mode: SyncMode): Promise<void> {
  await withSandbox(async (sb) => {
    const random = rng(mode === 'replace' ? 7 : 11);
    const writer = new IpsetClient(sb.socket);
    let next = 0;
    const state = Array.from({ length: SETS }, () => Array.from({ length: MEMBERS }, () => next++));
    const desired = (): Record<string, DesiredSet> =>
      Object.fromEntries(state.map((m, i) => [`w-${i}`, { type: 'hash:ip', members: m.map(addr) } as DesiredSet]));
    await syncSets(writer, desired(), { prefix: 'w-', mode });

    const worker = new Worker(__filename, { workerData: { nsPath: sb.netns.path, seed: mode === 'replace' ? 3 : 5 } });
    const replies: FromChecker[] = [];
    const waiters: ((m: FromChecker) => void)[] = [];
    worker.on('message', (m: FromChecker) => (waiters.length > 0 ? waiters.shift()!(m) : replies.push(m)));
    const failed = new Promise<never>((_, reject) => worker.on('error', reject));
    const reply = () => Promise.race([failed, new Promise<FromChecker>((resolve) => (replies.length > 0 ? resolve(replies.shift()!) : waiters.push(resolve)))]);
    let result: FromChecker | undefined;
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const kept: string[] = [];
        for (let i = 0; i < SETS; i++) {
          const churned = new Set<number>();
          while (churned.size < MEMBERS * CHURN) churned.add(Math.floor(random() * MEMBERS));
          state[i].forEach((n, j) => {
            if (!churned.has(j)) kept.push(`w-${i} ${addr(n)}`);
          });
          for (const j of churned) state[i][j] = next++;
        }
        worker.postMessage({ probes: kept } satisfies ToChecker);
        assert.deepEqual(await reply(), { ready: true });
        const r = await syncSets(writer, desired(), { prefix: 'w-', mode });
        assert.deepEqual(r.failures, []);
        assert.equal(mode === 'replace' ? r.replaced.length : r.updated.length, SETS);
        assert.equal(r.added, SETS * MEMBERS * CHURN);
      }
    } finally {
      worker.postMessage({ stop: true } satisfies ToChecker);
      result = await reply();
      await worker.terminate();
    }
    assert.ok(result && 'checks' in result);
    assert.ok(result.checks > 0);
    assert.deepEqual(result.misses.slice(0, 10), [], `${result.misses.length} of ${result.checks} checks missed a member present before and after`);
    const final = await writer.list({ include: (n) => n.startsWith('w-') });
    const want = new Map(state.map((m, i) => [`w-${i}`, m.map(addr).sort()]));
    for (const s of final.sets) assert.deepEqual(s.members.map((m) => m.key).sort(), want.get(s.name));
    assert.equal(final.sets.length, SETS);
    const again = await syncSets(writer, desired(), { prefix: 'w-', mode });
    assert.equal(again.messages.mutating, 0);
  });
}

if (isMainThread) {
  test('incremental: 450 sets x 50 members, 10% churn, 20 rounds: a second socket never misses a kept member', () => noEmptyWindow('incremental'));

  test('replace: 450 sets x 50 members, 10% churn, 20 rounds: a second socket never misses a kept member', () => noEmptyWindow('replace'));
} else {
  void checker((workerData as { nsPath: string }).nsPath, (workerData as { seed: number }).seed);
}
