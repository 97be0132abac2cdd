import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { Agent } from '../../src/pipeline/agent';
import { InformerSource, loadKubeConfig } from '../../src/k8s/informer-source';
import { listTable } from '../../src/nft/readback';
import { TestApiServer } from '../helpers/apiserver';
import { withSandbox } from '../helpers/netns';
import { namespace, NODE, pod, policy } from './fixtures';

async function until(cond: () => Promise<boolean> | boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('the agent enforces through client-node informers: initial list, watch, and re-list after 410 Gone', async () => {
  const api = await TestApiServer.start();
  // The LIST path: a server with the WatchList gate off (the WatchList path: test/k8s/informer-source).
  api.watchList = 'refused';
  try {
    await withSandbox(async (sb) => {
      api.create(namespace('x'));
      api.create(pod('x', 'a', '198.18.0.2', { app: 'web' }));
      api.create(pod('x', 'b', '198.18.0.3', { app: 'client' }));
      api.create(policy('x', 'web', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }] }));

      const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) })] });
      const errors: string[] = [];
      const source = new InformerSource({ kubeConfig: loadKubeConfig(api.writeKubeconfig()), onChange: (c) => agent.onChange(c), onError: (e) => errors.push(e.message), retry: { initialMs: 20, maxMs: 200 } });
      try {
        await agent.start(await source.start());
        const peers = async () => {
          const t = await listTable(sb.socket, 'inet', 'nfkube');
          const set = t?.sets.find((s) => s.name.startsWith('ps') && s.name.endsWith('_v4'));
          return set ? t!.elements.get(set.name)!.map((e) => [...e.key].join('.')).sort() : [];
        };
        assert.deepEqual(await peers(), ['198.18.0.3'], 'initial LIST enforced');

        // Watch: a new client pod joins the peer set; an annotation-only change writes nothing.
        api.create(pod('x', 'c', '198.18.0.4', { app: 'client' }));
        await until(async () => (await peers()).length === 2, 'watch ADDED enforced');
        const before = agent.totals.messages;
        api.modify('Pod', 'x', 'c', (o) => (o.metadata.annotations = { touched: 'yes' }));
        api.modify('Pod', 'x', 'b', (o) => (o.status.conditions = [{ type: 'Ready', status: 'True' }]));
        await new Promise((r) => setTimeout(r, 300));
        assert.equal(agent.totals.messages, before, 'irrelevant updates cost no kernel message');

        // History compacted and watches expired: the informer re-lists and only differences flow.
        api.compact();
        api.delete('Pod', 'x', 'b');
        api.create(pod('x', 'd', '198.18.0.5', { app: 'client' }));
        api.expireWatches();
        await until(async () => JSON.stringify(await peers()) === JSON.stringify(['198.18.0.4', '198.18.0.5']), 'state after re-list');
        assert.ok(api.counts.list.pods >= 2, 'pods were listed again');
        // Enforcement never dropped: the protected pod stayed isolated throughout.
        const t = await listTable(sb.socket, 'inet', 'nfkube');
        assert.equal(t!.elements.get('ingress_v4')!.length, 1);
      } finally {
        await source.stop();
        await agent.stop();
      }
      assert.deepEqual(errors.filter((e) => !/410|Gone|expired|too old|closed|ECONNRESET/i.test(e)), []);
    });
  } finally {
    await api.close();
  }
});
