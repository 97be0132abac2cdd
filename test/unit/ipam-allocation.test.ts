/** IPAM's allocation decisions as pure functions, no API and no disk: the watermark, the pod a
 * request names, how much a full node lends and takes back, what a block's status publishes, a
 * CNI CHECK's verdict, the usage rows of the metrics, and the per-handle queue's order. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { podOf, watermarkFor } from '../../src/ipam/allocator';
import { checkProblem } from '../../src/ipam/cni-requests';
import { HandleQueue } from '../../src/ipam/handle-queue';
import { lendFromAfterTakeBack, lendTarget } from '../../src/ipam/lending';
import { blockCidr, blockName, parsePool, Pool } from '../../src/ipam/pool';
import { CNI_ERR, IpamRequest } from '../../src/cni/protocol';
import { statusAllocations } from '../../src/ipam/publisher';
import { Allocation, BlockState, NodeState } from '../../src/ipam/state';

const dualStack: Pool = parsePool({ metadata: { name: 'p' }, spec: { cidrs: ['198.18.0.0/24', '2001:db8::/120'], blockSize: { ipv4: 28, ipv6: 124 } } });

/** The index-th block of the pool's range of that family, as a node holding it keeps it. */
function heldBlock(family: 'v4' | 'v6', index: bigint, uid = `uid-${family}-${index}`): BlockState {
  const range = dualStack.ranges.find((r) => r.family === family)!;
  const cidr = blockCidr(range, index);
  return new BlockState(blockName(cidr), uid, dualStack.name, range, cidr, undefined);
}

function allocation(containerID: string, ips: Allocation['ips'], pod?: Allocation['pod']): Allocation {
  return { network: 'net', containerID, ifname: 'eth0', pool: dualStack.name, ips, ...(pod ? { pod } : {}), at: 0 };
}

test('the watermark is the configured one, else a quarter block and at least one address', () => {
  assert.equal(watermarkFor(undefined, 64), 16);
  assert.equal(watermarkFor(undefined, 2), 1);
  assert.equal(watermarkFor(5, 64), 5);
  assert.equal(watermarkFor(0, 64), 0, 'a configured 0 claims no block ahead of need');
});

test('the pod of a request comes from CNI_ARGS, only when both namespace and name are there', () => {
  assert.equal(podOf(undefined), undefined);
  assert.equal(podOf({ K8S_POD_NAMESPACE: 'ns' }), undefined);
  assert.equal(podOf({ K8S_POD_NAME: 'web', K8S_POD_NAMESPACE: '' }), undefined);
  assert.deepEqual(podOf({ K8S_POD_NAMESPACE: 'ns', K8S_POD_NAME: 'web' }), { namespace: 'ns', name: 'web' });
  assert.deepEqual(podOf({ K8S_POD_NAMESPACE: 'ns', K8S_POD_NAME: 'web', K8S_POD_UID: 'u1' }), { namespace: 'ns', name: 'web', uid: 'u1' });
  assert.deepEqual(podOf({ K8S_POD_NAMESPACE: 'ns', K8S_POD_NAME: 'web', K8S_POD_UID: '' }), { namespace: 'ns', name: 'web' }, 'an empty uid is no uid');
});

test('a full node lends the upper half of its unused tail and keeps its watermark free below it', () => {
  assert.equal(lendTarget(10, 64, 16), 37, 'half of the 54 unused ordinals');
  assert.equal(lendTarget(40, 64, 16), 56, 'the watermark keeps more than half');
  assert.equal(lendTarget(60, 64, 16), undefined, 'fewer free addresses than the watermark: nothing is lent');
  assert.equal(lendTarget(64, 64, 1), undefined, 'a full block lends nothing');
  for (let limit = 1; limit <= 40; limit++) {
    for (let high = 0; high <= limit; high++) {
      for (const watermark of [0, 1, 3, 10]) {
        const from = lendTarget(high, limit, watermark);
        if (from === undefined) continue;
        const at = `high ${high} limit ${limit} watermark ${watermark}`;
        assert.ok(from - high >= watermark, `${at}: keeps its watermark`);
        assert.ok(from < limit, `${at}: lends something`);
        assert.ok(limit - from <= Math.ceil((limit - high) / 2), `${at}: lends at most half of the unused tail`);
      }
    }
  }
});

test('taking back a lent tail stops just above the highest borrowed ordinal, or takes all when none is', () => {
  assert.equal(lendFromAfterTakeBack([]), undefined);
  assert.equal(lendFromAfterTakeBack([9, 3, 5]), 10);
  assert.equal(lendFromAfterTakeBack([0]), 1);
});

