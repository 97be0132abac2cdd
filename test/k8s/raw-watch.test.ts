/** RawWatch: the watch stream the informers read (src/k8s/raw-watch.ts), against a bare HTTP
 * server that controls how the stream is cut: events split anywhere (inside a multi-byte
 * character too), several in one chunk, a line that is not JSON, a refused watch (410 with the
 * server's Status), an abort; `done` is called exactly once. */
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { loadKubeConfig } from '../../src/k8s/informer-source';
import { RawWatch, WatchError } from '../../src/k8s/raw-watch';
import { TestApiServer } from '../helpers/apiserver';

const T = { timeout: 20_000 };

type Handler = (req: IncomingMessage, res: ServerResponse) => void;

describe('RawWatch', () => {
  let server: Server;
  let handler: Handler = () => undefined;
  let watch: RawWatch;
  let api: TestApiServer;

  before(async () => {
    server = createServer((req, res) => handler(req, res));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // The test API server only writes the kubeconfig; its server field is pointed at ours.
    api = await TestApiServer.start();
    const kc = loadKubeConfig(api.writeKubeconfig());
    const port = (server.address() as AddressInfo).port;
    kc.clusters[0] = { ...kc.clusters[0], server: `http://127.0.0.1:${port}` };
    watch = new RawWatch(kc);
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await api.close();
  });

  /** Runs one watch to its end: the events and every `done` call. */
  async function run(query = {}): Promise<{ events: [string, unknown][]; done: unknown[]; url: string }> {
    const events: [string, unknown][] = [];
    const done: unknown[] = [];
    let url = '';
    const prev = handler;
    handler = (req, res) => {
      url = req.url ?? '';
      prev(req, res);
    };
    await new Promise<void>((resolve) => {
      void watch.watch('/api/v1/pods', query, (t, o) => events.push([t, o]), (err) => {
        done.push(err);
        setTimeout(resolve, 50);
      });
    });
    return { events, done, url };
  }

  test('events split across chunks, several in one chunk, a broken line skipped', T, async () => {
    const a = JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'naïve-ü', resourceVersion: '5' } } });
    const b = JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '6' } } });
    const c = JSON.stringify({ type: 'DELETED', object: { metadata: { name: 'x' } } });
    const bytes = Buffer.from(`${a}\n${b}\n{not json\n\n${c}\n`);
    const cut = Buffer.from(a).indexOf(Buffer.from('ï')) + 1; // inside the two-byte character
    handler = (_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write(bytes.subarray(0, cut));
      setTimeout(() => {
        res.write(bytes.subarray(cut, cut + 7));
        setTimeout(() => res.end(bytes.subarray(cut + 7)), 20);
      }, 20);
    };
    const r = await run({ resourceVersion: '4', allowWatchBookmarks: true, timeoutSeconds: 30 });
    assert.deepEqual(
      r.events.map(([t]) => t),
      ['ADDED', 'BOOKMARK', 'DELETED'],
    );
    assert.equal((r.events[0][1] as { metadata: { name: string } }).metadata.name, 'naïve-ü');
    assert.deepEqual(r.done, [null]);
    const q = new URL(r.url, 'http://x').searchParams;
    assert.equal(q.get('watch'), 'true');
    assert.equal(q.get('resourceVersion'), '4');
    assert.equal(q.get('allowWatchBookmarks'), 'true');
    assert.equal(q.get('timeoutSeconds'), '30');
  });

  test('a last event without a newline is still delivered', T, async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.end(JSON.stringify({ type: 'MODIFIED', object: {} }));
    };
    const r = await run();
    assert.deepEqual(
      r.events.map(([t]) => t),
      ['MODIFIED'],
    );
    assert.deepEqual(r.done, [null]);
  });

  test('a refused watch ends with the status code and the server message', T, async () => {
    handler = (_req, res) => {
      res.writeHead(410, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ kind: 'Status', code: 410, reason: 'Expired', message: 'too old resource version: 1 (7)' }));
    };
    const r = await run({ resourceVersion: '1' });
    assert.equal(r.events.length, 0);
    assert.equal(r.done.length, 1);
    const err = r.done[0] as WatchError;
    assert.ok(err instanceof WatchError);
    assert.equal(err.statusCode, 410);
    assert.match(err.message, /too old resource version/);
  });

  test('abort ends the stream once, with no error', T, async () => {
    handler = (_req, res) => {
      res.writeHead(200);
      res.write(`${JSON.stringify({ type: 'ADDED', object: {} })}\n`);
    };
    const done: unknown[] = [];
    const events: string[] = [];
    let controller: AbortController | undefined;
    await new Promise<void>((resolve) => {
      void watch
        .watch('/api/v1/pods', {}, (t) => {
          events.push(t);
          controller?.abort();
          setTimeout(resolve, 100);
        }, (err) => done.push(err))
        .then((c) => (controller = c));
    });
    controller!.abort();
    assert.deepEqual(events, ['ADDED']);
    assert.deepEqual(done, [null]);
  });

  test('a server that never answers, or falls silent past timeoutSeconds, ends the watch with an error', T, async () => {
    const kc = loadKubeConfig(api.writeKubeconfig());
    kc.clusters[0] = { ...kc.clusters[0], server: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
    const quick = new RawWatch(kc, { connectMs: 300, idleGraceMs: 200 });
    const endOf = (query: { timeoutSeconds?: number }) =>
      new Promise<unknown>((resolve) => void quick.watch('/api/v1/pods', query, () => undefined, resolve));
    handler = () => undefined; // accepts, never answers
    assert.match(String((await endOf({})) as Error), /no answer in 0.3 s/);
    handler = (_req, res) => {
      res.writeHead(200);
      res.write(`${JSON.stringify({ type: 'ADDED', object: {} })}\n`);
    };
    assert.match(String((await endOf({ timeoutSeconds: 1 })) as Error), /no data for 1.2 s/);
  });

  test('an unreachable server ends the watch with the connection error', T, async () => {
    const kc = loadKubeConfig(api.writeKubeconfig());
    kc.clusters[0] = { ...kc.clusters[0], server: 'http://127.0.0.1:1' };
    const done: unknown[] = [];
    await new Promise<void>((resolve) => {
      void new RawWatch(kc).watch('/api/v1/pods', {}, () => undefined, (err) => {
        done.push(err);
        setTimeout(resolve, 50);
      });
    });
    assert.equal(done.length, 1);
    assert.match(String((done[0] as Error).message), /ECONNREFUSED/);
  });
});
