import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AgentMetrics } from '../../src/observe/metrics';
import { healthStatus, parseListenAddress, startObserveServer, ObserveServerOptions, DEFAULT_METRICS_ADDR } from '../../src/observe/server';

test('parseListenAddress: host:port, [v6]:port, and errors naming the flag', () => {
  assert.deepEqual(parseListenAddress(DEFAULT_METRICS_ADDR), { host: '127.0.0.1', port: 9476 });
  assert.deepEqual(parseListenAddress('[::1]:9476'), { host: '::1', port: 9476 });
  assert.deepEqual(parseListenAddress('0.0.0.0:0'), { host: '0.0.0.0', port: 0 });
  assert.deepEqual(parseListenAddress('localhost:80'), { host: 'localhost', port: 80 });
  assert.throws(() => parseListenAddress('::1:9476'), /--metrics-addr: expected host:port/);
  assert.throws(() => parseListenAddress('127.0.0.1'), /--metrics-addr: expected host:port/);
  assert.throws(() => parseListenAddress('[nope]:1'), /not an IPv6 address/);
  assert.throws(() => parseListenAddress('127.0.0.1:70000'), /port 70000 is out of range/);
  assert.throws(() => parseListenAddress(':9476', '--x'), /^Error: --x:/);
});

test('healthStatus: 3 resync periods from the last sync, or from the start before any', () => {
  const base = { now: 1_000_000, startedAt: 990_000, resyncPeriodMs: 10_000, notAlive: undefined };
  assert.equal(healthStatus({ ...base, lastSuccessfulSync: 1_000_000 - 30_000 }).ok, true);
  const stale = healthStatus({ ...base, lastSuccessfulSync: 1_000_000 - 30_001 });
  assert.equal(stale.ok, false);
  assert.match(stale.reason, /last successful sync 30\.0s ago, limit 30\.0s/);
  assert.equal(healthStatus({ ...base, lastSuccessfulSync: undefined }).ok, true, 'starting up');
  const never = healthStatus({ ...base, startedAt: 900_000, lastSuccessfulSync: undefined });
  assert.equal(never.ok, false);
  assert.match(never.reason, /no successful sync since start/);
  const dead = healthStatus({ ...base, lastSuccessfulSync: 1_000_000, notAlive: 'watch loop exited' });
  assert.deepEqual(dead, { ok: false, reason: 'not alive: watch loop exited' });
});

async function withServer(overrides: Partial<ObserveServerOptions>, fn: (url: string) => Promise<void>): Promise<void> {
  const metrics = new AgentMetrics({ processMetrics: false });
  const server = await startObserveServer({
    address: { host: '127.0.0.1', port: 0 },
    metrics: () => metrics.expose(),
    lastSuccessfulSync: () => metrics.lastSuccessfulSyncMs(),
    resyncPeriodMs: 60_000,
    ready: () => false,
    ...overrides,
  });
  assert.notEqual(server.address.port, 0);
  try {
    await fn(`http://127.0.0.1:${server.address.port}`);
  } finally {
    await server.close();
  }
}

test('/metrics serves the registry over HTTP', async () => {
  const metrics = new AgentMetrics({ processMetrics: false });
  metrics.setObjectCounts({ pods: 3 });
  await withServer({ metrics: () => metrics.expose() }, async (url) => {
    const res = await fetch(`${url}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
    assert.match(await res.text(), /^nfkube_pods 3$/m);
  });
});

test('/readyz turns 200 once the first full sync committed', async () => {
  let ready = false;
  await withServer({ ready: () => ready }, async (url) => {
    let res = await fetch(`${url}/readyz`);
    assert.equal(res.status, 503);
    assert.match(await res.text(), /not ready/);
    ready = true;
    res = await fetch(`${url}/readyz`);
    assert.equal(res.status, 200);
    await res.text();
  });
});

test('/healthz: 200 with a recent sync, 503 with a stale one or when not alive, body says why', async () => {
  let last: number | undefined = Date.now();
  let notAlive: string | undefined;
  await withServer({ lastSuccessfulSync: () => last, notAlive: () => notAlive, resyncPeriodMs: 1000 }, async (url) => {
    let res = await fetch(`${url}/healthz`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /^ok: last successful sync/);
    last = Date.now() - 10 * 60_000;
    res = await fetch(`${url}/healthz`);
    assert.equal(res.status, 503);
    assert.match(await res.text(), /last successful sync 600\.\ds ago, limit 3\.0s \(3 resync periods\)/);
    last = Date.now();
    notAlive = 'kubernetes watch stopped';
    res = await fetch(`${url}/healthz`);
    assert.equal(res.status, 503);
    assert.equal(await res.text(), 'not alive: kubernetes watch stopped\n');
  });
});

test('unknown paths 404, other methods 405, a failing callback 500', async () => {
  await withServer({ metrics: async () => { throw new Error('registry broke'); } }, async (url) => {
    let res = await fetch(`${url}/nope`);
    assert.equal(res.status, 404);
    await res.text();
    res = await fetch(`${url}/metrics`, { method: 'POST' });
    assert.equal(res.status, 405);
    await res.text();
    res = await fetch(`${url}/metrics`);
    assert.equal(res.status, 500);
    assert.match(await res.text(), /registry broke/);
  });
});

test('listening on an address in use fails with the error, not a hang', async () => {
  await withServer({}, async (url) => {
    const port = Number(new URL(url).port);
    await assert.rejects(
      startObserveServer({ address: { host: '127.0.0.1', port }, metrics: async () => ({ contentType: 'text/plain', body: '' }), lastSuccessfulSync: () => undefined, resyncPeriodMs: 1, ready: () => true }),
      /EADDRINUSE/,
    );
  });
});
