/** explain's two evaluators are independent (one reads NetworkPolicy semantics off the compiled
 * intent, the other interprets the nf_tables rules and sets rendered from it): on random
 * clusters, in enforce and audit modes, they give every random flow the same verdict. And the
 * interpreter refuses what it cannot evaluate instead of guessing. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Renderer } from '../../src/policy/render/render';
import { PolicyModes } from '../../src/policy/modes';
import { FlowPacket, FlowProtocol } from '../../src/explain/flow';
import { formatPolicyCounters, PolicyCounters } from '../../src/explain/counters';
import { explainFlow, formatExplanation } from '../../src/explain/explain';
import { evaluateKernel } from '../../src/explain/kernel-verdict';
import { printable } from '../../src/log';
import type { Expr, Rule, TableContents } from '../../src/nft/types';
import { evaluateModel } from '../../src/explain/model-verdict';
import { PolicyEngine } from '../../src/policy/engine/engine';
import { modelToContents } from '../../src/ruleset/model';
import { mulberry32 as rng } from '../helpers/prng';
import { NODE, step, World } from '../helpers/random-cluster';

test('model and table verdicts agree on random clusters and flows', () => {
  let flows = 0;
  let denied = 0;
  for (let seed = 1; seed <= 30; seed++) {
    const w = new World(rng(seed));
    const engine = new PolicyEngine(NODE);
    for (let i = 0; i < 60; i++) step(w, engine);
    const ir = engine.state();
    const modes = new PolicyModes(seed % 7 === 0 ? 'audit' : 'enforce');
    if (seed % 3 === 0) modes.setNamespace({ name: 'y', labels: {}, policyMode: 'audit' });
    const table = modelToContents(new Renderer({ table: 'nfkube', denyAction: seed % 2 ? 'drop' : 'reject', log: { group: 1, rate: 10, burst: 5 }, modes }).full(ir));
    for (let i = 0; i < 300; i++) {
      const v6 = w.chance(0.4);
      const addr = () => (v6 ? `2001:db8::${Math.floor(w.rand() * 30).toString(16)}` : `198.18.0.${Math.floor(w.rand() * 30)}`);
      const p: FlowPacket = {
        family: v6 ? 'ipv6' : 'ipv4',
        src: addr(),
        dst: addr(),
        protocol: w.pick<FlowProtocol>(['tcp', 'tcp', 'udp', 'sctp']),
        dport: w.pick([80, 53, 443, 8050, 8080, 9090, 22, 1234, 0]),
        sport: 40000,
      };
      const model = evaluateModel(ir, modes, p);
      const kernel = evaluateKernel(table, p);
      flows++;
      if (!kernel.allowed) denied++;
      assert.equal(kernel.allowed, model.allowed, `seed ${seed} flow ${JSON.stringify(p)}: model ${JSON.stringify(model)}, kernel ${JSON.stringify(kernel.steps.map((s) => [s.base, s.verdict, s.path, s.rule?.comment]))}`);
    }
  }
  assert.ok(denied > flows / 20 && denied < flows, `${denied} of ${flows} denied: the flows exercise both verdicts`);
});

test('the interpreter refuses an expression it cannot evaluate', () => {
  const table = modelToContents(new Renderer({ table: 'nfkube', denyAction: 'drop' }).full(new PolicyEngine(NODE).state()));
  table.rules[0] = { ...table.rules[0], exprs: [{ type: 'numgen', dreg: 1, modulus: 2, ngType: 'random' }, ...table.rules[0].exprs] };
  assert.throws(() => evaluateKernel(table, { family: 'ipv4', src: '198.18.0.1', dst: '198.18.0.2', protocol: 'tcp', dport: 80, sport: 1 }), /cannot evaluate table inet nfkube, chain forward_egress: expression numgen/);
});

/** A foreign rule ahead of nfkube's, dropping on a header field a flow does not define: the
 * interpreter must not read the made-up header it builds (TTL 64, length 40, no TCP flags). */
