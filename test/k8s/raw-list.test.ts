/** rawLister against the test API server, through a kubeconfig as the agent reads it: pages and
 * continue tokens, the server's own JSON (no typed models), the kubeconfig's token, and HTTP
 * failures as ListError with the server's status code and message. */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { loadKubeConfig } from '../../src/k8s/informer-source';
import { ListError, rawLister } from '../../src/k8s/raw-list';
import { TestApiServer } from '../helpers/apiserver';

const T = { timeout: 60_000 };

describe('rawLister', () => {
  let server: TestApiServer;
  let kubeconfig: string;

  before(async () => {
    server = await TestApiServer.start();
    kubeconfig = server.writeKubeconfig();
    for (let i = 0; i < 7; i++) {
      server.create({ kind: 'Pod', metadata: { name: `p${i}`, namespace: 'x' }, spec: { containers: [{ name: 'c', ports: [{ containerPort: 80 }] }] } });
    }
    server.create({ kind: 'NetworkPolicy', apiVersion: 'networking.k8s.io/v1', metadata: { name: 'np', namespace: 'x' }, spec: { podSelector: {}, ingress: [{ from: [{ podSelector: {} }] }] } });
  });

  after(async () => {
    await server.close();
  });

  test('pages through every object with continue tokens, as raw JSON', T, async () => {
    const list = rawLister(loadKubeConfig(kubeconfig), '/api/v1/pods');
    const names: string[] = [];
    let cont: string | undefined;
    let pages = 0;
    do {
      const page = await list({ limit: 3, _continue: cont });
      pages++;
      for (const item of page.items ?? []) names.push((item as { metadata: { name: string } }).metadata.name);
      assert.equal(page.metadata?.resourceVersion, server.resourceVersion);
      cont = page.metadata?._continue;
    } while (cont);
    assert.equal(pages, 3);
    assert.deepEqual(names, ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6']);
  });

  test('keeps the fields as the server wrote them (`from`, not a typed model\'s `_from`)', T, async () => {
    const page = await rawLister(loadKubeConfig(kubeconfig), '/apis/networking.k8s.io/v1/networkpolicies')({ limit: 10 });
    const spec = ([...(page.items ?? [])][0] as { spec: { ingress: Record<string, unknown>[] } }).spec;
    assert.deepEqual(Object.keys(spec.ingress[0]), ['from']);
  });

  test('an expired continue token is a ListError 410', T, async () => {
    const list = rawLister(loadKubeConfig(kubeconfig), '/api/v1/pods');
    const first = await list({ limit: 2 });
    server.create({ kind: 'Pod', metadata: { name: 'late', namespace: 'x' } });
    server.compact();
    await assert.rejects(list({ limit: 2, _continue: first.metadata?._continue }), (err: unknown) => err instanceof ListError && err.statusCode === 410 && /too old/.test(err.message));
  });

  test('the pages of a LIST share one keep-alive connection; a proxy agent is left as it is', T, async () => {
    const http = (server as unknown as { server: Server }).server;
    let connections = 0;
    const count = () => connections++;
    http.on('connection', count);
    try {
      const list = rawLister(loadKubeConfig(kubeconfig), '/api/v1/pods');
      let cont: string | undefined;
      let pages = 0;
      do {
        cont = (await list({ limit: 2, _continue: cont })).metadata?._continue;
        pages++;
      } while (cont);
      assert.ok(pages >= 4);
      assert.equal(connections <= 1, true, `${connections} connections for ${pages} pages`);
    } finally {
      http.off('connection', count);
    }
    const kc = loadKubeConfig(kubeconfig);
    kc.clusters[0] = { ...kc.clusters[0], proxyUrl: 'http://127.0.0.1:9' };
    // The proxy (nothing listens on port 9) is used, not bypassed by the shared connections.
    await assert.rejects(rawLister(kc, '/api/v1/pods')({ limit: 2 }), /ECONNREFUSED|127\.0\.0\.1:9/);
  });

  test('a page\'s items are parsed one at a time as they are read: an item that does not parse is named after the ones before it', T, async () => {
    const body = '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"next"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}},{"metadata":{"name":"c"]}]}';
    const http = createServer((_req, res) => res.end(body));
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    try {
      const kc = loadKubeConfig(kubeconfig);
      kc.clusters[0] = { ...kc.clusters[0], server: `http://127.0.0.1:${(http.address() as AddressInfo).port}` };
      const page = await rawLister(kc, '/api/v1/pods')({ limit: 500 });
      assert.deepEqual(page.metadata, { resourceVersion: '9', _continue: 'next' });
      const names: string[] = [];
      assert.throws(() => {
        for (const item of page.items ?? []) names.push((item as { metadata: { name: string } }).metadata.name);
      }, /^SyntaxError: items\[2\] \(at offset \d+\)/);
      assert.deepEqual(names, ['a', 'b']);
    } finally {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    }
  });

  test('a refused token is a ListError 401 naming the path', T, async () => {
    const kc = loadKubeConfig(kubeconfig);
    kc.users[0] = { ...kc.users[0], token: 'wrong' };
    await assert.rejects(rawLister(kc, '/api/v1/namespaces')({ limit: 10 }), (err: unknown) => err instanceof ListError && err.statusCode === 401 && /LIST \/api\/v1\/namespaces: HTTP 401/.test(err.message));
  });
});
