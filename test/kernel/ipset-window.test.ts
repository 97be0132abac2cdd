import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IpsetClient } from '../../src/ipset/client';
import { parseElement } from '../../src/ipset/element';
import { syncSets, SyncMode } from '../../src/ipset/sync';
import { DesiredSet, Element } from '../../src/ipset/types';
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

async function noEmptyWindow(mode: SyncMode): Promise<void> {
  await withSandbox(async (sb) => {
    const random = rng(mode === 'replace' ? 7 : 11);
    const writer = new IpsetClient(sb.socket);
    const checkerSocket = NetlinkSocket.open({ netns: sb.netns });
    const checker = new IpsetClient(checkerSocket);
    let next = 0;
    const state = Array.from({ length: SETS }, () => Array.from({ length: MEMBERS }, () => next++));
    const desired = (): Record<string, DesiredSet> =>
      Object.fromEntries(state.map((m, i) => [`w-${i}`, { type: 'hash:ip', members: m.map(addr) } as DesiredSet]));
    await syncSets(writer, desired(), { prefix: 'w-', mode });

    let probes: { set: string; element: Element }[] = [];
    let running = true;
    let checks = 0;
    const misses: string[] = [];
    const loop = (async () => {
      while (running) {
        if (probes.length === 0) {
          await new Promise((resolve) => setImmediate(resolve));
          continue;
        }
        const sample = Array.from({ length: 400 }, () => probes[Math.floor(random() * probes.length)]);
        const present = await checker.testEach(sample);
        checks += sample.length;
        present.forEach((ok, i) => {
          if (!ok) misses.push(`${sample[i].set} ${sample[i].element.key}`);
        });
      }
    })();
    try {
      for (let round = 0; round < ROUNDS; round++) {
        const kept: { set: string; element: Element }[] = [];
        for (let i = 0; i < SETS; i++) {
          const churned = new Set<number>();
          while (churned.size < MEMBERS * CHURN) churned.add(Math.floor(random() * MEMBERS));
          state[i].forEach((n, j) => {
            if (!churned.has(j)) kept.push({ set: `w-${i}`, element: parseElement('hash:ip', 'inet', addr(n)) });
          });
          for (const j of churned) state[i][j] = next++;
        }
        probes = kept;
        const r = await syncSets(writer, desired(), { prefix: 'w-', mode });
        assert.deepEqual(r.failures, []);
        assert.equal(mode === 'replace' ? r.replaced.length : r.updated.length, SETS);
        assert.equal(r.added, SETS * MEMBERS * CHURN);
      }
    } finally {
      running = false;
      await loop;
      await checkerSocket.close();
    }
    assert.ok(checks > 0);
    assert.deepEqual(misses.slice(0, 10), [], `${misses.length} of ${checks} checks missed a member present before and after`);
    const final = await writer.list({ include: (n) => n.startsWith('w-') });
    const want = new Map(state.map((m, i) => [`w-${i}`, m.map(addr).sort()]));
    for (const s of final.sets) assert.deepEqual(s.members.map((m) => m.key).sort(), want.get(s.name));
    assert.equal(final.sets.length, SETS);
    const again = await syncSets(writer, desired(), { prefix: 'w-', mode });
    assert.equal(again.messages.mutating, 0);
  });
}

test('incremental: 450 sets x 50 members, 10% churn, 20 rounds: a second socket never misses a kept member', () => noEmptyWindow('incremental'));

test('replace: 450 sets x 50 members, 10% churn, 20 rounds: a second socket never misses a kept member', () => noEmptyWindow('replace'));
