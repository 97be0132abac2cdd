/** A policy the renderer cannot render or encode fails closed on its own (issue 11, defect 2):
 * its chains allow nothing, its pods stay isolated, the error names it, and every other policy
 * renders as before. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { comboChainName, RenderError, Renderer } from '../../src/policy/render/render';
import type { CompiledPolicy, PolicyIR } from '../../src/policy/engine/ir';

function ir(policies: CompiledPolicy[]): PolicyIR {
  return {
    nodeName: 'n',
    targets: new Map([['x/a', { key: 'x/a', id: 'ta', v4: ['198.18.0.2'], v6: [], ingress: policies.map((p) => p.id).sort(), egress: null }]]),
    policies: new Map(policies.map((p) => [p.id, p])),
    peerSets: new Map(),
    ipBlockSets: new Map(),
    namedPortSets: new Map(),
  };
}

test('an unrenderable policy gets empty chains and a named error; the others are untouched', () => {
  const good: CompiledPolicy = { id: 'pgood', namespace: 'x', name: 'good', ingress: [{ peers: 'any', ports: [{ protocol: 'TCP', port: 80 }] }], errors: [] };
  // Out of range: normalization and the compiler never let this through; the renderer must not
  // trust that.
  const bad: CompiledPolicy = { id: 'pbad', namespace: 'x', name: 'bad', ingress: [{ peers: 'any', ports: [{ protocol: 'TCP', port: 70000 }] }], errors: [] };
  const failures: RenderError[] = [];
  const r = new Renderer({ table: 'nfkube', denyAction: 'drop', onFailClosed: (e) => failures.push(e) });
  const m = r.full(ir([good, bad]));
  assert.equal(failures.length, 1);
  assert.equal(failures[0].object, 'NetworkPolicy x/bad');
  assert.match(failures[0].message, /^NetworkPolicy x\/bad: cannot be rendered \(.+\); failing closed/);
  assert.deepEqual(m.chains.get('pol_pbad_in')?.rules, [], 'allows nothing');
  assert.equal(m.chains.get('pol_pgood_in')?.rules.length, 1, 'the other policy renders');
  const podChain = m.chains.get(comboChainName(['pbad', 'pgood'], 'ingress'))!.rules;
  assert.equal(podChain.length, 3, 'the pod jumps to both policies, then the default deny');
  assert.deepEqual(podChain.map((r) => r.exprs), [[{ type: 'immediate', dreg: 0, verdict: { kind: 'jump', chain: 'pol_pbad_in' } }], [{ type: 'immediate', dreg: 0, verdict: { kind: 'jump', chain: 'pol_pgood_in' } }], [{ type: 'immediate', dreg: 0, verdict: { kind: 'goto', chain: 'default_deny_in' } }]]);
  assert.deepEqual([...r.failedClosed.keys()], ['pbad']);
  // Fixed, the failure is forgotten; a removed policy is forgotten too.
  r.policyChains({ ...bad, ingress: [{ peers: 'any', ports: [{ protocol: 'TCP', port: 7000 }] }] }, new Map());
  assert.equal(r.failedClosed.size, 0);
  r.policyChains(bad, new Map());
  r.forget('pbad');
  assert.equal(r.failedClosed.size, 0);
});
