/** Scale and faults: 20 node agents, 500 concurrent ADDs (dual-stack), random DELs, pods deleted
 * without DEL, agents crashed and restarted mid-allocation, 10% of API requests faulted (500s,
 * resets, delays, writes committed with the reply dropped). 0 duplicates, 0 leaks after GC, every
 * ADD succeeded uniquely or failed cleanly. (The 100-node / 5,000-ADD run is in the bench.) */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { runScale } from './scale';

for (const seed of [1, 2]) {
  test(`20 nodes, 500 ADDs, 10% faults, 6 crashes (seed ${seed}): no duplicates, no leaks, nothing lost`, async () => {
    const r = await runScale({ nodes: 20, adds: 500, faultRate: 0.1, crashes: 6, delRate: 0.2, vanishRate: 0.1, seed });
    assert.deepEqual(r.duplicatesSeen, []);
    assert.deepEqual(r.findings, []);
    assert.deepEqual(r.leaks, []);
    assert.deepEqual(r.lost, []);
    assert.equal(r.succeeded + r.failedCleanly, 500);
    assert.ok(r.faultsInjected > 5, `faults were injected (${r.faultsInjected})`);
    assert.ok(r.succeeded > 400, `most ADDs succeed despite faults (${r.succeeded})`);
  });
}
