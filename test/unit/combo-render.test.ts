/** Combination chains and per-address deny counters, without a kernel: pods isolated by the same
 * policies share one chain; moving a pod between combinations is a vmap element change; a chain
 * appears with its first pod and goes with its last, each its own small change; the counter sets
 * hold the vmaps' addresses; several port matches of a rule entry are one set; set and element stateful expressions survive the codec, their
 * values never make a difference, and hostile element bytes give a value or a DecodeError. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DesiredTable } from '../../src/policy/render/desired';
import { policyCounterRows } from '../../src/policy/metrics-bridge';
import { comboChainName, policyChainName, portSetName, Renderer } from '../../src/policy/render/render';
import { podAtOf } from '../../src/explain/counters';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { AttrWriter } from '../../src/netlink/attr';
import { DecodeError } from '../../src/netlink/errors';
import * as b from '../../src/nft/build';
import * as C from '../../src/nft/constants';
import { encodeExprNest } from '../../src/nft/expr';
import { formatRule, formatSet } from '../../src/nft/format';
import { decodeSet, decodeSetElements, encodeSet } from '../../src/nft/objects';
import { NFPROTO, NftSet, Rule, SetElement } from '../../src/nft/types';
import { ipv4 } from '../../src/net/ip-bytes';
import { ChangeScope } from '../../src/pipeline/scope';
import { PolicyEngine } from '../../src/policy/engine/engine';
import { diffRulesets, isEmptyDiff } from '../../src/ruleset/diff';
import { elementKey, sameElementValue, sameSetDefinition } from '../../src/ruleset/model';
import { namespace, NODE, pod, policy } from '../agent/fixtures';
import { mulberry32 } from '../helpers/prng';

function world() {
  const engine = new PolicyEngine(NODE);
  engine.upsertNamespace(normalizeNamespace(namespace('x')));
  engine.upsertPolicy(normalizeNetworkPolicy(policy('x', 'deny-db', { podSelector: { matchLabels: { role: 'db' } }, policyTypes: ['Ingress'] })));
  engine.upsertPolicy(normalizeNetworkPolicy(policy('x', 'deny-hot', { podSelector: { matchLabels: { tier: 'hot' } }, policyTypes: ['Ingress'] })));
  engine.upsertPod(normalizePod(pod('x', 'a', '198.18.0.2', { role: 'db' })));
  engine.upsertPod(normalizePod(pod('x', 'b', '198.18.0.3', { role: 'db' })));
  return engine;
}

const combos = (names: Iterable<string>) => [...names].filter((n) => n.startsWith('combo_'));

test('pods isolated by the same policies share one chain; counter sets hold the vmap addresses', () => {
  const engine = world();
  const r = new Renderer({ table: 'nfkube', denyAction: 'drop' });
  const m = r.full(engine.state());
  assert.equal(combos(m.chains.keys()).length, 1);
  const ids = [...engine.state().policies.values()].filter((p) => p.name === 'deny-db').map((p) => p.id);
  const shared = comboChainName(ids, 'ingress');
  assert.ok(m.chains.has(shared));
  for (const a of ['198.18.0.2', '198.18.0.3']) {
    assert.deepEqual(m.sets.get('ingress_v4')!.elements.get(ipv4(a).toString('hex'))!.verdict, { kind: 'goto', chain: shared });
    assert.deepEqual(m.sets.get('deny_in_v4')!.elements.get(ipv4(a).toString('hex')), { key: ipv4(a) });
  }
  assert.deepEqual([...m.sets.get('deny_in_v4')!.elements.keys()].sort(), [...m.sets.get('ingress_v4')!.elements.keys()].sort());
  assert.equal(m.sets.get('deny_out_v4')!.elements.size, 0, 'nobody is isolated for egress');
  // The counter sets are dynamic and give each element a counter.
  assert.equal(m.sets.get('deny_in_v4')!.set.flags, C.NFT_SET_EVAL);
  assert.deepEqual(m.sets.get('deny_in_v4')!.set.exprs, [b.counter()]);
});

test('a pod moving between combinations is a vmap element change; a chain appears and goes on its own, and a policy chain with its first user', () => {
  const engine = world();
  const policyChain = (name: string) => policyChainName([...engine.state().policies.values()].find((p) => p.name === name)!.id, 'ingress');
  const r = new Renderer({ table: 'nfkube', denyAction: 'drop' });
  const desired = new DesiredTable(r, engine.state());
  const shared = combos(desired.model.chains.keys())[0];
  const before = structuredClone([...desired.model.chains.keys()]);
  const committed = r.full(engine.state());

  // deny-hot isolates no pod of this node: it has no chain yet.
  assert.equal(desired.model.chains.has(policyChain('deny-hot')), false);
  // a joins deny-hot: its own combination (deny-db + deny-hot) appears, and deny-hot's chain with it.
  let scope = new ChangeScope();
  desired.apply(engine.upsertPod(normalizePod(pod('x', 'a', '198.18.0.2', { role: 'db', tier: 'hot' }))), scope);
  let d = diffRulesets(committed, desired.model, scope);
  assert.equal(d.addChains.length, 2);
  const own = d.addChains.find((c) => c.startsWith('combo_'))!;
  assert.deepEqual(d.addChains.filter((c) => c !== own), [policyChain('deny-hot')]);
  assert.ok(own !== shared);
  assert.deepEqual([d.removeChains, d.rewriteChains, d.addSets, d.removeSets, d.replaceSets], [[], [], [], [], []]);
  assert.deepEqual([...d.addElements.keys()], ['ingress_v4'], 'only the vmap: the counter element stays');
  assert.deepEqual([...d.removeElements.keys()], ['ingress_v4']);
  assert.deepEqual(d.addElements.get('ingress_v4')![0].verdict, { kind: 'goto', chain: own });
  assert.deepEqual(desired.model, r.full(engine.state()), 'equals a full render');
  const afterMove = r.full(engine.state());

  // b joins too: the same combination, nothing but b's vmap element.
  scope = new ChangeScope();
  desired.apply(engine.upsertPod(normalizePod(pod('x', 'b', '198.18.0.3', { role: 'db', tier: 'hot' }))), scope);
  d = diffRulesets(afterMove, desired.model, scope);
  assert.deepEqual([d.addChains, d.rewriteChains], [[], []]);
  assert.deepEqual(d.removeChains, [shared], 'the shared chain goes with its last pod');
  assert.deepEqual([...d.addElements.keys()], ['ingress_v4']);
  assert.deepEqual(desired.model, r.full(engine.state()));

  // Both leave deny-hot again: back where they started.
  scope = new ChangeScope();
  desired.apply(engine.upsertPod(normalizePod(pod('x', 'a', '198.18.0.2', { role: 'db' }))), scope);
  desired.apply(engine.upsertPod(normalizePod(pod('x', 'b', '198.18.0.3', { role: 'db' }))), scope);
  assert.deepEqual([...desired.model.chains.keys()].sort(), before.sort());
  assert.ok(isEmptyDiff(diffRulesets(committed, desired.model)));

  // The last pod leaves: its chain, the chain of the policy no pod uses now, and its counter
  // elements go.
  scope = new ChangeScope();
  desired.apply(engine.deletePod(normalizePod(pod('x', 'a', '198.18.0.2', { role: 'db' }))), scope);
  desired.apply(engine.deletePod(normalizePod(pod('x', 'b', '198.18.0.3', { role: 'db' }))), scope);
  d = diffRulesets(committed, desired.model, scope);
  assert.deepEqual(d.removeChains.sort(), [shared, policyChain('deny-db')].sort());
  assert.deepEqual([...d.removeElements.keys()].sort(), ['deny_in_v4', 'ingress_v4']);
  assert.equal(desired.model.sets.get('deny_in_v4')!.elements.size, 0);
});

test('podAt names the holder of an address; counter rows attribute each address to its pod', () => {
  const engine = world();
  const ir = engine.state();
  const desired = new DesiredTable(new Renderer({ table: 'nfkube', denyAction: 'reject' }), ir);
  assert.equal(desired.podAt('198.18.0.2', 'ingress'), 'x/a');
  assert.equal(desired.podAt('198.18.0.2', 'egress'), undefined, 'not isolated for egress');
  assert.equal(desired.podAt('not an address', 'ingress'), undefined);
  const podAt = podAtOf(ir);
  assert.equal(podAt('198.18.0.3', 'ingress'), 'x/b');
  const counted = (addr: string, packets: bigint): SetElement => ({ key: ipv4(addr), exprs: [{ type: 'counter', packets, bytes: packets * 100n }] });
  const rules: Rule[] = [...desired.model.chains.values()].flatMap((c) => c.rules);
  const read = policyCounterRows(rules, new Map([['deny_in_v4', [counted('198.18.0.2', 3n), counted('198.18.0.3', 5n), counted('198.18.0.99', 7n)]], ['audited_in_v4', [counted('198.18.0.3', 2n)]]]), podAt);
  assert.deepEqual(read.rows, [
    { namespace: 'x', pod: 'a', direction: 'ingress', packets: 3n, bytes: 300n, verdict: 'reject' },
    { namespace: 'x', pod: 'b', direction: 'ingress', packets: 5n, bytes: 500n, verdict: 'reject' },
  ]);
  assert.deepEqual(read.audited, [{ namespace: 'x', pod: 'b', direction: 'ingress', packets: 2n, bytes: 200n }]);
});

/** An element list as the kernel dumps it, each element with its counter (NFTA_SET_ELEM_EXPR). */
function counterDump(set: NftSet, elems: { key: Buffer; packets: bigint }[]): Buffer {
  const w = new AttrWriter();
  w.str(C.NFTA_SET_ELEM_LIST_TABLE, set.table).str(C.NFTA_SET_ELEM_LIST_SET, set.name);
  const list = w.beginNest(C.NFTA_SET_ELEM_LIST_ELEMENTS);
  for (const e of elems) {
    const item = w.beginNest(C.NFTA_LIST_ELEM);
    const key = w.beginNest(C.NFTA_SET_ELEM_KEY);
    w.bytes(C.NFTA_DATA_VALUE, e.key);
    w.endNest(key);
    encodeExprNest(w, C.NFTA_SET_ELEM_EXPR, { type: 'counter', packets: e.packets, bytes: e.packets * 60n });
    w.endNest(item);
  }
  w.endNest(list);
  return w.finish();
}

