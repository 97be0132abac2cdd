/** nft as the oracle of the rule printer, for every rule nfkube renders: for random clusters, the
 * NetworkPolicy table (both deny actions, logging, audit mode) and the service proxy table are
 * printed, loaded with `nft -f` into a fresh namespace and read back over netlink. Each rule read
 * back is the rule rendered (canonical expressions and comment) and prints to the same text. So
 * the per-kind printers write what nft parses into exactly the rendered expressions: a printer
 * whose text changed meaning would load as another rule, or print differently after the round
 * trip. The printer's goldens in nft syntax (not debug notation) load back as themselves too. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Renderer } from '../../src/policy/render/render';
import { PolicyModes } from '../../src/policy/modes';
import { sameRuleBody } from '../../src/nft/canonical';
import { formatRuleBody, formatSet, formatTable } from '../../src/nft/format';
import { listRules, listTable } from '../../src/nft/readback';
import { Rule } from '../../src/nft/types';
import { compileFull } from '../../src/policy/engine/compile';
import { ProxyComponent } from '../../src/proxy/component';
import { modelToContents, RulesetModel } from '../../src/ruleset/model';
import { withSandbox } from '../helpers/netns';
import { mulberry32 as rng } from '../helpers/prng';
import { NODE, randomChange, World } from '../helpers/random-cluster';
import { PRINTER_GOLDEN_SETS, PRINTER_GOLDENS } from '../helpers/printer-goldens';
import { ServiceWorld } from '../proxy/fixtures';

const byChain = (rules: Rule[]) => {
  const out = new Map<string, Rule[]>();
  for (const r of rules) out.set(r.chain, [...(out.get(r.chain) ?? []), r]);
  return out;
};

/** Loads the printed table with `nft -f` and compares each rule read back with the rendered one;
 * returns the kinds of expression compared. */
async function roundTrip(model: RulesetModel, what: string): Promise<Set<string>> {
  const rendered = modelToContents(model);
  return withSandbox(async (sb) => {
    sb.run('nft', ['-f', '-'], formatTable(rendered));
    const back = await listTable(sb.socket, rendered.table.family, rendered.table.name);
    assert.ok(back, `${what}: the table loads`);
    const want = byChain(rendered.rules);
    const got = byChain(back.rules);
    assert.deepEqual([...got.keys()].sort(), [...want.keys()].sort(), `${what}: chains with rules`);
    const kinds = new Set<string>();
    for (const [chain, rs] of want) {
      const gs = got.get(chain)!;
      assert.equal(gs.length, rs.length, `${what}: rules of chain ${chain}`);
      rs.forEach((r, i) => {
        const text = formatRuleBody(r.exprs);
        assert.ok(sameRuleBody(gs[i], r), `${what}, chain ${chain} rule ${i}: nft read "${text}" as "${formatRuleBody(gs[i].exprs)}"`);
        assert.equal(formatRuleBody(gs[i].exprs), text, `${what}, chain ${chain} rule ${i} prints the same after the round trip`);
        for (const e of r.exprs) kinds.add(e.type);
      });
    }
    return kinds;
  });
}

test('every rule of random NetworkPolicy tables prints as nft syntax that loads back as that rule', { timeout: 120_000 }, async () => {
  const kinds = new Set<string>();
  for (let seed = 1; seed <= 6; seed++) {
    const w = new World(rng(seed));
    for (let i = 0; i < 60; i++) randomChange(w);
    const modes = new PolicyModes(seed === 3 ? 'audit' : 'enforce');
    const renderer = new Renderer({ table: 'nfkube', denyAction: seed % 2 ? 'drop' : 'reject', log: { group: 1, rate: 10, burst: 5 }, modes });
    for (const k of await roundTrip(renderer.full(compileFull(w.inputs(), NODE), w.pods.values()), `policy seed ${seed}`)) kinds.add(k);
  }
  for (const k of ['payload', 'meta', 'ct', 'bitwise', 'cmp', 'range', 'lookup', 'immediate', 'counter', 'limit', 'log', 'reject', 'fib', 'dynset']) assert.ok(kinds.has(k), `${k} rendered and compared`);
});

test('every rule of random service proxy tables prints as nft syntax that loads back as that rule', { timeout: 120_000 }, async () => {
  const kinds = new Set<string>();
  for (let seed = 1; seed <= 4; seed++) {
    const w = new ServiceWorld(rng(seed));
    for (let i = 0; i < 40; i++) w.change();
    const proxy = new ProxyComponent({ nodeName: NODE });
    proxy.start(w.snapshot());
    for (const k of await roundTrip(proxy.desired, `proxy seed ${seed}`)) kinds.add(k);
  }
  for (const k of ['payload', 'meta', 'ct', 'bitwise', 'cmp', 'lookup', 'immediate', 'reject', 'fib', 'dynset', 'nat', 'numgen', 'byteorder', 'masq']) assert.ok(kinds.has(k), `${k} rendered and compared`);
});

test('the printer goldens in nft syntax load back with nft as the rules they print', async () => {
  const goldens = PRINTER_GOLDENS.filter((g) => g.nftSyntax !== false);
  const script = ['table inet golden {', ...PRINTER_GOLDEN_SETS.map((s) => formatSet(s)), '\tchain target { }', '\tchain rules {', ...goldens.map((g) => `\t\t${g.text}`), '\t}', '}', ''].join('\n');
  await withSandbox(async (sb) => {
    sb.run('nft', ['-f', '-'], script);
    const back = await listRules(sb.socket, 'inet', 'golden', 'rules');
    assert.equal(back.length, goldens.length);
    back.forEach((r, i) => {
      assert.ok(sameRuleBody(r, { exprs: goldens[i].exprs }), `"${goldens[i].text}" read back as "${formatRuleBody(r.exprs)}"`);
      assert.equal(formatRuleBody(r.exprs), goldens[i].text);
    });
  });
});
