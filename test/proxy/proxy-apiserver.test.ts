/** The proxy fed by the informer source from the test API server (typed LIST, raw WATCH) through
 * the pipeline Agent into a sandbox: a Service and its EndpointSlice become the table; an
 * endpoint change is a handful of messages; a headless service's endpoint churn writes nothing. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { InformerSource, loadKubeConfig } from '../../src/k8s/informer-source';
import { PROXY_KINDS } from '../../src/k8s/source';
import { listTable } from '../../src/nft/readback';
import { Agent } from '../../src/pipeline/agent';
import { ProxyComponent } from '../../src/proxy/component';
import { diffRulesets, isEmptyDiff, formatDiff } from '../../src/ruleset/diff';
import { modelFromKernel } from '../../src/ruleset/model';
import { KObject, TestApiServer } from '../helpers/apiserver';
import { withSandbox } from '../helpers/netns';
import { node1, web, webSlice } from '../k8s/service-objects';

const until = async (cond: () => boolean | Promise<boolean>, what: string) => {
  const t0 = Date.now();
  while (!(await cond())) {
    if (Date.now() - t0 > 10_000) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
};

test('informers -> proxy -> kernel: endpoint changes are a few messages, headless churn none', { timeout: 60_000 }, async () => {
  const server = await TestApiServer.start();
  await withSandbox(async (sb) => {
    server.create(web);
    server.create(webSlice);
    server.create(node1);
    const headless: KObject = { kind: 'Service', metadata: { namespace: 'moon', name: 'browsers' }, spec: { clusterIP: 'None', ports: [{ port: 5900 }] } };
    server.create(headless);
    const proxy = new ProxyComponent({ nodeName: 'node-1', clusterCIDRs: ['198.18.0.0/16'] });
    const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [proxy] });
    const source = new InformerSource({
      kubeConfig: loadKubeConfig(server.writeKubeconfig()),
      kinds: PROXY_KINDS,
      retry: { initialMs: 10, maxMs: 100 },
      onChange: (c) => agent.onChange(c),
      onError: () => undefined,
    });
    try {
      await agent.start(await source.start());
      const kernelEqualsDesired = async () => {
        const k = modelFromKernel((await listTable(sb.socket, 'inet', 'nfkube-proxy'))!);
        const d = diffRulesets(k, proxy.desired);
        assert.ok(isEmptyDiff(d), formatDiff(k, proxy.desired, d));
      };
      await kernelEqualsDesired();
      assert.ok(sb.run('nft', ['list', 'map', 'inet', 'nfkube-proxy', 'endpoints-service-v4-x/web/tcp/http']).includes('goto endpoint-v4-x/web/tcp/http__198.18.1.10/8080'));
      // One more endpoint through the API.
      const before = agent.totals.messages;
      server.modify('EndpointSlice', 'x', 'web-abc', (s) => s.endpoints.push({ addresses: ['198.18.1.12'], conditions: { ready: true }, nodeName: 'node-2' }));
      await until(async () => {
        await agent.idle();
        return sb.run('nft', ['list', 'map', 'inet', 'nfkube-proxy', 'endpoints-service-v4-x/web/tcp/http']).includes('198.18.1.12/8080');
      }, 'the new endpoint');
      const used = agent.totals.messages - before;
      // Per port (http and dns): the endpoint chain and its 3 rules, its affinity set (the service
      // has ClientIP affinity), one map element, and the service chain rewritten (flush and its
      // masquerade, 3 affinity and numgen rules). Nothing else of the table.
      assert.ok(used > 0 && used <= 2 * 12, `${used} messages for one endpoint on two ports`);
      await kernelEqualsDesired();
      // Headless churn: 50 endpoint updates, 0 kernel messages.
      server.create({
        kind: 'EndpointSlice',
        metadata: { namespace: 'moon', name: 'browsers-a', labels: { 'kubernetes.io/service-name': 'browsers' } },
        addressType: 'IPv4',
        ports: [{ port: 5900 }],
        endpoints: [{ addresses: ['198.18.2.1'] }],
      });
      const quiet = agent.totals.messages;
      const events = agent.totals.events;
      for (let i = 0; i < 50; i++) server.modify('EndpointSlice', 'moon', 'browsers-a', (s) => (s.endpoints = [{ addresses: [`198.18.2.${2 + i}`] }]));
      await until(() => agent.totals.events >= events + 50, 'the headless events');
      await agent.idle();
      assert.equal(agent.totals.messages, quiet);
    } finally {
      await source.stop();
      await agent.stop();
    }
  });
  await server.close();
});
