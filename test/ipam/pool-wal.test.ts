/** Pure parts of IPAM: pool validation (errors name the pool and field), block and claim names,
 * reserved addresses, label selectors, the write-ahead record's replay and torn-line handling. */
import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { matchesSelector } from '../../src/ipam/objects';
import { addressClaimName, blockCidr, blockCount, blockName, overlappingPools, parseBlockName, parsePool, reservedInRange } from '../../src/ipam/pool';
import { replay, Wal, WalError } from '../../src/ipam/wal';
import { pool } from './cluster';

test('pools: defaults, validation errors name the pool and field, overlaps', () => {
  const p = parsePool(pool('p', ['198.18.0.0/16', '2001:db8::/64']));
  assert.deepEqual(p.ranges.map((r) => [r.family, r.blockPrefix]), [['v4', 26], ['v6', 122]]);
  assert.equal(blockCount(p.ranges[0]), 1024n);
  assert.throws(() => parsePool(pool('bad', ['198.18.0.1/16'])), /IPPool bad: spec.cidrs\[0\]: "198.18.0.1\/16" is not a CIDR with its host bits clear/);
  assert.throws(() => parsePool(pool('bad', ['198.18.0.0/16'], { ipv4: 8 })), /IPPool bad: spec.blockSize.ipv4: 8 is not a prefix length from 16 to 32/);
  assert.throws(() => parsePool(pool('bad', ['198.18.0.0/28'], { ipv4: 26 })), /smaller than one \/26 block/);
  assert.throws(() => parsePool(pool('bad', [])), /spec.cidrs must list at least one CIDR/);
  assert.throws(() => parsePool(pool('bad', ['198.18.0.0/16', '198.18.1.0/24'])), /spec.cidrs\[1\] overlaps spec.cidrs\[0\]/);
  assert.deepEqual(overlappingPools([parsePool(pool('a', ['198.18.0.0/16'])), parsePool(pool('b', ['198.18.255.0/24'])), parsePool(pool('c', ['198.19.0.0/16']))]), [['a', 'b']]);
});

test('block and claim names come from the CIDR alone and round-trip', () => {
  const p = parsePool(pool('p', ['198.18.0.0/16', '2001:db8::/64']));
  const v4 = blockCidr(p.ranges[0], 5n);
  assert.equal(blockName(v4), 'v4-198-18-1-64-26');
  assert.deepEqual(parseBlockName('v4-198-18-1-64-26'), v4);
  const v6 = blockCidr(p.ranges[1], 3n);
  assert.equal(blockName(v6), 'v6-2001-db8-0-0-0-0-0-c0-122');
  assert.deepEqual(parseBlockName(blockName(v6)), v6);
  assert.equal(addressClaimName('v4', v4.first + 1n), 'v4-198-18-1-65');
  for (const n of [blockName(v4), blockName(v6)]) assert.match(n, /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, 'a DNS-1123 subdomain');
  assert.equal(reservedInRange(p.ranges[0], p.ranges[0].cidr.first), true);
  assert.equal(reservedInRange(p.ranges[0], p.ranges[0].cidr.last), true);
  assert.equal(reservedInRange(p.ranges[0], p.ranges[0].cidr.first + 1n), false);
  assert.equal(reservedInRange(p.ranges[1], p.ranges[1].cidr.first), true);
});

test('label selectors: matchLabels and every operator; unknown operators match nothing', () => {
  const labels = { zone: 'a', gpu: 'yes' };
  assert.ok(matchesSelector({ matchLabels: { zone: 'a' } }, labels));
  assert.ok(!matchesSelector({ matchLabels: { zone: 'b' } }, labels));
  assert.ok(matchesSelector({ matchExpressions: [{ key: 'zone', operator: 'In', values: ['a', 'b'] }, { key: 'gpu', operator: 'Exists' }] }, labels));
  assert.ok(!matchesSelector({ matchExpressions: [{ key: 'zone', operator: 'NotIn', values: ['a'] }] }, labels));
  assert.ok(!matchesSelector({ matchExpressions: [{ key: 'gpu', operator: 'DoesNotExist' }] }, labels));
  assert.ok(!matchesSelector({ matchExpressions: [{ key: 'gpu', operator: 'Gt', values: ['1'] }] }, labels));
});

test('write-ahead record: replay, compaction, torn last line dropped, damage elsewhere refused', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-wal-'));
  const path = join(dir, 'n.wal');
  const alloc = (id: string) => ({ network: 'n', containerID: id, ifname: 'eth0', pool: 'p', ips: [{ family: 'v4' as const, address: `198.18.0.${id.length}`, prefix: 16, block: 'b' }], at: 1 });
  const { wal } = await Wal.open(path);
  await Promise.all([wal.append([{ op: 'add', key: 'a', alloc: alloc('a') }]), wal.append([{ op: 'add', key: 'bb', alloc: alloc('bb') }])]);
  await wal.append([{ op: 'del', key: 'a' }]);
  await wal.close();
  assert.deepEqual([...replay(path).keys()], ['bb']);
  appendFileSync(path, '{"op":"add","key":"torn","al');
  assert.deepEqual([...replay(path).keys()], ['bb'], 'a torn last line was never acknowledged');
  const reopened = await Wal.open(path);
  assert.deepEqual([...reopened.live.keys()], ['bb']);
  await reopened.wal.close();
  writeFileSync(path, `${JSON.stringify({ op: 'add', key: 'x', alloc: alloc('x') })}\ngarbage\n{"op":"del","key":"x"}\n`);
  assert.throws(() => replay(path), (e: unknown) => e instanceof WalError && /n\.wal:2: damaged/.test((e as Error).message));
});