test('codec: a set with a counter per element round-trips; element counters decode and never make a difference', () => {
  const set: NftSet = { family: 'inet', table: 'nfkube', name: 'deny_in_v4', key: ['ipv4_addr'], flags: C.NFT_SET_EVAL, exprs: [b.counter()] };
  const w = new AttrWriter();
  encodeSet(w, set);
  const back = decodeSet(NFPROTO.inet, w.finish());
  assert.deepEqual(back.exprs, [b.counter()]);
  assert.ok(sameSetDefinition(back, set));
  assert.ok(!sameSetDefinition({ ...back, exprs: undefined }, set), 'a set without counters is another definition');
  const elems = decodeSetElements(counterDump(set, [{ key: ipv4('198.18.0.2'), packets: 9n }])).elements;
  assert.deepEqual(elems, [{ key: ipv4('198.18.0.2'), exprs: [{ type: 'counter', packets: 9n, bytes: 540n }] }]);
  assert.equal(elementKey(elems[0]), ipv4('198.18.0.2').toString('hex'));
  assert.ok(sameElementValue(elems[0], { key: ipv4('198.18.0.2') }), 'counter values are state, not value');
  // Several expressions come as NFTA_SET_ELEM_EXPRESSIONS.
  const list = new AttrWriter();
  list.str(C.NFTA_SET_ELEM_LIST_TABLE, 'nfkube').str(C.NFTA_SET_ELEM_LIST_SET, 'deny_in_v4');
  const l = list.beginNest(C.NFTA_SET_ELEM_LIST_ELEMENTS);
  const item = list.beginNest(C.NFTA_LIST_ELEM);
  const key = list.beginNest(C.NFTA_SET_ELEM_KEY);
  list.bytes(C.NFTA_DATA_VALUE, ipv4('198.18.0.3'));
  list.endNest(key);
  const exprs = list.beginNest(C.NFTA_SET_ELEM_EXPRESSIONS);
  encodeExprNest(list, C.NFTA_LIST_ELEM, { type: 'counter', packets: 1n, bytes: 2n });
  encodeExprNest(list, C.NFTA_LIST_ELEM, { type: 'counter', packets: 3n, bytes: 4n });
  list.endNest(exprs);
  list.endNest(item);
  list.endNest(l);
  assert.equal(decodeSetElements(list.finish()).elements[0].exprs?.length, 2);
});

