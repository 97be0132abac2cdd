import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as b from '../../src/nft/build';
import * as C from '../../src/nft/constants';
import { isGenerationMismatch, NetlinkError } from '../../src/netlink/errors';
import { NetlinkSocket } from '../../src/netlink/socket';
import { listElements, listTable } from '../../src/nft/readback';
import { getGeneration } from '../../src/nft/generation';
import { commit, Transaction } from '../../src/nft/transaction';
import { Chain, Expr, NftSet, Rule, SetElement, Table, TableContents } from '../../src/nft/types';
import { cidrRange, ipv4, ipv6 } from '../../src/net/ip-bytes';
import { be16, concatKey } from '../../src/nft/values';
import { formatTable } from '../../src/nft/format';
import { canonicalExprs } from '../../src/nft/canonical';
import { withSandbox } from '../helpers/netns';

const table: Table = { family: 'inet', name: 'nfk' };
const chain = (name: string, base?: Chain['base']): Chain => ({ family: 'inet', table: 'nfk', name, base });
const rule = (chainName: string, exprs: Expr[], comment?: string): Rule => ({ family: 'inet', table: 'nfk', chain: chainName, exprs, comment });
const set = (name: string, fields: Partial<NftSet>): NftSet => ({ family: 'inet', table: 'nfk', name, key: ['ipv4_addr'], flags: 0, ...fields });

function hostAddr(i: number): string {
  return `198.18.${(i >> 8) & 0xff}.${i & 0xff}`;
}

const peers = set('peers', {});
const nets = set('nets', { flags: C.NFT_SET_INTERVAL });
const nets6 = set('nets6', { key: ['ipv6_addr'], flags: C.NFT_SET_INTERVAL });
const svc = set('svc', { key: ['ipv4_addr', 'inet_proto', 'inet_service'] });
const ranges = set('ranges', { key: ['inet_proto', 'inet_service'], flags: C.NFT_SET_INTERVAL });
const pods = set('pods', { data: 'verdict' });

const PEERS = 10_000;

function everyExpressionRules(): Rule[] {
  // One rule per expression kind nfkube models, in shapes the kernel accepts.
  return [
    rule('input', [...b.ctState(['established', 'related']), b.counter(), b.accept()], 'conntrack'),
    rule('input', [...b.matchAddrInSet('ip saddr', 'peers'), b.accept()]),
    rule('input', [...b.matchAddrInSet('ip saddr', 'nets', true), b.drop()]),
    rule('input', [...b.matchPort('tcp', 'th dport', 8000, 8080), b.jump('pol_a')]),
    rule('input', [...b.concatLoads(['ip saddr', 'meta l4proto', 'th dport']).exprs, b.lookup('svc'), b.goto('pol_a')]),
    rule('input', [...b.nfproto('ipv4'), b.load('ip daddr'), b.vmap('pods')]),
    rule('pol_a', [{ type: 'limit', rate: 10n, unit: 1n, burst: 5, limitType: 'pkts', flags: 0 }, { type: 'log', prefix: 'nfk ', group: 2 }, b.verdict({ kind: 'return' })]),
    rule('pol_a', [...b.nfproto('ipv4'), b.load('ip saddr'), { type: 'bitwise', sreg: 1, dreg: 1, len: 4, op: 'bool', mask: Buffer.from([255, 255, 0, 0]), xor: Buffer.alloc(4) }, b.verdict({ kind: 'continue' })]),
    rule('pol_a', [...b.nfproto('ipv4'), b.load('ip saddr'), { type: 'hash', hashType: 'jenkins', sreg: 1, dreg: 1, len: 4, modulus: 4, seed: 7 }, { type: 'numgen', dreg: 2, modulus: 2, ngType: 'inc', offset: 0 }, b.accept()]),
    rule('pol_a', [...b.l4proto('tcp'), b.rejectAdminProhibited()]),
    rule('post', [...b.nfproto('ipv4'), { type: 'immediate', dreg: 1, data: ipv4('198.18.0.1') }, { type: 'nat', natType: 'snat', family: 2, regAddrMin: 1, regAddrMax: 1, flags: 1 }]),
    rule('pol_a', [{ type: 'objref', objType: C.NFT_OBJECT_COUNTER, name: 'cnt' }, b.accept()]),
  ];
}

