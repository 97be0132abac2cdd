/** explain's two evaluators are independent (one reads NetworkPolicy semantics off the compiled
 * intent, the other interprets the nf_tables rules and sets rendered from it): on random
 * clusters, in enforce and audit modes, they give every random flow the same verdict. And the
 * interpreter refuses what it cannot evaluate instead of guessing. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Renderer } from '../../src/agent/render';
import { PolicyModes } from '../../src/deny/modes';
import { FlowPacket, FlowProtocol } from '../../src/explain/flow';
import { evaluateKernel } from '../../src/explain/kernel-verdict';
import { evaluateModel } from '../../src/explain/model-verdict';
import { PolicyEngine } from '../../src/policy/engine';
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
