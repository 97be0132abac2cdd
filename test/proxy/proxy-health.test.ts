/** Health-check node ports of ETP Local load balancers, answered as kube-proxy answers them: JSON
 * with the local endpoint count, 200 with one, 503 without; listeners follow the services; a port
 * that cannot be served, or that an older Service holds, is reported naming the Service. */
import assert from 'node:assert/strict';
import { createServer } from 'node:net';
import { test } from 'node:test';
import pino from 'pino';
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

test('a health-check node port in use, or held by an older Service, is reported naming the Service, once', async () => {
  const busy = await freePort();
  const taken = createServer().listen(busy, '127.0.0.1');
  await new Promise((r) => taken.once('listening', r));
  const shared = await freePort();
  const health = new HealthCheckServer({ host: '127.0.0.1' });
  const logs: { msg: string; service?: string; kind?: string; holder?: string }[] = [];
  const logger = pino({ level: 'warn' }, { write: (line: string) => void logs.push(JSON.parse(line)) });
  const events: string[] = [];
  const lb = (name: string, hc: number, createdMs: number, ip: string) =>
    service('x', name, { type: 'LoadBalancer', clusterIPs: [ip], ports: [port('http', 'TCP', 80)], externalTrafficPolicy: 'Local', healthCheckNodePort: hc, loadBalancerIPs: [], createdMs });
  const proxy = new ProxyComponent({ nodeName: NODE, health, logger, events: { warning: (o, _reason, message) => events.push(`${o.namespace}/${o.name}: ${message}`) } });
  proxy.start(snapshotOf([lb('busy', busy, 1, '198.19.0.21'), lb('older', shared, 1, '198.19.0.22'), lb('later', shared, 2, '198.19.0.23')], [], [node(NODE)]));
  try {
    await proxy.afterCommit(diffRulesets(proxy.desired, proxy.desired), 'incremental');
    await proxy.afterCommit(diffRulesets(proxy.desired, proxy.desired), 'incremental');
    assert.deepEqual(logs.filter((l) => l.kind === 'health-check-node-port').map((l) => [l.service, l.holder]), [['x/later', 'x/older'], ['x/busy', undefined]]);
    assert.equal(events.length, 2);
    assert.match(events[0], new RegExp(`^x/later: .*TCP/${shared}.*x/older`));
    assert.match(events[1], new RegExp(`^x/busy: .*TCP/${busy}.*EADDRINUSE`));
    // The older Service's port is served, for it.
    const res = await fetch(`http://127.0.0.1:${shared}/healthz`);
    assert.deepEqual(((await res.json()) as { service: unknown }).service, { namespace: 'x', name: 'older' });
  } finally {
    await health.close();
    taken.close();
  }
});
