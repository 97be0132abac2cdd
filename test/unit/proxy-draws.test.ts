/** The proxy's endpoint choice (src/proxy/render.ts): each endpoint of a load-balancing chain gets
 * an equal share of the chain's 65536 draws, as ranges of one interval map that every chain of a
 * block shares; ranges that touch (one endpoint's last draw, the next one's first; one chain's
 * last, the next chain's first) read back from the kernel's start/end elements unchanged. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kernelElements, userElements } from '../../src/nft/codec';
import { NftSet, SetElement } from '../../src/nft/types';
import { elementKey } from '../../src/ruleset/model';
import { DRAWS, DRAW_BLOCKS, drawShares, drawSlot } from '../../src/proxy/render';

const rank = (key: Buffer) => key.readUInt16BE(2);

test('n endpoints split the draws into n touching ranges differing in size by at most one', () => {
  for (const n of [1, 2, 3, 5, 7, 50, 1000]) {
    const shares = drawShares(0x1234, n);
    assert.equal(shares.length, n);
    let next = 0;
    const sizes = shares.map(([first, last]) => {
      assert.equal(first.readUInt16BE(0), 0x1234, 'the id leads the key');
      assert.equal(rank(first), next, 'ranges touch');
      next = rank(last) + 1;
      return rank(last) - rank(first) + 1;
    });
    assert.equal(next, DRAWS, 'every draw is covered');
    assert.ok(Math.max(...sizes) - Math.min(...sizes) <= 1, `${n}: ${Math.min(...sizes)}..${Math.max(...sizes)}`);
  }
});

test('touching ranges of several chains read back from start/end elements as written', () => {
  const set: NftSet = { family: 'inet', table: 't', name: 'endpoint-addrs-v4-0', key: ['integer'], flags: 1, data: 'ipv4_addr' };
  const written: SetElement[] = [];
  for (const id of [7, 8, 9]) {
    drawShares(id, id - 4).forEach(([key, keyEnd], i) => written.push({ key, keyEnd, data: Buffer.from([198, 18, id, i]) }));
  }
  // The kernel dumps its start and end elements in any order.
  const dumped = kernelElements(set, written).reverse();
  const back = userElements(set, dumped);
  assert.deepEqual(back.map(elementKey).sort(), written.map(elementKey).sort());
  assert.deepEqual(new Map(back.map((e) => [elementKey(e), e.data])), new Map(written.map((e) => [elementKey(e), e.data])));
});

test('a chain draw slot is a function of its name alone', () => {
  const a = drawSlot('service-v4-x/web/tcp/http');
  assert.deepEqual(drawSlot('service-v4-x/web/tcp/http'), a);
  assert.notDeepEqual(drawSlot('local-v4-x/web/tcp/http'), a);
  assert.ok(a.block >= 0 && a.block < DRAW_BLOCKS && a.id >= 0 && a.id < 65536);
});
