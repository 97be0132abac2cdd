/** Property test of the allocator: random sequences of ADD (new and retried), DEL (known and
 * unknown), CNI GC, agent GC (lending when the pool runs out), and crashes with ADDs in flight,
 * over three nodes sharing a tiny pool (so blocks run out and addresses get borrowed), with 15% of
 * API calls failing before or after committing. After every step:
 * - no address is held twice, across all agents;
 * - every acknowledged, not deleted ADD is still held with the same addresses (durability, and
 *   nothing live is ever released);
 * - every held address is backed in the API: a block of that node, or that node's claim;
 * - after a CNI GC, a node holds exactly the attachments the runtime listed. */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { IpamService } from '../../src/ipam/service';
import { IpamReply } from '../../src/cni/protocol';
import { mulberry32 } from '../helpers/prng';
import { pool, quiet } from './cluster';
import { MemoryApi } from './memory-api';

const NODES = ['a', 'b', 'c'];
const SEEDS = 12;
const STEPS = 120;

async function runCase(seed: number): Promise<void> {
  const rand = mulberry32(seed);
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const api = new MemoryApi(rand);
  api.objects.ippools.set('tiny', { ...pool('tiny', ['198.18.200.0/27', '2001:db8:200::/123'], { ipv4: 29, ipv6: 125 }), metadata: { name: 'tiny', uid: 'u', resourceVersion: '1' } });
  api.nodes = NODES.map((name) => ({ name, labels: {} }));
  const stateDir = mkdtempSync(join(tmpdir(), 'nfkube-ipam-prop-'));
  const make = (node: string) => new IpamService({ api, nodeName: node, stateDir, logger: quiet, gcIntervalMs: 0, publishDelayMs: 1, nodeGc: false });
  const startAgent = async (node: string): Promise<IpamService> => {
    for (;;) {
      const a = make(node);
      try {
        await a.start();
        return a;
      } catch {
        a.crash(); // a failed start (faults): try again, as systemd or the kubelet would
      }
    }
  };
  api.faultRate = 0.15;
  const agents = new Map<string, IpamService>();
  for (const n of NODES) agents.set(n, await startAgent(n));
  const live = new Map<string, { node: string; ips: string[] }>();
  const history: string[] = [];
  let next = 0;

  const add = async (node: string, id: string): Promise<IpamReply> => {
    const reply = await agents.get(node)!.handle({ command: 'ADD', network: 'n', containerID: id, ifname: 'eth0' });
    const key = `n/${id}/eth0`;
    if (reply.ok) {
      const ips = reply.ips!.map((x) => x.address);
      const before = live.get(key);
      if (before) assert.deepEqual(ips, before.ips, `retried ADD ${key} got other addresses`);
      live.set(key, { node, ips });
    }
    return reply;
  };

  const check = (where: string) => {
    const seen = new Map<string, string>();
    for (const [n, a] of agents) {
      for (const [key, alloc] of a.state.allocations) {
        for (const ip of alloc.ips) {
          const other = seen.get(ip.address);
          assert.equal(other, undefined, `${where}: ${ip.address} held by ${other} and ${n} ${key}`);
          seen.set(ip.address, `${n} ${key}`);
          if (ip.claim) {
            const c = api.objects.ipaddressclaims.get(ip.claim.name);
            assert.ok(c && c.spec.node === n && c.metadata.uid === ip.claim.uid, `${where}: ${n} holds ${ip.address} without its claim`);
          } else {
            const b = api.objects.ipblocks.get(ip.block);
            assert.equal(b?.spec.node, n, `${where}: ${n} holds ${ip.address} in block ${ip.block} held by ${b?.spec.node}`);
          }
        }
      }
    }
    for (const [key, l] of live) {
      const held = agents.get(l.node)!.state.allocations.get(key);
      assert.ok(held, `${where}: acknowledged ${key} on ${l.node} is gone`);
      assert.deepEqual(held.ips.map((x) => `${x.address}/${x.prefix}`), l.ips, `${where}: ${key} changed addresses`);
    }
  };

  for (let step = 0; step < STEPS; step++) {
    const node = pick(NODES);
    const agent = agents.get(node)!;
    const r = rand();
    const mine = [...live].filter(([, v]) => v.node === node).map(([k]) => k.split('/')[1]);
    let what: string;
    if (r < 0.4) {
      const id = `c${next++}`;
      what = `ADD ${node} ${id}`;
      await add(node, id);
    } else if (r < 0.5 && mine.length) {
      const id = pick(mine);
      what = `ADD (retry) ${node} ${id}`;
      await add(node, id);
    } else if (r < 0.7) {
      const id = mine.length && rand() < 0.8 ? pick(mine) : `unknown${step}`;
      what = `DEL ${node} ${id}`;
      const reply = await agent.handle({ command: 'DEL', network: 'n', containerID: id, ifname: 'eth0' });
      if (reply.ok) live.delete(`n/${id}/eth0`);
    } else if (r < 0.78) {
      what = `CNI GC ${node}`;
      const valid = mine.map((id) => ({ containerID: id, ifname: 'eth0' }));
      const reply = await agent.handle({ command: 'GC', network: 'n', validAttachments: valid });
      if (reply.ok) assert.deepEqual([...agent.state.allocations.keys()].sort(), mine.map((id) => `n/${id}/eth0`).sort(), `seed ${seed} step ${step}: GC left other attachments`);
    } else if (r < 0.86) {
      what = `agent GC ${node}`;
      await agent.runGc().catch(() => undefined);
    } else {
      // Crash with ADDs in flight; the answers that arrived before the crash are acknowledged.
      const ids = [`c${next++}`, `c${next++}`];
      what = `crash ${node} during ADD ${ids.join(' ')}`;
      const inflight = ids.map((id) => add(node, id));
      for (let i = Math.floor(rand() * 6); i > 0; i--) await new Promise((res) => setImmediate(res));
      agent.crash();
      await Promise.all(inflight);
      agents.set(node, await startAgent(node));
    }
    history.push(what);
    try {
      check(`seed ${seed} step ${step} (${what})`);
    } catch (err) {
      (err as Error).message += `\nhistory:\n  ${history.join('\n  ')}`;
      throw err;
    }
  }
  for (const a of agents.values()) await a.stop();
}

test(`allocator property: ${SEEDS} random sequences of ${STEPS} ADD/DEL/GC/crash steps keep the invariants`, async () => {
  for (let seed = 1; seed <= SEEDS; seed++) await runCase(seed);
});
