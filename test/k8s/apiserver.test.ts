/** The test API server answers @kubernetes/client-node as kube-apiserver would: CRUD with
 * resourceVersions and conflicts, paged lists, watches from a resourceVersion, bookmarks, and
 * 410 Gone after compaction (on a watch: an ERROR event carrying a Status of code 410). */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type * as k8s from '@kubernetes/client-node';
import { TestApiServer } from '../helpers/apiserver';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const client: typeof k8s = require('@kubernetes/client-node');

const T = { timeout: 20_000 };

interface WatchResult {
  events: { type: string; object: { metadata?: { name?: string; resourceVersion?: string }; code?: number; reason?: string } }[];
  error: unknown;
}

/** Runs one watch until the server ends it (or `until` says so), collecting its events. */
function watchOnce(kc: k8s.KubeConfig, path: string, query: Record<string, string | number | boolean | undefined>, until?: (r: WatchResult) => boolean): Promise<WatchResult> {
  return new Promise((resolve) => {
    const result: WatchResult = { events: [], error: undefined };
    let controller: AbortController | undefined;
    let finished = false;
    const finish = () => {
      if (finished) return;
      finished = true;
      controller?.abort();
      resolve(result);
    };
    void new client.Watch(kc)
      .watch(
        path,
        query,
        (type, object) => {
          result.events.push({ type, object });
          if (until?.(result)) finish();
        },
        (err) => {
          result.error = err;
          finish();
        },
      )
      .then((c) => {
        controller = c;
        if (finished) c.abort();
      });
  });
}