test('fuzz: mutated element dumps with counters give elements or a DecodeError, never another exception', () => {
  const set: NftSet = { family: 'inet', table: 'nfkube', name: 'deny_in_v4', key: ['ipv4_addr'], flags: C.NFT_SET_EVAL, exprs: [b.counter()] };
  const clean = counterDump(set, [
    { key: ipv4('198.18.0.2'), packets: 1n },
    { key: ipv4('198.18.0.3'), packets: 2n },
  ]);
  const rand = mulberry32(0xc0b0);
  let decoded = 0;
  let refused = 0;
  for (let i = 0; i < 3000; i++) {
    const bytes = Buffer.from(clean);
    for (let k = 0; k < 1 + rand() * 4; k++) bytes[Math.floor(rand() * bytes.length)] = Math.floor(rand() * 256);
    const cut = rand() < 0.2 ? bytes.subarray(0, Math.floor(rand() * bytes.length)) : bytes;
    try {
      decodeSetElements(cut);
      decoded++;
    } catch (err) {
      assert.ok(err instanceof DecodeError, `trial ${i}: ${(err as Error).name}: ${(err as Error).message}`);
      refused++;
    }
  }
  assert.ok(decoded > 30 && refused > 30, `${decoded} decoded, ${refused} refused`);
});

