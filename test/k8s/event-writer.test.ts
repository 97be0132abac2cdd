/** EventWriter against the test API server, through a kubeconfig as the agent reads it: a Warning
 * Event on the object is created, a repeat counts on the same Event (merge patch), a flood is cut
 * at the burst and refilled over time, and a refused write never throws. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import pino from 'pino';
import { BURST, EventWriter, kubeConfigTransport, REFILL_MS } from '../../src/k8s/event-writer';
import { loadKubeConfig } from '../../src/k8s/informer-source';
import { TestApiServer } from '../helpers/apiserver';

const T = { timeout: 60_000 };
const SOURCE = { component: 'nfkube-proxy', host: 'node-1' };
const SVC = { kind: 'Service', namespace: 'attacker', name: 'steal' };

describe('EventWriter', () => {
  let server: TestApiServer;
  let kubeconfig: string;

  before(async () => {
    server = await TestApiServer.start();
    server.serveResource({ plural: 'events', kind: 'Event', apiVersion: 'v1', namespaced: true });
    kubeconfig = server.writeKubeconfig();
  });

  after(async () => {
    await server.close();
  });

  test('creates a Warning Event on the object; a repeat patches its count', T, async () => {
    const w = new EventWriter(kubeConfigTransport(loadKubeConfig(kubeconfig)), SOURCE);
    w.warning(SVC, 'ServiceClaimRefused', 'external-ip 198.19.0.10 refused: it is the cluster IP of Service prod/db');
    w.warning(SVC, 'ServiceClaimRefused', 'external-ip 198.19.0.10 refused: it is the cluster IP of Service prod/db');
    await w.idle();
    const events = server.objects('events').filter((e) => e.involvedObject.name === 'steal');
    assert.equal(events.length, 1);
    const [e] = events;
    assert.deepEqual(
      { ns: e.metadata.namespace, type: e.type, reason: e.reason, count: e.count, involved: e.involvedObject, source: e.source },
      { ns: 'attacker', type: 'Warning', reason: 'ServiceClaimRefused', count: 2, involved: { apiVersion: 'v1', ...SVC }, source: SOURCE },
    );
    assert.match(e.message, /prod\/db/);
    assert.equal(server.writes.get('POST events'), 1);
    assert.equal(server.writes.get('PATCH events'), 1);
  });

  test(`a flood is cut at ${BURST} Events, and the bucket refills with time`, T, async () => {
    let now = Date.parse('2026-01-01T00:00:00Z');
    const w = new EventWriter(kubeConfigTransport(loadKubeConfig(kubeconfig)), SOURCE, undefined, () => now);
    const before = server.objects('events').length;
    for (let i = 0; i < BURST + 10; i++) w.warning({ ...SVC, name: `s${i}` }, 'ServiceClaimRefused', `claim ${i}`);
    await w.idle();
    assert.equal(server.objects('events').length - before, BURST);
    assert.equal(w.dropped, 10);
    now += 2 * REFILL_MS;
    for (let i = 0; i < 5; i++) w.warning({ ...SVC, name: `t${i}` }, 'ServiceClaimRefused', `claim ${i}`);
    await w.idle();
    assert.equal(server.objects('events').length - before, BURST + 2);
    assert.equal(w.dropped, 13);
  });

  test('a refused write is logged, never thrown', T, async () => {
    const logged: string[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => void logged.push((JSON.parse(line) as { msg: string }).msg) });
    const w = new EventWriter(kubeConfigTransport(loadKubeConfig(kubeconfig)), SOURCE, logger);
    server.faults = ({ resource }) => (resource === 'events' ? { status: 500 } : undefined);
    try {
      w.warning(SVC, 'ServiceClaimRefused', 'refused once more');
      await w.idle();
    } finally {
      server.faults = undefined;
    }
    assert.deepEqual(logged, ['event not recorded']);
  });
});