test("a block's status publishes each of its own addresses by ordinal, and nothing borrowed", () => {
  const state = new NodeState();
  const v4 = heldBlock('v4', 0n);
  const v4b = heldBlock('v4', 1n);
  state.blocks.set(v4.name, v4);
  state.blocks.set(v4b.name, v4b);
  const pod = { namespace: 'ns', name: 'web', uid: 'u1' };
  state.allocations.set('net/a/eth0', allocation('a', [{ family: 'v4', address: '198.18.0.5', prefix: 24, block: v4.name }], pod));
  state.allocations.set('net/b/eth0', allocation('b', [{ family: 'v4', address: '198.18.0.7', prefix: 24, block: v4.name, claim: { name: 'v4-198-18-0-7', uid: 'c1' } }]));
  state.allocations.set('net/c/eth0', allocation('c', [{ family: 'v4', address: '198.18.0.17', prefix: 24, block: v4b.name }]));
  const published = statusAllocations([v4.name, 'v4-198-18-0-32-28'], state.allocations, state.blocks);
  assert.deepEqual(Object.fromEntries(published), {
    [v4.name]: { '5': { handle: 'net/a/eth0', pod } },
    'v4-198-18-0-32-28': {},
  });
  assert.ok(!published.has(v4b.name), 'only the blocks asked for');
});

test('CNI CHECK: unknown attachment, addresses other than expected, or a block no longer held', () => {
  const blocks = new Map<string, BlockState>();
  const v4 = heldBlock('v4', 0n);
  const v6 = heldBlock('v6', 0n);
  blocks.set(v4.name, v4);
  const req: IpamRequest = { command: 'CHECK', network: 'net', containerID: 'a', ifname: 'eth0' };
  const alloc = allocation('a', [
    { family: 'v4', address: '198.18.0.5', prefix: 24, block: v4.name },
    { family: 'v6', address: '2001:db8::5', prefix: 120, block: v6.name, claim: { name: 'x', uid: 'c1' } },
  ]);
  assert.equal(checkProblem(req, undefined, blocks)?.code, CNI_ERR.containerUnknown);
  assert.equal(checkProblem(req, alloc, blocks), undefined, 'a borrowed address needs no block of ours');
  assert.equal(checkProblem({ ...req, expected: ['2001:db8::5/120', '198.18.0.5/24'] }, alloc, blocks), undefined, 'order does not matter');
  const mismatch = checkProblem({ ...req, expected: ['198.18.0.6/24', '2001:db8::5/120'] }, alloc, blocks);
  assert.equal(mismatch?.code, CNI_ERR.addressMismatch);
  assert.match(mismatch!.msg, /holds 198\.18\.0\.5\/24, 2001:db8::5\/120, the runtime expects 198\.18\.0\.6\/24/);
  blocks.delete(v4.name);
  const lost = checkProblem(req, alloc, blocks);
  assert.equal(lost?.code, CNI_ERR.addressMismatch);
  assert.match(lost!.msg, /198\.18\.0\.5 is in block v4-198-18-0-0-28, which this node no longer holds/);
});

test('usage rows: blocks and free addresses per pool and family, borrowed addresses counted in use', () => {
  const state = new NodeState();
  const v4 = heldBlock('v4', 0n);
  state.blocks.set(v4.name, v4);
  const taken = state.takeLocal(dualStack.name, 'v4')!;
  state.allocations.set('net/a/eth0', allocation('a', [
    { family: 'v4', address: taken.block.address(taken.ordinal), prefix: 24, block: v4.name },
    { family: 'v6', address: '2001:db8::5', prefix: 120, block: 'v6-2001-db8-0-0-0-0-0-0-124', claim: { name: 'x', uid: 'c1' } },
  ]));
  assert.deepEqual(state.usage(), [
    { pool: 'p', family: 'v4', blocks: 1, inUse: 1, free: 16 - 1 - 1 }, // the range's network address is never handed out
    { pool: 'p', family: 'v6', blocks: 0, inUse: 1, free: 0 },
  ]);
});

test('work on one handle runs in arrival order, after a failure too, and never holds up another handle', async () => {
  const queue = new HandleQueue();
  const events: string[] = [];
  let open!: () => void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  const first = queue.run('net/a/eth0', async () => {
    events.push('a1 start');
    await gate;
    events.push('a1 end');
    throw new Error('a1 failed');
  });
  const second = queue.run('net/a/eth0', async () => {
    events.push('a2');
    return 2;
  });
  const other = queue.run('net/b/eth0', async () => {
    events.push('b');
    return 3;
  });
  assert.equal(await other, 3);
  assert.deepEqual(events, ['a1 start', 'b'], 'the second call on a waits; b does not');
  open();
  await assert.rejects(first, /a1 failed/);
  assert.equal(await second, 2);
  assert.deepEqual(events, ['a1 start', 'b', 'a1 end', 'a2']);
});