function buildBig(tx: Transaction): { elements: Map<string, SetElement[]> } {
  tx.addTable(table);
  for (const c of [chain('input', { hook: 'input', priority: 0, type: 'filter', policy: 'accept' }), chain('post', { hook: 'postrouting', priority: 100, type: 'nat', policy: 'accept' }), chain('pol_a')]) tx.addChain(c);
  for (const s of [peers, nets, nets6, svc, ranges, pods]) tx.addSet(s);
  const elements = new Map<string, SetElement[]>();
  elements.set('peers', Array.from({ length: PEERS }, (_, i) => ({ key: ipv4(hostAddr(i)) })));
  const r1 = cidrRange('198.19.0.0/16');
  const r2 = cidrRange('198.18.128.0/24');
  elements.set('nets', [{ key: r2.first, keyEnd: r2.last }, { key: r1.first, keyEnd: r1.last }, { key: ipv4('198.18.200.7') }]);
  const r6 = cidrRange('2001:db8:1::/48');
  elements.set('nets6', [{ key: r6.first, keyEnd: r6.last }]);
  elements.set('svc', [{ key: concatKey([ipv4('198.18.0.10'), Buffer.from([6]), be16(80)]) }, { key: concatKey([ipv4('198.18.0.11'), Buffer.from([17]), be16(53)]) }]);
  elements.set('ranges', [{ key: concatKey([Buffer.from([6]), be16(1000)]), keyEnd: concatKey([Buffer.from([6]), be16(2000)]) }]);
  elements.set('pods', [{ key: ipv4('198.18.0.2'), verdict: { kind: 'jump', chain: 'pol_a' } }, { key: ipv4('198.18.0.3'), verdict: { kind: 'drop' } }]);
  for (const s of [peers, nets, nets6, svc, ranges, pods]) tx.addElements(s, elements.get(s.name)!);
  return { elements };
}

function sortElems(e: SetElement[]): SetElement[] {
  return [...e].sort((x, y) => Buffer.compare(x.key, y.key));
}

async function snapshot(socket: NetlinkSocket): Promise<string> {
  const t = await listTable(socket, 'inet', 'nfk');
  return t ? formatTable(t) : '<none>';
}

test('a table with every expression, 10,000-element and interval sets reads back field by field', async () => {
  await withSandbox(async (sb) => {
    // objref needs a named counter; created with the oracle tool since nfkube does not model objects.
    sb.run('nft', ['add table inet nfk; add counter inet nfk cnt']);
    const tx = new Transaction();
    const { elements } = buildBig(tx);
    const rules = everyExpressionRules();
    for (const r of rules) tx.addRule(r);
    const result = await commit(sb.socket, tx);
    assert.equal(result.ruleHandles.size, rules.length, 'every new rule reports its handle');

    const back = (await listTable(sb.socket, 'inet', 'nfk')) as TableContents;
    assert.ok(back);
    assert.deepEqual(back.chains.map((c) => [c.name, c.base]), [
      ['input', { hook: 'input', priority: 0, type: 'filter', policy: 'accept' }],
      ['post', { hook: 'postrouting', priority: 100, type: 'nat', policy: 'accept' }],
      ['pol_a', undefined],
    ]);
    const byName = new Map(back.sets.map((s) => [s.name, s]));
    for (const s of [peers, nets, nets6, svc, ranges, pods]) {
      const k = byName.get(s.name)!;
      assert.deepEqual([k.key, k.data, k.flags], [s.key, s.data, s.flags], `set ${s.name} definition`);
      assert.deepEqual(sortElems(back.elements.get(s.name)!), sortElems(elements.get(s.name)!), `set ${s.name} elements`);
    }
    // The kernel lists rules chain by chain, in chain order, and in insertion order within one.
    const chainOrder = ['input', 'post', 'pol_a'];
    const expected = [...rules].sort((x, y) => chainOrder.indexOf(x.chain) - chainOrder.indexOf(y.chain));
    assert.equal(back.rules.length, expected.length);
    back.rules.forEach((got, i) => {
      assert.equal(got.chain, expected[i].chain);
      assert.equal(got.handle, result.ruleHandles.get(expected[i]));
      assert.equal(got.comment, expected[i].comment);
      assert.deepEqual(canonicalExprs(got.exprs), canonicalExprs(expected[i].exprs), `rule ${i} expressions`);
    });

    // Independent oracle: nft's own view of the same kernel state.
    const json = JSON.parse(sb.run('nft', ['-j', 'list', 'table', 'inet', 'nfk'])).nftables as Record<string, any>[];
    const oracleSets = json.filter((o) => o.set || o.map).map((o) => o.set ?? o.map);
    const oraclePeers = oracleSets.find((s) => s.name === 'peers');
    assert.equal(oraclePeers.elem.length, PEERS);
    assert.equal(json.filter((o) => o.rule).length, rules.length);
    const text = sb.run('nft', ['list', 'table', 'inet', 'nfk']);
    assert.match(text, /ip saddr @peers accept/);
    assert.match(text, /ip saddr != @nets drop/);
    assert.match(text, /tcp dport 8000-8080 jump pol_a/);
    assert.match(text, /ip saddr \. meta l4proto \. th dport @svc goto pol_a/);
    assert.match(text, /ip daddr vmap @pods/);
    assert.match(text, /198\.18\.128\.0\/24/);
    assert.match(text, /198\.19\.0\.0\/16/);
    assert.match(text, /2001:db8:1::\/48/);
    assert.match(text, /ct state established,related counter packets 0 bytes 0 accept comment "conntrack"/);
    assert.match(text, /reject with icmpx admin-prohibited/);
    assert.match(text, /198\.18\.0\.2 : jump pol_a/);
  });
});

