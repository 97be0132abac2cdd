/** InformerSource against the in-process API server, reached through @kubernetes/client-node:
 * initial LIST (typed models), WATCH (raw JSON), re-list after 410 Gone, dropped watches,
 * bookmarks, a restarted server, malformed objects. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { InformerSource, loadKubeConfig } from '../../src/k8s/informer-source';
import { normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import type { PodInfo } from '../../src/k8s/model';
import type { ClusterChange, ClusterSnapshot } from '../../src/k8s/source';
import { KObject, TestApiServer } from '../helpers/apiserver';
import { Recorder } from './recorder';

const T = { timeout: 20_000 };

function namespace(name: string, labels: Record<string, string> = {}): KObject {
  return { kind: 'Namespace', metadata: { name, labels } };
}

function pod(ns: string, name: string, ip: string, labels: Record<string, string> = {}, extra: KObject = {}): KObject {
  return {
    kind: 'Pod',
    metadata: { namespace: ns, name, labels },
    spec: {
      nodeName: 'node-1',
      containers: [{ name: 'web', image: 'nginx', ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }] }],
      ...extra.spec,
    },
    status: { phase: 'Running', podIP: ip, podIPs: [{ ip }], ...extra.status },
  };
}

const allowFromB: KObject = {
  kind: 'NetworkPolicy',
  metadata: { namespace: 'x', name: 'allow-from-b' },
  spec: {
    podSelector: { matchLabels: { pod: 'a' } },
    policyTypes: ['Ingress'],
    ingress: [
      {
        from: [
          { podSelector: { matchLabels: { pod: 'b' } }, namespaceSelector: { matchLabels: { ns: 'y' } } },
          { ipBlock: { cidr: '198.18.0.0/16', except: ['198.18.1.0/24'] } },
        ],
        ports: [{ port: 'http' }, { protocol: 'UDP', port: 53, endPort: 60 }],
      },
    ],
  },
};

interface Running {
  source: InformerSource;
  rec: Recorder;
  initial: ClusterSnapshot;
}

async function startSource(server: TestApiServer, pageSize?: number): Promise<Running> {
  const rec = new Recorder();
  const source = new InformerSource({
    kubeConfig: loadKubeConfig(server.writeKubeconfig()),
    pageSize,
    retry: { initialMs: 10, maxMs: 100 },
    ...rec,
  });
  const initial = await source.start();
  return { source, rec, initial };
}

const isKey = (kind: ClusterChange['kind'], key: string, type?: ClusterChange['type']) => (c: ClusterChange) =>
  c.kind === kind && c.key === key && (type === undefined || c.type === type);

describe('InformerSource', () => {
  let server: TestApiServer;
  let running: Running;

  before(async () => {
    server = await TestApiServer.start();
    // A server with the WatchList gate off: the source falls back to the paged LISTs these
    // tests are about (the WatchList cases follow in their own suite).
    server.watchList = 'refused';
    server.create(namespace('x', { ns: 'x' }));
    server.create(namespace('y', { ns: 'y' }));
    server.create(pod('x', 'a', '198.18.0.10', { pod: 'a' }));
    server.create(pod('y', 'b', '198.18.0.11', { pod: 'b' }, { status: { podIPs: [{ ip: '198.18.0.11' }, { ip: '2001:db8::11' }] } }));
    server.create(pod('y', 'host', '198.18.9.1', {}, { spec: { hostNetwork: true } }));
    server.create(allowFromB);
    // Small pages, so the initial list takes several continue round trips.
    running = await startSource(server, 2);
  });

  after(async () => {
    await running.source.stop();
    await server.close();
  });

  test('the initial list (typed models) gives the complete normalized state', T, () => {
    const { initial, rec } = running;
    assert.deepEqual([...initial.namespaces.keys()].sort(), ['x', 'y']);
    assert.deepEqual(initial.namespaces.get('x'), { name: 'x', labels: { 'kubernetes.io/metadata.name': 'x', ns: 'x' } });
    assert.deepEqual([...initial.pods.keys()].sort(), ['x/a', 'y/b', 'y/host']);
    assert.deepEqual(initial.pods.get('y/b'), {
      namespace: 'y',
      name: 'b',
      labels: { pod: 'b' },
      nodeName: 'node-1',
      phase: 'Running',
      ips: ['198.18.0.11', '2001:db8::11'],
      hostNetwork: false,
      ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
    });
    assert.equal(initial.pods.get('y/host')?.hostNetwork, true);
    // The typed list model calls `from` `_from`: the peers must survive it.
    assert.deepEqual(initial.policies.get('x/allow-from-b'), {
      namespace: 'x',
      name: 'allow-from-b',
      podSelector: { matchLabels: { pod: 'a' } },
      policyTypes: ['Ingress'],
      ingress: [
        {
          ports: [{ protocol: 'TCP', port: 'http' }, { protocol: 'UDP', port: 53, endPort: 60 }],
          peers: [
            { podSelector: { matchLabels: { pod: 'b' } }, namespaceSelector: { matchLabels: { ns: 'y' } } },
            { ipBlock: { cidr: '198.18.0.0/16', except: ['198.18.1.0/24'] } },
          ],
        },
      ],
    });
    assert.ok(server.counts.list.pods >= 2, 'the pod list was paged');
    assert.deepEqual(rec.changes, [], 'the initial state is the snapshot, not events');
    assert.deepEqual(rec.errors, []);
  });

  test('watch events (raw JSON) normalize exactly as listed objects do', T, async () => {
    const { rec, source } = running;
    const mark = rec.changes.length;
    const policy = structuredClone(allowFromB);
    policy.metadata.name = 'allow-from-b-2';
    server.create(policy);
    const added = await rec.change(isKey('NetworkPolicy', 'x/allow-from-b-2', 'upsert'), mark);
    const listed = { ...running.initial.policies.get('x/allow-from-b')!, name: 'allow-from-b-2' };
    assert.deepEqual(added.object, listed);
    // And a raw server object normalizes to the same as the source's cache holds.
    assert.deepEqual(normalizeNetworkPolicy(server.get('NetworkPolicy', 'x', 'allow-from-b-2')), listed);
    assert.deepEqual(source.snapshot().pods.get('x/a'), normalizePod(server.get('Pod', 'x', 'a')));
    server.delete('NetworkPolicy', 'x', 'allow-from-b-2');
    await rec.change(isKey('NetworkPolicy', 'x/allow-from-b-2', 'delete'), mark);
  });

  test('watch delivers add, update and delete; the delete carries the last object', T, async () => {
    const { rec, source } = running;
    const mark = rec.changes.length;
    server.create(pod('x', 'c', '198.18.0.12', { pod: 'c' }));
    const added = await rec.change(isKey('Pod', 'x/c', 'upsert'), mark);
    assert.deepEqual((added.object as PodInfo).labels, { pod: 'c' });
    server.modify('Pod', 'x', 'c', (p) => (p.metadata.labels.tier = 'db'));
    const updated = await rec.change((c) => isKey('Pod', 'x/c', 'upsert')(c) && c !== added, mark);
    assert.deepEqual((updated.object as PodInfo).labels, { pod: 'c', tier: 'db' });
    server.delete('Pod', 'x', 'c');
    const deleted = await rec.change(isKey('Pod', 'x/c', 'delete'), mark);
    assert.deepEqual(deleted.object, updated.object);
    assert.equal(source.snapshot().pods.has('x/c'), false);
    assert.deepEqual(rec.summary(mark), ['upsert Pod x/c', 'upsert Pod x/c', 'delete Pod x/c']);
  });

  test('updates that change nothing enforcement reads deliver nothing', T, async () => {
    const { rec } = running;
    const mark = rec.changes.length;
    const before = server.counts.watch.pods;
    server.modify('Pod', 'x', 'a', (p) => (p.metadata.annotations = { 'example.com/note': 'hello' }));
    server.modify('Pod', 'x', 'a', (p) => {
      p.status.conditions = [{ type: 'Ready', status: 'True', lastProbeTime: new Date().toISOString() }];
      p.spec.containers[0].image = 'nginx:2';
    });
    server.modify('Namespace', undefined, 'x', (n) => (n.metadata.annotations = { owner: 'me' }));
    server.modify('NetworkPolicy', 'x', 'allow-from-b', (p) => (p.metadata.annotations = { note: 'x' }));
    // Markers on the same streams: once they arrive, the events before them were processed.
    server.modify('Pod', 'y', 'b', (p) => (p.metadata.labels.marker = '1'));
    server.modify('Namespace', undefined, 'y', (n) => (n.metadata.labels.marker = '1'));
    const marker = structuredClone(allowFromB);
    marker.metadata.name = 'marker';
    server.create(marker);
    await Promise.all([
      rec.change(isKey('Pod', 'y/b'), mark),
      rec.change(isKey('Namespace', 'y'), mark),
      rec.change(isKey('NetworkPolicy', 'x/marker'), mark),
    ]);
    assert.deepEqual(rec.summary(mark).sort(), ['upsert Namespace y', 'upsert NetworkPolicy x/marker', 'upsert Pod y/b']);
    assert.equal(server.counts.watch.pods, before, 'no re-watch happened');
    server.delete('NetworkPolicy', 'x', 'marker');
    await rec.change(isKey('NetworkPolicy', 'x/marker', 'delete'), mark);
  });

  test('410 Gone: re-list keeps the state and delivers only the differences', T, async () => {
    const { rec, source } = running;
    const mark = rec.changes.length;
    const lists = { ...server.counts.list };
    const expected = new Map(source.snapshot().pods);
    server.expireWatches();
    // Changes the expired watches never carry: only the re-list can reveal them.
    server.delete('Pod', 'y', 'host');
    server.modify('Pod', 'x', 'a', (p) => (p.metadata.labels.tier = 'web'));
    server.modify('Pod', 'y', 'b', (p) => (p.metadata.annotations = { irrelevant: 'yes' }));
    server.create(pod('y', 'd', '198.18.0.13', { pod: 'd' }));
    server.modify('Namespace', undefined, 'y', (n) => (n.metadata.labels.env = 'prod'));
    server.delete('NetworkPolicy', 'x', 'allow-from-b');

    await Promise.all([
      rec.change(isKey('Pod', 'y/d'), mark),
      rec.change(isKey('Pod', 'y/host'), mark),
      rec.change(isKey('Pod', 'x/a'), mark),
      rec.change(isKey('Namespace', 'y'), mark),
      rec.change(isKey('NetworkPolicy', 'x/allow-from-b'), mark),
    ]);
    // Everything re-listed: no cache was dropped on the way (y/b and x stay without an event).
    await waitUntil(() => server.counts.list.pods > lists.pods && server.counts.list.namespaces > lists.namespaces);
    assert.deepEqual(rec.summary(mark).sort(), [
      'delete NetworkPolicy x/allow-from-b',
      'delete Pod y/host',
      'upsert Namespace y',
      'upsert Pod x/a',
      'upsert Pod y/d',
    ]);
    const pods = source.snapshot().pods;
    assert.deepEqual(pods.get('y/b'), expected.get('y/b'));
    assert.equal(pods.get('y/b'), expected.get('y/b'), 'an unchanged object is not even replaced');
    assert.deepEqual([...pods.keys()].sort(), ['x/a', 'y/b', 'y/d']);

    // Watching resumes from the re-list's resourceVersion.
    const mark2 = rec.changes.length;
    server.create(pod('x', 'e', '198.18.0.14'));
    await rec.change(isKey('Pod', 'x/e', 'upsert'), mark2);
  });

  test('a dropped watch resumes from its resourceVersion without a re-list', T, async () => {
    const { rec } = running;
    const lists = server.counts.list.pods;
    const watches = server.counts.watch.pods;
    server.dropWatches();
    const mark = rec.changes.length;
    server.delete('Pod', 'x', 'e');
    await rec.change(isKey('Pod', 'x/e', 'delete'), mark);
    assert.ok(server.counts.watch.pods > watches);
    assert.equal(server.counts.list.pods, lists);
  });

  test('bookmarks move the resume point, so a compaction does not force a re-list', T, async () => {
    const { rec } = running;
    const mark = rec.changes.length;
    // Another kind's change moves the revision past the pod watch's last event.
    server.create(namespace('z'));
    await rec.change(isKey('Namespace', 'z'), mark);
    const lists = server.counts.list.pods;
    // The bookmark and the end of the stream travel in order on one connection: the source
    // resumes from the bookmark, which is not older than the compaction.
    server.sendBookmarks();
    server.compact();
    server.dropWatches();
    server.create(pod('x', 'f', '198.18.0.15'));
    await rec.change(isKey('Pod', 'x/f', 'upsert'), mark);
    assert.equal(server.counts.list.pods, lists, 'resumed from the bookmark, no 410');
  });

  test('malformed objects are reported by object and field; a bad policy rule fails closed', T, async () => {
    const { rec, source } = running;
    const mark = rec.changes.length;
    const errMark = rec.errors.length;
    server.create(pod('x', 'bad', 'not-an-ip'));
    const err = await rec.error((e) => e.object === 'Pod x/bad', errMark);
    assert.equal(err.field, 'status.podIPs[0].ip');
    const policy = structuredClone(allowFromB);
    policy.metadata.name = 'half-bad';
    policy.spec.ingress.push({ from: [{ ipBlock: { cidr: 42 } }] });
    server.create(policy);
    const perr = await rec.error((e) => e.object === 'NetworkPolicy x/half-bad', errMark);
    assert.equal(perr.field, 'spec.ingress[1].from[0].ipBlock.cidr');
    const delivered = await rec.change(isKey('NetworkPolicy', 'x/half-bad'), mark);
    assert.equal(delivered.type, 'upsert');
    assert.equal((delivered.object as { ingress?: unknown[] }).ingress?.length, 1, 'only the good rule allows anything');
    assert.equal(source.snapshot().pods.has('x/bad'), false);
  });

  test('a restarted server with compacted history: re-list delivers what changed while down', T, async () => {
    const { rec, source } = running;
    const mark = rec.changes.length;
    const errMark = rec.errors.length;
    await server.close();
    // The source now fails to reach the server and keeps retrying.
    await rec.error(() => true, errMark);
    server.delete('Pod', 'x', 'f');
    server.create(pod('z', 'g', '198.18.0.16'));
    server.compact();
    await server.listen();
    await Promise.all([rec.change(isKey('Pod', 'x/f', 'delete'), mark), rec.change(isKey('Pod', 'z/g', 'upsert'), mark)]);
    assert.deepEqual(rec.summary(mark).sort(), ['delete Pod x/f', 'upsert Pod z/g']);
    assert.equal(source.snapshot().pods.has('z/g'), true);
  });

  test('a second source lists what the first learned by watching; stop() closes its watches', T, async () => {
    const second = await startSource(server);
    const a = running.source.snapshot();
    const b = second.initial;
    assert.deepEqual([...b.pods.entries()].sort(), [...a.pods.entries()].sort());
    assert.deepEqual([...b.namespaces.entries()].sort(), [...a.namespaces.entries()].sort());
    assert.deepEqual([...b.policies.entries()].sort(), [...a.policies.entries()].sort());
    // Four watches per source (Namespaces, Pods, NetworkPolicies, Nodes): this server does not
    // serve ClusterNetworkPolicy, which is asked for again now and then.
    await waitUntil(() => server.openWatches === 8);
    await second.source.stop();
    await waitUntil(() => server.openWatches === 4);
  });
});

describe('InformerSource start()', () => {
  test('waits for an unreachable server, then resolves with the complete state', T, async () => {
    const server = await TestApiServer.start();
    const port = server.port;
    server.create(namespace('x'));
    await server.close();
    const rec = new Recorder();
    const source = new InformerSource({
      kubeConfig: loadKubeConfig(server.writeKubeconfig()),
      retry: { initialMs: 10, maxMs: 50 },
      ...rec,
    });
    let started = false;
    const starting = source.start().then((s) => {
      started = true;
      return s;
    });
    await rec.error(() => true);
    assert.equal(started, false, 'not synced while the server is down');
    await server.listen(port);
    const snap = await starting;
    assert.deepEqual([...snap.namespaces.keys()], ['x']);
    await source.stop();
    await server.close();
  });

  test('stop() before the initial state is complete rejects start()', T, async () => {
    const server = await TestApiServer.start();
    await server.close();
    const rec = new Recorder();
    const source = new InformerSource({ kubeConfig: loadKubeConfig(server.writeKubeconfig()), retry: { initialMs: 10, maxMs: 50 }, ...rec });
    const rejected = assert.rejects(source.start(), /stopped/);
    await rec.error(() => true);
    await source.stop();
    await rejected;
  });
});

/** Polls a condition the test cannot await directly (the server seeing a request). */
async function waitUntil(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
}

