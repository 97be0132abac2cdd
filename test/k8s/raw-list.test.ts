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

/** Takes items as rawLister hands them over. */
const ignore = () => undefined;

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
      const page = await list({ limit: 3, _continue: cont }, (item) => names.push((item as { metadata: { name: string } }).metadata.name));
      pages++;
      assert.equal(page.metadata?.resourceVersion, server.resourceVersion);
      cont = page.metadata?._continue;
    } while (cont);
    assert.equal(pages, 3);
    assert.deepEqual(names, ['p0', 'p1', 'p2', 'p3', 'p4', 'p5', 'p6']);
  });

  test('keeps the fields as the server wrote them (`from`, not a typed model\'s `_from`)', T, async () => {
    const items: unknown[] = [];
    await rawLister(loadKubeConfig(kubeconfig), '/apis/networking.k8s.io/v1/networkpolicies')({ limit: 10 }, (item) => items.push(item));
    const spec = (items[0] as { spec: { ingress: Record<string, unknown>[] } }).spec;
    assert.deepEqual(Object.keys(spec.ingress[0]), ['from']);
  });

  test('an expired continue token is a ListError 410', T, async () => {
    const list = rawLister(loadKubeConfig(kubeconfig), '/api/v1/pods');
    const first = await list({ limit: 2 }, ignore);
    server.create({ kind: 'Pod', metadata: { name: 'late', namespace: 'x' } });
    server.compact();
    await assert.rejects(list({ limit: 2, _continue: first.metadata?._continue }, ignore), (err: unknown) => err instanceof ListError && err.statusCode === 410 && /too old/.test(err.message));
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
        cont = (await list({ limit: 2, _continue: cont }, ignore)).metadata?._continue;
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
    await assert.rejects(rawLister(kc, '/api/v1/pods')({ limit: 2 }, ignore), /ECONNREFUSED|127\.0\.0\.1:9/);
  });

  test('a page\'s items are handed over as their bytes arrive: an item that does not parse fails the page, named, after the ones before it', T, async () => {
    const head = '{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9","continue":"next"},"items":[{"metadata":{"name":"a"}},{"metadata":{"name":"b"}}';
    const names: string[] = [];
    let sawB!: () => void;
    const bHandedOver = new Promise<void>((resolve) => (sawB = resolve));
    // The server sends the page's start, and the rest only once the items in it were handed over.
    const http = createServer((_req, res) => {
      res.write(head);
      void bHandedOver.then(() => res.end(',{"metadata":{"name":"c"]}]}'));
    });
    await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
    try {
      const kc = loadKubeConfig(kubeconfig);
      kc.clusters[0] = { ...kc.clusters[0], server: `http://127.0.0.1:${(http.address() as AddressInfo).port}` };
      const list = rawLister(kc, '/api/v1/pods');
      await assert.rejects(
        list({ limit: 500 }, (item) => {
          names.push((item as { metadata: { name: string } }).metadata.name);
          if (names.length === 2) sawB();
        }),
        /^Error: LIST \/api\/v1\/pods: items\[2\] \(before offset \d+\)/,
      );
      assert.deepEqual(names, ['a', 'b']);
    } finally {
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
    }
  });

  test('a page that is not a JSON List, or is cut short, fails naming the path', T, async () => {
    for (const [body, why] of [
      ['[{"metadata":{"name":"a"}}]', /not a JSON object/],
      ['{"kind":"PodList","metadata":{},"items":[{"metadata":{"name":"a"}}', /cut short/],
      ['{"kind":"PodList","items":[],"items":[]}', /two `items` members/],
      ['{"kind":"PodList","items":{"a":1}}', /`items` is not an array/],
      ['{"kind":"PodList","metadata":{"continue":"x"},"items":[]} {}', /text after the List/],
    ] as const) {
      const http = createServer((_req, res) => res.end(body));
      await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
      try {
        const kc = loadKubeConfig(kubeconfig);
        kc.clusters[0] = { ...kc.clusters[0], server: `http://127.0.0.1:${(http.address() as AddressInfo).port}` };
        await assert.rejects(rawLister(kc, '/api/v1/pods')({ limit: 500 }, ignore), (err: Error) => err.message.startsWith('LIST /api/v1/pods: ') && why.test(err.message));
      } finally {
        http.closeAllConnections();
        await new Promise((resolve) => http.close(resolve));
      }
    }
  });

  test('a refused token is a ListError 401 naming the path', T, async () => {
    const kc = loadKubeConfig(kubeconfig);
    kc.users[0] = { ...kc.users[0], token: 'wrong' };
    await assert.rejects(rawLister(kc, '/api/v1/namespaces')({ limit: 10 }, ignore), (err: unknown) => err instanceof ListError && err.statusCode === 401 && /LIST \/api\/v1\/namespaces: HTTP 401/.test(err.message));
  });
});
