import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { Agent } from '../../src/pipeline/agent';
import { metricsObserver, policyCounterReader } from '../../src/policy/metrics-bridge';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { AgentMetrics } from '../../src/observe/metrics';
import { startObserveServer } from '../../src/observe/server';
import { withSandbox } from '../helpers/netns';
import { namespace, NODE, pod, policy } from './fixtures';

test('metrics: syncs, kernel messages, drift repairs and per-policy kernel counters over HTTP', async () => {
  await withSandbox(async (sb) => {
    const metrics = new AgentMetrics({ processMetrics: false });
    const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) });
    metrics.setPolicyCounterReader(policyCounterReader(sb.socket, 'nfkube', (a, d) => component.podAt(a, d)));
    const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [component], observer: metricsObserver(metrics) });
    const server = await startObserveServer({ address: { host: '127.0.0.1', port: 0 }, metrics: () => metrics.expose(), lastSuccessfulSync: () => metrics.lastSuccessfulSyncMs(), resyncPeriodMs: 60_000, ready: () => true });
    try {
      const objects = [namespace('x'), pod('x', 'a', '198.18.0.2', { app: 'web' }), pod('x', 'b', '198.18.0.3', { app: 'client' })];
      const web = policy('x', 'web', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }] });
      await agent.start({
        namespaces: new Map([['x', normalizeNamespace(objects[0])]]),
        pods: new Map([['x/a', normalizePod(objects[1])], ['x/b', normalizePod(objects[2])]]),
        policies: new Map([['x/web', normalizeNetworkPolicy(web)]]),
      });
      sb.run('nft', ['flush', 'map', 'inet', 'nfkube', 'ingress_v4']);
      await agent.resync();
      const url = `http://127.0.0.1:${server.address.port}`;
      const body = await (await fetch(`${url}/metrics`)).text();
      assert.match(body, /nfkube_sync_duration_seconds_count\{kind="full"\} 1/);
      assert.match(body, /nfkube_sync_duration_seconds_count\{kind="resync"\} 1/);
      assert.match(body, /nfkube_kernel_messages_total\{kind="NFT_MSG_NEWRULE"\} \d+/);
      assert.match(body, /nfkube_kernel_batches_total\{kind="nftables"\} 2/);
      assert.match(body, /nfkube_drift_repairs_total\{kind="element"\} 1/);
      assert.match(body, /nfkube_pods 1/);
      assert.match(body, /nfkube_policy_packets_total\{policy="x\/web",direction="ingress",verdict="accept",namespace="x"\} 0/);
      // One meaning per label: a default deny names its pod in `pod`, never in `policy`.
      assert.match(body, /nfkube_policy_packets_total\{direction="ingress",verdict="drop",namespace="x",pod="a"\} 0/);
      assert.doesNotMatch(body, /policy="x\/a"/);
      assert.equal((await fetch(`${url}/healthz`)).status, 200);
      assert.equal((await fetch(`${url}/readyz`)).status, 200);
    } finally {
      await server.close();
      await agent.stop();
    }
  });
});
