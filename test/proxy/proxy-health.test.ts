/** Health-check node ports of ETP Local load balancers, answered as kube-proxy answers them: JSON
 * with the local endpoint count, 200 with one, 503 without; listeners follow the services. */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import { ChangeScope } from '../../src/pipeline/scope';
import { ProxyComponent } from '../../src/proxy/component';
import { HealthCheckServer } from '../../src/proxy/health';
import { diffRulesets } from '../../src/ruleset/diff';
import { endpoint, node, NODE, port, service, slice, snapshotOf } from './fixtures';

function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

test('ETP Local health-check node port: local endpoint count, 200 or 503, follows commits', async () => {
  const hc = await freePort();
  const health = new HealthCheckServer({ host: '127.0.0.1' });
  const lb = service('x', 'lb', {
    type: 'LoadBalancer',
    clusterIPs: ['198.19.0.20'],
    ports: [port('http', 'TCP', 80, { nodePort: 30090 })],
    externalTrafficPolicy: 'Local',
    healthCheckNodePort: hc,
    loadBalancerIPs: ['198.18.201.9'],
  });
  const proxy = new ProxyComponent({ nodeName: NODE, health });
  const slices = (eps: ReturnType<typeof endpoint>[]) => slice('x', 'lb-a', 'lb', { endpoints: eps });
  proxy.start(snapshotOf([lb], [slices([endpoint('198.18.1.10', NODE), endpoint('198.18.1.11', NODE), endpoint('198.18.1.12', 'node-2')])], [node(NODE)]));
  const commit = async () => {
    await proxy.afterCommit(diffRulesets(proxy.desired, proxy.desired), 'incremental');
    await new Promise((r) => setTimeout(r, 50));
  };
  try {
    await commit();
    let res = await fetch(`http://127.0.0.1:${hc}/healthz`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.deepEqual(await res.json(), { service: { namespace: 'x', name: 'lb' }, localEndpoints: 2, serviceProxyHealthy: true });
    proxy.apply({ kind: 'EndpointSlice', type: 'upsert', key: 'x/lb-a', object: slices([endpoint('198.18.1.12', 'node-2')]) }, new ChangeScope());
    await commit();
    res = await fetch(`http://127.0.0.1:${hc}/anything`);
    assert.equal(res.status, 503);
    assert.equal(((await res.json()) as { localEndpoints: number }).localEndpoints, 0);
    proxy.apply({ kind: 'Service', type: 'delete', key: 'x/lb', object: lb }, new ChangeScope());
    await commit();
    await assert.rejects(fetch(`http://127.0.0.1:${hc}/healthz`));
  } finally {
    await health.close();
  }
});
