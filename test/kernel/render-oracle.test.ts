/** nft as the oracle of the renderer and the formatter: for random clusters, the table nfkube
 * commits over netlink and the text `nfkube render` prints, loaded by `nft -f` into another
 * namespace, are listed by nft identically (element order aside). So the printed ruleset means
 * exactly what is enforced, and nfkube's encoding means what nft's own parser would have made. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Renderer } from '../../src/policy/render/render';
import { formatTable } from '../../src/nft/format';
import { commit, Transaction } from '../../src/nft/transaction';
import { compileFull } from '../../src/policy/engine/compile';
import { diffRulesets, diffTransaction } from '../../src/ruleset/diff';
import { emptyModel, modelToContents, RulesetModel } from '../../src/ruleset/model';
import { Sandbox, withSandbox } from '../helpers/netns';
import { mulberry32 as rng } from '../helpers/prng';
import { NODE, randomChange, World } from '../helpers/random-cluster';

/** `nft list table` with each set's elements sorted: nft prints them in the kernel's order. */
function listing(sb: Sandbox): string {
  return sb.run('nft', ['list', 'table', 'inet', 'nfkube']).replace(/elements = \{([^}]*)\}/g, (_m, body: string) => {
    const items = body.split(',').map((x) => x.trim()).filter(Boolean).sort();
    return `elements = { ${items.join(', ')} }`;
  });
}

async function committed(model: RulesetModel): Promise<string> {
  let out = '';
  await withSandbox(async (sb) => {
    const empty = emptyModel(model.table);
    await commit(sb.socket, diffTransaction(empty, model, diffRulesets(empty, model), new Transaction().addTable(model.table)));
    out = listing(sb);
  });
  return out;
}

test('what nfkube commits and what nfkube render prints list identically in nft', async () => {
  for (const denyAction of ['drop', 'reject'] as const) {
    const renderer = new Renderer({ table: 'nfkube', denyAction });
    for (let seed = 1; seed <= 4; seed++) {
      const w = new World(rng(seed));
      for (let i = 0; i < 60; i++) randomChange(w);
      const model = renderer.full(compileFull(w.inputs(), NODE), w.pods.values());
      const viaNetlink = await committed(model);
      let viaText = '';
      await withSandbox(async (sb) => {
        sb.run('nft', ['-f', '-'], formatTable(modelToContents(model)));
        viaText = listing(sb);
      });
      assert.ok(viaNetlink.includes('chain forward_ingress'));
      assert.equal(viaText, viaNetlink, `${denyAction}, seed ${seed}`);
    }
  }
});