test('a rule entry of several port matches is one set of protocol . port ranges, shared by content, and one rule per peer', () => {
  const engine = world();
  const ports = [{ protocol: 'TCP', port: 80 }, { protocol: 'UDP', port: 53, endPort: 60 }, { protocol: 'SCTP' }];
  const withPorts = (name: string, list: object[]) =>
    normalizeNetworkPolicy(policy('x', name, { podSelector: { matchLabels: { role: 'db' } }, ingress: [{ from: [{ podSelector: { matchLabels: { role: 'client' } } }], ports: list }] }));
  engine.upsertPolicy(withPorts('ports', ports));
  engine.upsertPolicy(withPorts('same-ports', [...ports].reverse()));
  const r = new Renderer({ table: 'nfkube', denyAction: 'drop' });
  const m = r.full(engine.state());
  const portSets = () => [...m.sets.keys()].filter((n) => n.startsWith('ports_'));
  assert.equal(portSets().length, 1, 'the two entries share one set');
  const set = m.sets.get(portSets()[0])!;
  assert.deepEqual(set.set.key, ['inet_proto', 'inet_service']);
  assert.equal(set.set.flags, C.NFT_SET_INTERVAL);
  assert.equal(set.set.name, portSetName(set.elements.keys()));
  const text = formatSet(set.set, [...set.elements.values()]);
  assert.match(text, /elements = \{ tcp \. 80,\n\s+udp \. 53-60,\n\s+sctp \. 0-65535 \}/);
  const p = [...engine.state().policies.values()].find((x) => x.name === 'ports')!;
  const rules = m.chains.get(`pol_${p.id}_in`)!.rules;
  assert.equal(rules.length, 2, 'one rule per peer family, not per port');
  assert.match(formatRule(rules[0]), new RegExp(`ip saddr @\\w+_v4 meta l4proto \\. th dport @${set.set.name} counter packets 0 bytes 0 accept`));
  // Edited to one port, the policy no longer uses the set, which stays for the other; when the
  // other goes too, the set goes. The desired table follows with scoped changes.
  const desired = new DesiredTable(r, engine.state());
  let scope = new ChangeScope();
  desired.apply(engine.upsertPolicy(withPorts('ports', [{ protocol: 'TCP', port: 80 }])), scope);
  assert.ok(desired.model.sets.has(set.set.name));
  assert.deepEqual(desired.model, r.full(engine.state()));
  let d = diffRulesets(m, desired.model, scope);
  assert.deepEqual([d.removeSets, d.rewriteChains], [[], [`pol_${p.id}_in`]]);
  const committed = r.full(engine.state());
  scope = new ChangeScope();
  desired.apply(engine.deletePolicy(withPorts('same-ports', ports)), scope);
  assert.deepEqual(desired.model, r.full(engine.state()));
  d = diffRulesets(committed, desired.model, scope);
  assert.deepEqual(d.removeSets, [set.set.name]);
});

test('port ranges of one protocol that overlap or touch are one element (an interval set refuses overlaps)', () => {
  const engine = world();
  engine.upsertPolicy(
    normalizeNetworkPolicy(
      policy('x', 'overlap', {
        podSelector: { matchLabels: { role: 'db' } },
        ingress: [{ ports: [{ protocol: 'TCP', port: 80 }, { protocol: 'TCP', port: 80, endPort: 90 }, { protocol: 'TCP', port: 91 }, { protocol: 'UDP', port: 53 }, { protocol: 'TCP', port: 100 }, { protocol: 'TCP', port: 85 }] }],
      }),
    ),
  );
  const m = new Renderer({ table: 'nfkube', denyAction: 'drop' }).full(engine.state());
  const set = [...m.sets.values()].find((s) => s.set.name.startsWith('ports_'))!;
  assert.match(formatSet(set.set, [...set.elements.values()]), /elements = \{ tcp \. 80-91,\n\s+tcp \. 100,\n\s+udp \. 53 \}/);
});