describe('TestApiServer through client-node', () => {
  let server: TestApiServer;
  let kc: k8s.KubeConfig;
  let core: k8s.CoreV1Api;
  let net: k8s.NetworkingV1Api;

  before(async () => {
    server = await TestApiServer.start();
    kc = new client.KubeConfig();
    kc.loadFromFile(server.writeKubeconfig());
    core = kc.makeApiClient(client.CoreV1Api);
    net = kc.makeApiClient(client.NetworkingV1Api);
  });

  after(() => server.close());

  test('create, read, conflicting and no-op updates, delete', T, async () => {
    const ns = await core.createNamespace({ body: { metadata: { name: 'x' } } });
    assert.equal(ns.metadata?.labels?.['kubernetes.io/metadata.name'], 'x');
    const pod = await core.createNamespacedPod({
      namespace: 'x',
      body: { metadata: { name: 'a', labels: { pod: 'a' } }, spec: { containers: [{ name: 'c', image: 'i' }] } },
    });
    const rv = pod.metadata!.resourceVersion!;
    const updated = await core.replaceNamespacedPod({ namespace: 'x', name: 'a', body: { ...pod, metadata: { ...pod.metadata, labels: { pod: 'b' } } } });
    assert.ok(Number(updated.metadata!.resourceVersion) > Number(rv));
    await assert.rejects(
      core.replaceNamespacedPod({ namespace: 'x', name: 'a', body: { ...pod, metadata: { ...pod.metadata, resourceVersion: rv } } }),
      (err: { code?: number }) => err.code === 409,
    );
    const same = await core.replaceNamespacedPod({ namespace: 'x', name: 'a', body: updated });
    assert.equal(same.metadata!.resourceVersion, updated.metadata!.resourceVersion, 'a no-op update bumps nothing');
    await assert.rejects(core.createNamespacedPod({ namespace: 'x', body: pod }), (err: { code?: number }) => err.code === 409);
    await core.deleteNamespacedPod({ namespace: 'x', name: 'a' });
    await assert.rejects(core.readNamespacedPod({ namespace: 'x', name: 'a' }), (err: { code?: number }) => err.code === 404);
  });

  test('networkpolicies are served under networking.k8s.io/v1, typed on the way back', T, async () => {
    await net.createNamespacedNetworkPolicy({
      namespace: 'x',
      body: { metadata: { name: 'p' }, spec: { podSelector: {}, ingress: [{ _from: [{ podSelector: {} }] }] } },
    });
    const list = await net.listNetworkPolicyForAllNamespaces();
    assert.deepEqual(
      list.items.map((p) => [p.metadata?.namespace, p.metadata?.name]),
      [['x', 'p']],
    );
    assert.ok(list.items[0].spec?.ingress?.[0]._from, 'serialized as `from`, deserialized as `_from`');
    assert.equal(server.get('NetworkPolicy', 'x', 'p')?.spec.ingress[0].from.length, 1);
  });

  test('paged lists share one snapshot; a continue token older than a compaction is 410', T, async () => {
    for (const name of ['p1', 'p2', 'p3']) server.create({ kind: 'Pod', metadata: { name, namespace: 'x' } });
    const first = await core.listPodForAllNamespaces({ limit: 2 });
    assert.equal(first.items.length, 2);
    assert.ok(first.metadata?._continue);
    server.create({ kind: 'Pod', metadata: { name: 'p4', namespace: 'x' } });
    const second = await core.listPodForAllNamespaces({ limit: 2, _continue: first.metadata!._continue });
    assert.deepEqual(second.items.map((p) => p.metadata?.name), ['p3'], 'p4 came after the snapshot');
    assert.equal(second.metadata?.resourceVersion, first.metadata?.resourceVersion);
    server.compact();
    await assert.rejects(
      core.listPodForAllNamespaces({ limit: 2, _continue: first.metadata!._continue }),
      (err: { code?: number }) => err.code === 410,
    );
  });

  test('watch from a resourceVersion replays later events; from older than compaction: ERROR 410', T, async () => {
    const rv = server.resourceVersion;
    server.create({ kind: 'Pod', metadata: { name: 'w1', namespace: 'x' } });
    server.delete('Pod', 'x', 'w1');
    const replay = await watchOnce(kc, '/api/v1/namespaces/x/pods', { resourceVersion: rv }, (r) => r.events.length === 2);
    assert.deepEqual(
      replay.events.map((e) => [e.type, e.object.metadata?.name]),
      [
        ['ADDED', 'w1'],
        ['DELETED', 'w1'],
      ],
    );
    server.compact();
    const expired = await watchOnce(kc, '/api/v1/pods', { resourceVersion: rv });
    assert.equal(expired.events.length, 1);
    assert.equal(expired.events[0].type, 'ERROR');
    assert.equal(expired.events[0].object.code, 410);
    assert.equal(expired.events[0].object.reason, 'Expired');
    assert.equal(expired.error, null, 'the server ends the stream after the error event');
  });

  test('bookmarks only for watches that ask; expireWatches ends open watches with 410', T, async () => {
    const rv = server.resourceVersion;
    const watching = [true, false].map((bookmarks) =>
      watchOnce(kc, '/api/v1/pods', { resourceVersion: rv, allowWatchBookmarks: bookmarks }),
    );
    await waitUntil(() => server.openWatches === 2);
    server.create({ kind: 'Namespace', metadata: { name: 'elsewhere' } });
    server.sendBookmarks();
    server.expireWatches();
    const [withBookmarks, without] = await Promise.all(watching);
    assert.deepEqual(withBookmarks.events.map((e) => e.type), ['BOOKMARK', 'ERROR']);
    assert.equal(withBookmarks.events[0].object.metadata?.resourceVersion, server.resourceVersion);
    assert.deepEqual(without.events.map((e) => e.type), ['ERROR']);
  });

  test('timeoutSeconds ends a watch, bookmark first', T, async () => {
    const r = await watchOnce(kc, '/api/v1/namespaces', { resourceVersion: server.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 1 });
    assert.deepEqual(r.events.map((e) => e.type), ['BOOKMARK']);
    assert.equal(r.error, null);
  });
});

async function waitUntil(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 5));
}