test('a batch whose last message is invalid leaves the ruleset byte-identical', async () => {
  await withSandbox(async (sb) => {
    const tx = new Transaction();
    buildBig(tx);
    await commit(sb.socket, tx);
    const before = await snapshot(sb.socket);
    const beforeOracle = sb.run('nft', ['list', 'ruleset']);

    const bad = new Transaction();
    bad.addElements(peers, [{ key: ipv4('198.19.9.9') }]);
    bad.addChain(chain('extra'));
    bad.deleteSet(nets);
    bad.addRule(rule('input', [b.jump('no_such_chain')]));
    await assert.rejects(commit(sb.socket, bad), (err: unknown) => {
      assert.ok(err instanceof NetlinkError);
      assert.equal(err.code, 'ENOENT');
      assert.equal(err.op, 'NFT_MSG_NEWRULE');
      assert.match(err.object ?? '', /rule inet nfk input/);
      assert.equal(err.msgIndex, 3);
      return true;
    });
    assert.equal(await snapshot(sb.socket), before);
    assert.equal(sb.run('nft', ['list', 'ruleset']), beforeOracle);
  });
});

test('a reader polling during a large commit sees all of it or none of it', async () => {
  await withSandbox(async (sb) => {
    const reader = NetlinkSocket.open({ netns: sb.netns });
    try {
      const setup = new Transaction().addTable(table).addSet(peers);
      await commit(sb.socket, setup);
      const N = 50_000;
      const elems = Array.from({ length: N }, (_, i) => ({ key: ipv4(`198.${18 + (i >> 16)}.${(i >> 8) & 0xff}.${i & 0xff}`) }));
      const seen = new Set<number>();
      let done = false;
      const poll = (async () => {
        while (!done) seen.add((await listElements(reader, peers)).length);
      })();
      await new Promise((r) => setTimeout(r, 5));
      await commit(sb.socket, new Transaction().addElements(peers, elems));
      await new Promise((r) => setTimeout(r, 20));
      done = true;
      await poll;
      seen.add((await listElements(reader, peers)).length);
      assert.ok(seen.size >= 1);
      for (const n of seen) assert.ok(n === 0 || n === N, `a reader saw ${n} of ${N} elements`);
      assert.ok(seen.has(N));
    } finally {
      await reader.close();
    }
  });
});

test('a transaction computed from a stale generation is refused, then recomputed', async () => {
  await withSandbox(async (sb) => {
    await commit(sb.socket, new Transaction().addTable(table));
    const gen = await getGeneration(sb.socket);
    sb.run('nft', ['add table inet foreign']);
    const tx = new Transaction().addChain(chain('c1'));
    await assert.rejects(commit(sb.socket, tx, { genId: gen }), (err: unknown) => isGenerationMismatch(err));
    assert.equal((await listTable(sb.socket, 'inet', 'nfk'))!.chains.length, 0);
    const fresh = await getGeneration(sb.socket);
    assert.notEqual(fresh, gen);
    await commit(sb.socket, tx, { genId: fresh });
    assert.equal((await listTable(sb.socket, 'inet', 'nfk'))!.chains.length, 1);
  });
});

test('parallel transactions from many async callers are serialised', async () => {
  await withSandbox(async (sb) => {
    await commit(sb.socket, new Transaction().addTable(table).addSet(peers).addChain(chain('c')));
    const callers = Array.from({ length: 50 }, (_, i) =>
      commit(sb.socket, new Transaction().addElements(peers, [{ key: ipv4(hostAddr(i)) }]).addRule(rule('c', [...b.matchAddr('ip saddr', hostAddr(i)), b.accept()]))),
    );
    const results = await Promise.all(callers);
    const handles = results.map((r) => [...r.ruleHandles.values()][0]);
    assert.equal(new Set(handles.map(String)).size, 50, 'every caller got its own rule handle');
    const back = (await listTable(sb.socket, 'inet', 'nfk'))!;
    assert.equal(back.elements.get('peers')!.length, 50);
    assert.equal(back.rules.length, 50);
  });
});

test('rules are replaced and deleted by their echoed handles; flush empties a chain', async () => {
  await withSandbox(async (sb) => {
    const r1 = rule('c', [...b.matchAddr('ip saddr', '198.18.0.1'), b.accept()]);
    const r2 = rule('c', [...b.matchAddr('ip6 saddr', '2001:db8::1'), b.drop()]);
    const res = await commit(sb.socket, new Transaction().addTable(table).addChain(chain('c')).addRule(r1).addRule(r2));
    const h1 = res.ruleHandles.get(r1)!;
    const h2 = res.ruleHandles.get(r2)!;
    await commit(sb.socket, new Transaction().replaceRule({ ...r1, handle: h1, exprs: [...b.matchAddr('ip saddr', '198.18.0.9'), b.drop()] }).deleteRule({ ...r2, handle: h2 }));
    const text = sb.run('nft', ['list', 'chain', 'inet', 'nfk', 'c']);
    assert.match(text, /ip saddr 198\.18\.0\.9 drop/);
    assert.doesNotMatch(text, /2001:db8::1/);
    await commit(sb.socket, new Transaction().flushChain(chain('c')));
    assert.equal((await listTable(sb.socket, 'inet', 'nfk'))!.rules.length, 0);
    assert.equal(ipv6('2001:db8::1').length, 16);
  });
});