describe('InformerSource with WatchList (sendInitialEvents)', () => {
  let server: TestApiServer;

  before(async () => {
    server = await TestApiServer.start();
    server.create(namespace('x', { ns: 'x' }));
    server.create(pod('x', 'a', '198.18.0.10', { pod: 'a' }));
    server.create(pod('x', 'b', '198.18.0.11', { pod: 'b' }));
    server.create(allowFromB);
  });

  after(() => server.close());

  test('the initial state comes from the watch, no LIST; a 410 re-initialises by WatchList and delivers only the differences', T, async () => {
    const notices: string[] = [];
    const rec = new Recorder();
    const source = new InformerSource({ kubeConfig: loadKubeConfig(server.writeKubeconfig()), retry: { initialMs: 10, maxMs: 100 }, onNotice: (m) => notices.push(m), ...rec });
    try {
      const initial = await source.start();
      assert.deepEqual([...initial.pods.keys()].sort(), ['x/a', 'x/b']);
      assert.deepEqual([...initial.policies.keys()], ['x/allow-from-b']);
      assert.deepEqual(rec.changes, [], 'the initial events are the snapshot, not changes');
      assert.equal(server.counts.list.pods + server.counts.list.namespaces + server.counts.list.networkpolicies, 0, 'no LIST');

      const mark = rec.changes.length;
      const kept = source.snapshot().pods.get('x/b');
      server.expireWatches();
      server.delete('Pod', 'x', 'a');
      server.create(pod('x', 'c', '198.18.0.12', { pod: 'c' }));
      await Promise.all([rec.change(isKey('Pod', 'x/a', 'delete'), mark), rec.change(isKey('Pod', 'x/c', 'upsert'), mark)]);
      await waitUntil(() => notices.some((n) => /Pod watch expired \(410 Gone\)/.test(n)));
      assert.deepEqual(rec.summary(mark).filter((c) => c.includes('Pod')).sort(), ['delete Pod x/a', 'upsert Pod x/c']);
      assert.equal(source.snapshot().pods.get('x/b'), kept, 'an unchanged object is not even replaced');
      assert.equal(server.counts.list.pods, 0, 're-initialised by WatchList, not by LIST');

      // Changes after the re-initialisation arrive on the same stream.
      const mark2 = rec.changes.length;
      server.create(pod('x', 'd', '198.18.0.13'));
      await rec.change(isKey('Pod', 'x/d', 'upsert'), mark2);
      assert.deepEqual(rec.errors, []);
    } finally {
      await source.stop();
    }
  });

  test('a server that ignores sendInitialEvents (a bookmark without initial-events-end): the initial state by LIST, from then on', T, async () => {
    server.watchList = 'ignored';
    const lists = server.counts.list.pods;
    const notices: string[] = [];
    const rec = new Recorder();
    const source = new InformerSource({ kubeConfig: loadKubeConfig(server.writeKubeconfig()), watchTimeoutSeconds: 1, retry: { initialMs: 10, maxMs: 100 },
      onNotice: (m) => notices.push(m), ...rec });
    try {
      const initial = await source.start();
      assert.deepEqual([...initial.pods.keys()].sort(), ['x/b', 'x/c', 'x/d']);
      assert.ok(server.counts.list.pods > lists, 'listed');
      assert.ok(notices.some((n) => /Pod WatchList gave no initial state \(the server ignored sendInitialEvents\): reading it by LIST from now on/.test(n)), notices.join(' | '));
      const mark = rec.changes.length;
      server.create(pod('x', 'e', '198.18.0.14'));
      await rec.change(isKey('Pod', 'x/e', 'upsert'), mark);
    } finally {
      await source.stop();
      server.watchList = 'served';
    }
  });
});

describe('InformerSource LIST pages', () => {
  test('the initial LIST asks for pages of 500, as client-go\'s reflector does: 501 pods in two pages', T, async () => {
    const server = await TestApiServer.start();
    server.watchList = 'refused';
    try {
      server.create(namespace('x'));
      for (let i = 0; i < 501; i++) server.create(pod('x', `p${i}`, `198.18.${i >> 8}.${i & 255}`));
      const running = await startSource(server);
      try {
        assert.equal(running.initial.pods.size, 501);
        assert.deepEqual(server.listLimits, [500, 500, 500, 500, 500], 'namespaces, pods (two pages), policies and nodes, each asked for 500 (ClusterNetworkPolicies are not served here)');
        assert.equal(server.counts.list.pods, 2);
      } finally {
        await running.source.stop();
      }
    } finally {
      await server.close();
    }
  });
});
