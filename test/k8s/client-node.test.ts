/** loadInformerClient: client-node's KubeConfig and Watch without its generated API, as the agent
 * loads them. With the installed client-node the lean path is taken (a version whose config.js
 * changed falls back to the whole package, which this test would show), and the informers work
 * through it: LIST, a watched change, a token from the kubeconfig. */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { clientNode, informerClientIsLean, loadInformerClient } from '../../src/k8s/client-node';
import { InformerSource, loadKubeConfig } from '../../src/k8s/informer-source';
import { TestApiServer } from '../helpers/apiserver';
import { Recorder } from './recorder';

const T = { timeout: 30_000 };

describe('loadInformerClient', () => {
  let server: TestApiServer;

  before(async () => {
    server = await TestApiServer.start();
    server.create({ kind: 'Namespace', metadata: { name: 'x' } });
    server.create({ kind: 'Pod', metadata: { name: 'a', namespace: 'x' }, spec: { nodeName: 'n' }, status: { podIP: '198.18.0.1' } });
  });

  after(async () => {
    await server.close();
  });

  test('loads KubeConfig and Watch without the generated API, once', T, async () => {
    const client = await loadInformerClient();
    assert.equal(informerClientIsLean(), true);
    assert.equal(typeof client.KubeConfig, 'function');
    assert.equal(typeof client.Watch, 'function');
    assert.equal(await loadInformerClient(), client);
    assert.equal(clientNode(), client);
  });

  test('the informers list and watch through it', T, async () => {
    await loadInformerClient();
    const kubeConfig = loadKubeConfig(server.writeKubeconfig());
    assert.ok(kubeConfig instanceof clientNode().KubeConfig);
    const rec = new Recorder();
    const source = new InformerSource({ kubeConfig, retry: { initialMs: 10, maxMs: 100 }, ...rec });
    try {
      const initial = await source.start();
      assert.deepEqual([...initial.pods.keys()], ['x/a']);
      const added = rec.change((c) => c.kind === 'Pod' && c.key === 'x/b');
      server.create({ kind: 'Pod', metadata: { name: 'b', namespace: 'x' }, spec: { nodeName: 'n' }, status: { podIP: '198.18.0.2' } });
      assert.equal((await added).type, 'upsert');
      assert.deepEqual(rec.errors, []);
    } finally {
      await source.stop();
    }
  });

  test('applies the kubeconfig (server, TLS choice, token) as the whole package does', T, async () => {
    await loadInformerClient();
    const kc = loadKubeConfig(server.writeKubeconfig());
    const opts = await kc.applyToFetchOptions({});
    assert.equal((opts.headers as { get(name: string): string | null }).get('authorization'), `Bearer ${server.token}`);
    assert.equal(kc.getCurrentCluster()?.server, server.url);
  });

  test('a SOCKS proxy-url still gets its agent: the package is loaded when first used', T, async () => {
    await loadInformerClient();
    const loadedSocks = () => Object.keys(require.cache).some((k) => k.includes('/socks-proxy-agent/'));
    assert.equal(loadedSocks(), false, 'not loaded with the client');
    const kc = loadKubeConfig(server.writeKubeconfig());
    kc.clusters[0] = { ...kc.clusters[0], proxyUrl: 'socks5://127.0.0.1:1080' };
    const opts: { agent?: { constructor: { name: string }; proxy?: { host?: string; port?: number } } } = {};
    await kc.applyToHTTPSOptions(opts as never);
    assert.equal(opts.agent?.constructor.name, 'SocksProxyAgent');
    assert.deepEqual([opts.agent?.proxy?.host, opts.agent?.proxy?.port], ['127.0.0.1', 1080]);
    assert.equal(loadedSocks(), true);
  });
});
