/** The agent against the kernel on random cluster changes (pods sharing addresses, policies
 * appearing, changing and going, invalid fields, namespace relabels, restarts): after every commit the
 * table read back equals a full render of the cluster, and a resync finds nothing to repair. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { Agent } from '../../src/pipeline/agent';
import { Renderer } from '../../src/policy/render/render';
import { listTable } from '../../src/nft/readback';
import { compileFull } from '../../src/policy/engine/compile';
import { diffRulesets, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { modelFromKernel } from '../../src/ruleset/model';
import { withSandbox } from '../helpers/netns';
import { mulberry32 as rng } from '../helpers/prng';
import { NODE, randomChange, World } from '../helpers/random-cluster';

test('random cluster changes: the kernel holds a full render of the cluster after every commit', async () => {
  await withSandbox(async (sb) => {
    const w = new World(rng(11));
    const renderer = new Renderer({ table: 'nfkube', denyAction: 'drop' });
    const newAgent = () => new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) })] });
    let agent = newAgent();
    await agent.start({ pods: new Map(), namespaces: new Map(), policies: new Map() });
    for (let i = 0; i < 150; i++) {
      if (i % 50 === 25) {
        // A restart over changes made while no agent ran: it writes only what differs.
        await agent.stop();
        for (let k = 0; k < 5; k++) randomChange(w);
        agent = newAgent();
        await agent.start({ pods: new Map(w.pods), namespaces: new Map(w.namespaces), policies: new Map(w.policies) });
      }
      // Several changes at once now and then, so some are coalesced into one commit.
      const burst = i % 10 === 9 ? 4 : 1;
      for (let k = 0; k < burst; k++) agent.onChange(randomChange(w));
      await agent.idle();
      const meant = renderer.full(compileFull(w.inputs(), NODE), w.pods.values());
      const kernel = modelFromKernel((await listTable(sb.socket, 'inet', 'nfkube'))!);
      const d = diffRulesets(kernel, meant);
      assert.ok(isEmptyDiff(d), `change ${i}:\n${formatDiff(kernel, meant, d)}`);
    }
    assert.equal((await agent.resync()).drift, '');
    await agent.stop();
  });
});