function withForeignRule(match: Expr[]): TableContents {
  const table = modelToContents(new Renderer({ table: 'nfkube', denyAction: 'drop' }).full(new PolicyEngine(NODE).state()));
  const first = table.rules.findIndex((r) => r.chain === 'forward_egress');
  const rule: Rule = { family: 'inet', table: 'nfkube', chain: 'forward_egress', exprs: [...match, { type: 'immediate', dreg: 0, verdict: { kind: 'drop' } }], comment: 'foreign\x1b[2J' };
  table.rules.splice(first, 0, rule);
  return table;
}

test('a rule matching a header field a flow does not define makes the kernel verdict unknown, naming the rule', () => {
  const v4: FlowPacket = { family: 'ipv4', src: '198.18.0.1', dst: '198.18.0.2', protocol: 'tcp', dport: 80, sport: 1 };
  const v6: FlowPacket = { family: 'ipv6', src: '2001:db8::1', dst: '2001:db8::2', protocol: 'tcp', dport: 80, sport: 1 };
  const load = (base: 'network' | 'transport', offset: number, len: number, data: number[]): Expr[] => [
    { type: 'payload', base, offset, len, dreg: 1 },
    { type: 'cmp', sreg: 1, op: 'eq', data: Buffer.from(data) },
  ];
  const cases: [string, FlowPacket, Expr[], RegExp][] = [
    ['ip ttl 64 (the value the interpreter would have assumed)', v4, load('network', 8, 1, [64]), /ip ttl, network header bytes 8-8/],
    ['ip length 40', v4, load('network', 2, 2, [0, 40]), /ip length, network header bytes 2-3/],
    ['tcp flags == 0', v4, load('transport', 13, 1, [0]), /tcp flags, transport header bytes 13-13/],
    ['ip6 hoplimit', v6, load('network', 7, 1, [64]), /ip6 hoplimit/],
    ['meta mark', v4, [{ type: 'meta', key: 3, dreg: 1 }, { type: 'cmp', sreg: 1, op: 'eq', data: Buffer.alloc(4) }], /meta key 3/],
  ];
  for (const [what, packet, match, field] of cases) {
    const table = withForeignRule(match);
    assert.throws(() => evaluateKernel(table, packet), (err: Error) => {
      assert.match(err.message, /^cannot evaluate table inet nfkube, chain forward_egress: /, what);
      assert.match(err.message, field, what);
      assert.match(err.message, /\(rule forward_egress: .*drop comment "foreign\x1b\[2J"\)$/, `${what}: the rule is named`);
      return true;
    });
    const e = explainFlow(new PolicyEngine(NODE).state(), new PolicyModes(), table, packet);
    assert.equal(e.kernel, undefined, what);
    assert.equal(e.agree, false, what);
    const text = formatExplanation(e, 'a -> b');
    assert.match(text, /  kernel  UNKNOWN: cannot evaluate [^\n]*foreign\\u001b\[2J/, `${what}: printed with the control character escaped`);
    assert.doesNotMatch(text, /\x1b/, what);
    assert.match(text, /the kernel verdict is UNKNOWN/, what);
  }
  // The fields a flow defines still evaluate: the protocol, the addresses, the ports.
  assert.equal(evaluateKernel(withForeignRule(load('network', 16, 4, [198, 18, 0, 2])), v4).allowed, false);
  assert.equal(evaluateKernel(withForeignRule(load('transport', 2, 2, [0, 81])), v4).allowed, true);
  assert.equal(evaluateKernel(withForeignRule(load('network', 6, 1, [6])), v6).allowed, false);
});

test('explain and the counters table print names with control characters escaped', () => {
  assert.equal(printable('ns/evil\x1b[2J\r\n\t\\\x7f\x9b ok'), 'ns/evil\\u001b[2J\\r\\n\\t\\\\\\u007f\\u009b ok');
  const rows: PolicyCounters[] = [{ policy: 'ns/p\x1b]0;owned\x07', direction: 'ingress', pods: 1, acceptedPackets: 0n, droppedPackets: 2n, droppedBytes: 3n, auditedPackets: 0n }];
  const out = formatPolicyCounters(rows);
  assert.doesNotMatch(out, /[\x00-\x09\x0b-\x1f\x7f]/);
  assert.match(out, /^ns\/p\\u001b\]0;owned\\u0007 +ingress +1 +2 +3 +0 +0$/m);
});
