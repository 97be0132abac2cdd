/** The proxy's table in a real kernel (own network namespace): random Service, EndpointSlice and
 * Node events committed one scoped transaction at a time; after each the table read back equals a
 * full render, and a restart over the read-back table writes only the difference. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ChangeScope } from '../../src/pipeline/scope';
import { commit, Transaction } from '../../src/nft/transaction';
import { listTable } from '../../src/nft/readback';
import { ProxyComponent } from '../../src/proxy/component';
import { applyDiff, cloneModel, diffRulesets, diffTransaction, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { emptyModel, modelFromKernel, RulesetModel } from '../../src/ruleset/model';
import { withSandbox } from '../helpers/netns';
import { mulberry32 as rng } from '../helpers/prng';
import { NODE, ServiceWorld } from './fixtures';

test('random events: the kernel holds a full render after every scoped commit; a restart writes only the difference', { timeout: 120_000 }, async () => {
  await withSandbox(async (sb) => {
    const w = new ServiceWorld(rng(7));
    for (let i = 0; i < 20; i++) w.change();
    const proxy = new ProxyComponent({ nodeName: NODE });
    proxy.start(w.snapshot());
    const table = { family: proxy.table.family, name: proxy.table.name };
    const empty = emptyModel(table);
    const first = new Transaction().addTable(table);
    diffTransaction(empty, proxy.desired, diffRulesets(empty, proxy.desired), first);
    await commit(sb.socket, first);
    const committed = cloneModel(proxy.desired);
    const readBack = async (): Promise<RulesetModel> => modelFromKernel((await listTable(sb.socket, table.family, table.name))!);
    for (let i = 0; i < 120; i++) {
      const change = w.change();
      const scope = new ChangeScope();
      proxy.apply(change, scope);
      const d = diffRulesets(committed, proxy.desired, scope);
      if (!isEmptyDiff(d)) await commit(sb.socket, diffTransaction(committed, proxy.desired, d));
      applyDiff(committed, proxy.desired, d);
      const kernel = await readBack();
      const full = new ProxyComponent({ nodeName: NODE });
      full.start(w.snapshot());
      const k = diffRulesets(kernel, full.desired);
      assert.ok(isEmptyDiff(k), `event ${i} (${change.type} ${change.kind} ${change.key}):\n${formatDiff(kernel, full.desired, k)}`);
    }
    // A restart: the previous table is read back and already matches.
    const restarted = new ProxyComponent({ nodeName: NODE });
    restarted.start(w.snapshot());
    assert.ok(isEmptyDiff(diffRulesets(await readBack(), restarted.desired)));
    assert.ok(proxy.stats().chains > 15, `a non-trivial table (${JSON.stringify(proxy.stats())})`);
  });
});
