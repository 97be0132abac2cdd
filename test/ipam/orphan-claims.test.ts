/** GC deletes the IPAddressClaims this node made that no allocation holds (a crash between
 * create and record), and never one that an ADD records while GC is busy deleting another: the
 * claim of a borrowed address in use must outlive every GC pass, else a third node could borrow
 * the same address. Two nodes over the in-memory API, the API calls paused at chosen points (no
 * timing). */
import assert from 'node:assert/strict';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { Plural } from '../../src/ipam/api';
import { KObject } from '../../src/ipam/objects';
import { IpamService } from '../../src/ipam/service';
import { pool, quiet } from './cluster';
import { MemoryApi } from './memory-api';

/** A MemoryApi whose next call of one verb on one resource waits until released. */
class PausingApi extends MemoryApi {
  private pauses = new Map<string, { reached: () => void; gate: Promise<void> }>();

  /** Pauses the next `verb` on `plural`: resolves `reached` when it is called, goes on at release(). */
  pauseNext(verb: 'get' | 'remove', plural: Plural): { reached: Promise<void>; release: () => void } {
    let reached!: () => void;
    let release!: () => void;
    const reachedPromise = new Promise<void>((r) => (reached = r));
    const gate = new Promise<void>((r) => (release = r));
    this.pauses.set(`${verb} ${plural}`, { reached, gate });
    return { reached: reachedPromise, release };
  }

  private async pause(verb: string, plural: Plural): Promise<void> {
    const p = this.pauses.get(`${verb} ${plural}`);
    if (!p) return;
    this.pauses.delete(`${verb} ${plural}`);
    p.reached();
    await p.gate;
  }

  override async get(plural: Plural, name: string): Promise<KObject | undefined> {
    await this.pause('get', plural);
    return super.get(plural, name);
  }

  override async remove(plural: Plural, name: string, uid: string): Promise<void> {
    await this.pause('remove', plural);
    return super.remove(plural, name, uid);
  }
}

test("a claim an ADD records while GC deletes an orphan before it is not deleted by that GC", async () => {
  const api = new PausingApi(() => 0.5);
  // One block in the pool: node-b holds it and lends its tail, node-a can only borrow.
  api.objects.ippools.set('one', { ...pool('one', ['198.18.0.0/28'], { ipv4: 28 }), metadata: { name: 'one', uid: 'u', resourceVersion: '1' } });
  api.nodes = [
    { name: 'node-a', labels: {} },
    { name: 'node-b', labels: {} },
  ];
  const stateDir = mkdtempSync(join(tmpdir(), 'nfkube-ipam-orphans-'));
  const make = (nodeName: string) => new IpamService({ api, nodeName, stateDir, logger: quiet, gcIntervalMs: 0, publishDelayMs: 1, nodeGc: false });
  const b = make('node-b');
  const a = make('node-a');
  await b.start();
  try {
    assert.ok((await b.handle({ command: 'ADD', network: 'n', containerID: 'on-b', ifname: 'eth0' })).ok);
    await b.runGc(); // the pool is full: node-b lends the unused tail of its block
    await a.start(); // knows the block is node-b's: its ADD goes straight to borrowing
    const [block] = api.objects.ipblocks.values();
    assert.equal(typeof block.spec.lendFrom, 'number', 'node-b lends');
    // An orphan of node-a (a crash between its create and its record), listed first.
    await api.create('ipaddressclaims', { metadata: { name: 'v4-198-18-0-14' }, spec: { pool: 'one', address: '198.18.0.14', node: 'node-a', block: block.metadata.name, blockUID: block.metadata.uid, handle: 'n/crashed/eth0' } });

    // node-a's ADD borrows: it has created its claim and re-reads the block when it is paused.
    const addPaused = api.pauseNext('get', 'ipblocks');
    const adding = a.handle({ command: 'ADD', network: 'n', containerID: 'borrower', ifname: 'eth0' });
    await addPaused.reached;
    const claimsBefore = [...api.objects.ipaddressclaims.keys()];
    assert.equal(claimsBefore.length, 2, `the orphan and the borrower's claim: ${claimsBefore.join(', ')}`);
    const borrowed = claimsBefore.find((n) => n !== 'v4-198-18-0-14')!;

    // GC lists both claims while the ADD is under way, and is paused deleting the orphan.
    const deletePaused = api.pauseNext('remove', 'ipaddressclaims');
    const collecting = a.runGc();
    await deletePaused.reached;
    // Meanwhile the ADD completes: the borrowed address is recorded and answered.
    addPaused.release();
    const reply = await adding;
    assert.ok(reply.ok, JSON.stringify(reply));
    assert.ok(a.state.allocations.get('n/borrower/eth0')?.ips.some((ip) => ip.claim?.name === borrowed));
    deletePaused.release();
    const report = await collecting;

    assert.equal(report.orphanClaims, 1, 'only the orphan was collected');
    assert.ok(!api.objects.ipaddressclaims.has('v4-198-18-0-14'), 'the orphan is gone');
    assert.ok(api.objects.ipaddressclaims.has(borrowed), 'the claim of the recorded, answered address is kept');
  } finally {
    await a.stop();
    await b.stop();
  }
});
