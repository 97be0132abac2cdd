/** IPAM's garbage-collection decisions as pure functions, no API: when a pod is gone, which claims
 * are orphans, which agent releases a deleted Node's objects and after how long, which held
 * blocks a fresh list still gives this node, and when a pool has no unclaimed block left. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { listedAsHeld } from '../../src/ipam/block-claims';
import { heldClaimUids, isOrphanClaim, NodeAbsence, nodeGcLeader, podGone } from '../../src/ipam/gc';
import { BlockObject, ClaimObject } from '../../src/ipam/objects';
import { blockCidr, blockCount, blockName, parsePool, poolExhausted } from '../../src/ipam/pool';
import { Allocation, BlockState } from '../../src/ipam/state';

const ME = 'node-a';

function claim(name: string, node: string, uid: string, handle: string): ClaimObject {
  return { name, uid, node, handle, pool: 'p', address: '198.18.0.9', block: 'v4-198-18-0-0-28', blockUID: 'b1' };
}

function listedBlock(name: string, node: string, uid: string): BlockObject {
  return { name, node, uid, resourceVersion: '1', pool: 'p', cidr: '198.18.0.0/28', allocations: {} };
}

test('a pod is gone when the list lacks it or shows a new pod of that name', () => {
  const uidOf = new Map([['ns/web', 'u1']]);
  assert.equal(podGone({ namespace: 'ns', name: 'web', uid: 'u1' }, uidOf), false);
  assert.equal(podGone({ namespace: 'ns', name: 'web' }, uidOf), false, 'no recorded uid: the name decides');
  assert.equal(podGone({ namespace: 'ns', name: 'web', uid: '' }, uidOf), false);
  assert.equal(podGone({ namespace: 'ns', name: 'web', uid: 'u0' }, uidOf), true, 'same name, another pod');
  assert.equal(podGone({ namespace: 'other', name: 'web', uid: 'u1' }, uidOf), true);
});

test("an orphan claim is this node's, held by no allocation, for no ADD under way", () => {
  const allocations: Allocation[] = [
    { network: 'net', containerID: 'a', ifname: 'eth0', pool: 'p', at: 0, ips: [{ family: 'v4', address: '198.18.0.9', prefix: 24, block: 'v4-198-18-0-0-28', claim: { name: 'held', uid: 'c-held' } }] },
    { network: 'net', containerID: 'b', ifname: 'eth0', pool: 'p', at: 0, ips: [{ family: 'v4', address: '198.18.0.2', prefix: 24, block: 'v4-198-18-0-0-28' }] },
  ];
  const held = heldClaimUids(allocations);
  assert.deepEqual([...held], ['c-held']);
  const inflight = new Set(['net/c/eth0']);
  assert.equal(isOrphanClaim(claim('held', ME, 'c-held', 'net/a/eth0'), ME, held, inflight), false);
  assert.equal(isOrphanClaim(claim('lost', ME, 'c-lost', 'net/z/eth0'), ME, held, inflight), true, 'a crash between create and record');
  assert.equal(isOrphanClaim(claim('busy', ME, 'c-busy', 'net/c/eth0'), ME, held, inflight), false, 'its ADD may still record it');
  assert.equal(isOrphanClaim(claim('theirs', 'node-b', 'c-b', 'net/z/eth0'), ME, held, inflight), false, "another node's claim");
});

test("one agent releases deleted Nodes' objects: the first live Node by name that holds blocks", () => {
  const blocks = [listedBlock('b1', 'node-c', '1'), listedBlock('b2', 'node-b', '2'), listedBlock('b3', 'gone', '3')];
  assert.equal(nodeGcLeader(blocks, new Set(['node-a', 'node-b', 'node-c'])), 'node-b', 'node-a holds no block');
  assert.equal(nodeGcLeader(blocks, new Set(['node-c'])), 'node-c');
  assert.equal(nodeGcLeader(blocks, new Set()), undefined);
});

test('a Node is overdue once missing for the grace period; seen again, it starts over; never this node', () => {
  const absence = new NodeAbsence(1000);
  const live = new Set([ME]);
  const holders = [ME, 'node-b', 'node-b', 'gone'];
  assert.deepEqual([...absence.overdue(live, holders, ME, 0)], [], 'first seen missing');
  assert.deepEqual([...absence.overdue(live, holders, ME, 999)], []);
  assert.deepEqual([...absence.overdue(live, holders, ME, 1000)].sort(), ['gone', 'node-b']);
  assert.deepEqual([...absence.overdue(new Set([ME, 'node-b']), holders, ME, 1500)], ['gone'], 'node-b came back');
  assert.deepEqual([...absence.overdue(live, holders, ME, 1600)], ['gone'], 'node-b missing again: its clock restarts');
  assert.deepEqual([...absence.overdue(live, holders, ME, 2600)].sort(), ['gone', 'node-b']);
  assert.deepEqual([...absence.overdue(new Set(), [ME], ME, 10_000)], [], 'this node is never judged missing');
});

test('a held block stays held only while a fresh list gives it to this node with the same uid', () => {
  const pool = parsePool({ metadata: { name: 'p' }, spec: { cidrs: ['198.18.0.0/24'], blockSize: { ipv4: 28 } } });
  const cidr = blockCidr(pool.ranges[0], 0n);
  const held = new BlockState(blockName(cidr), 'b1', 'p', pool.ranges[0], cidr, undefined);
  assert.equal(listedAsHeld(held, listedBlock(held.name, ME, 'b1'), ME), true);
  assert.equal(listedAsHeld(held, undefined, ME), false, 'deleted (a deleted Node, or by hand)');
  assert.equal(listedAsHeld(held, listedBlock(held.name, 'node-b', 'b2'), ME), false, 'released and claimed by another node');
  assert.equal(listedAsHeld(held, listedBlock(held.name, ME, 'b2'), ME), false, 'deleted and created again');
});

test('a pool is exhausted when every one of its blocks is known taken; a huge range never is', () => {
  const pool = parsePool({ metadata: { name: 'p' }, spec: { cidrs: ['198.18.0.0/26', '2001:db8::/126'], blockSize: { ipv4: 28, ipv6: 127 } } });
  const names = pool.ranges.flatMap((r) => Array.from({ length: Number(blockCount(r)) }, (_, i) => blockName(blockCidr(r, BigInt(i)))));
  assert.equal(names.length, 4 + 2);
  assert.equal(poolExhausted(pool, new Set(names)), true);
  assert.equal(poolExhausted(pool, new Set(names.slice(1))), false);
  const huge = parsePool({ metadata: { name: 'h' }, spec: { cidrs: ['2001:db8::/64'] } });
  assert.equal(poolExhausted(huge, new Set()), false);
});
