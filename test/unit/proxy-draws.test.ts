/** The proxy's endpoint choice (src/proxy/render.ts): each endpoint of a load-balancing chain gets
 * an equal share of the chain's 65536 draws, as ranges of one interval map that every chain of a
 * block shares; ranges that touch (one endpoint's last draw, the next one's first; one chain's
 * last, the next chain's first) read back from the kernel's start/end elements unchanged. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { kernelElements, userElements } from '../../src/nft/objects/element';
import { NftSet, SetElement } from '../../src/nft/types';
import { ChangeScope } from '../../src/pipeline/scope';
import { ProxyComponent } from '../../src/proxy/component';
import { DRAWS, DRAW_BLOCKS, drawShareKey, drawShares, drawSlot, servicePortNames } from '../../src/proxy/render';
import { applyDiff, cloneModel, diffRulesets, isEmptyDiff } from '../../src/ruleset/diff';
import { elementKey, RulesetModel } from '../../src/ruleset/model';
import { endpoint, node, service, slice, snapshotOf } from '../proxy/fixtures';

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

test("a share's key, spelled from its numbers, is the elementKey of its element", () => {
  for (const [id, n] of [[0, 1], [0xffff, 3], [0x1234, 50], [0xabc, 65536]] as const) {
    drawShares(id, n).forEach(([key, keyEnd], i) => {
      const first = Math.floor((i * DRAWS) / n);
      const last = Math.floor(((i + 1) * DRAWS) / n) - 1;
      assert.equal(drawShareKey(id, first, last), elementKey({ key, keyEnd }), `${id} ${n} ${i}`);
    });
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

/** Two service names whose cluster chains hash to the same draw slot. */
function collidingNames(): [string, string] {
  const seen = new Map<string, string>();
  for (let i = 0; ; i++) {
    const name = `c${i}`;
    const slot = drawSlot(servicePortNames({ fam: 'v4', name: `x/${name}/tcp/http` }).cluster);
    const key = `${slot.block} ${slot.id}`;
    const other = seen.get(key);
    if (other) return [other, name];
    seen.set(key, name);
  }
}

test('chains that share a draw slot both dispatch through endpoint chains; alone again, one takes the slot back; incremental == full render', () => {
  const [a, b] = collidingNames();
  const svc = (name: string, i: number) => service('x', name, { clusterIPs: [`198.19.0.${i}`] });
  const sl = (name: string, i: number) => slice('x', `${name}-a`, name, { endpoints: [endpoint(`198.18.${i}.1`, 'node-2'), endpoint(`198.18.${i}.2`, 'node-2')] });
  const nodes = [node('node-1', { podCIDRs: ['198.18.0.0/16'] })];
  const proxy = new ProxyComponent({ nodeName: 'node-1' });
  proxy.start(snapshotOf([svc(a, 1)], [sl(a, 1)], nodes));
  const committed = cloneModel(proxy.desired);
  const usesDraws = (m: RulesetModel, name: string) => m.chains.get(`service-v4-x/${name}/tcp/http`)!.rules.some((r) => r.exprs.some((e) => e.type === 'numgen' && e.modulus === DRAWS));
  const step = (change: Parameters<ProxyComponent['apply']>[0], services: string[], slices = services) => {
    const scope = new ChangeScope();
    proxy.apply(change, scope);
    applyDiff(committed, proxy.desired, diffRulesets(committed, proxy.desired, scope));
    const full = new ProxyComponent({ nodeName: 'node-1' });
    full.start(snapshotOf(services.map((n) => svc(n, n === a ? 1 : 2)), slices.map((n) => sl(n, n === a ? 1 : 2)), nodes));
    assert.ok(isEmptyDiff(diffRulesets(proxy.desired, full.desired)), 'incremental == full render');
    assert.ok(isEmptyDiff(diffRulesets(committed, full.desired)), 'the scoped diffs reach it');
  };
  assert.ok(usesDraws(proxy.desired, a));
  step({ kind: 'Service', type: 'upsert', key: `x/${b}`, object: svc(b, 2) }, [a, b], [a]);
  step({ kind: 'EndpointSlice', type: 'upsert', key: `x/${b}-a`, object: sl(b, 2) }, [a, b]);
  assert.ok(!usesDraws(proxy.desired, a) && !usesDraws(proxy.desired, b), 'neither holds the shared slot');
  assert.ok(proxy.desired.sets.has(`endpoints-service-v4-x/${a}/tcp/http`) && proxy.desired.sets.has(`endpoints-service-v4-x/${b}/tcp/http`));
  step({ kind: 'Service', type: 'delete', key: `x/${a}`, object: svc(a, 1) }, [b], [a, b]);
  assert.ok(usesDraws(proxy.desired, b), 'alone again, b takes the slot');
  assert.ok(![...proxy.desired.chains.keys()].some((c) => c.startsWith('endpoint-')), 'no endpoint chain is left');
});
