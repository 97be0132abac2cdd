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

const loaded = (pkg: string) => Object.keys(require.cache).some((k) => k.includes(`/node_modules/${pkg}/`));

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

  test('leaves out what only some kubeconfigs use (auth-providers, fetch), and the informers never load it', T, async () => {
    await loadInformerClient();
    for (const pkg of ['node-fetch', 'whatwg-url', 'tr46', 'jsonpath-plus']) assert.equal(loaded(pkg), false, `${pkg} loaded with the client`);
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

  test('what only some kubeconfigs use is loaded on first use', T, async () => {
    await loadInformerClient();

    // gcp: the token command's output is read with JSONPath.
    const gcp = loadKubeConfig(server.writeKubeconfig());
    const token = { access: 'from-command', expiry: '2999-01-01T00:00:00Z' };
    gcp.users[0] = {
      name: gcp.users[0].name,
      authProvider: { name: 'gcp', config: { 'cmd-path': process.execPath, 'cmd-args': `-e 'process.stdout.write(${JSON.stringify(JSON.stringify(token))})'`, 'token-key': '{.access}', 'expiry-key': '{.expiry}' } },
    };
    const opts: { headers?: Record<string, string> } = {};
    await gcp.applyToHTTPSOptions(opts as never);
    assert.equal(opts.headers?.Authorization, 'Bearer from-command');
    assert.equal(loaded('jsonpath-plus'), true);

    // oidc: an expired id-token is refreshed through openid-client, imported then; the refresh
    // fails with openid-client's own coded error (client-node hands its discovery a string).
    const oidc = loadKubeConfig(server.writeKubeconfig());
    const b64 = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
    oidc.users[0] = {
      name: oidc.users[0].name,
      authProvider: { name: 'oidc', config: { 'id-token': `${b64({ alg: 'none' })}.${b64({ exp: 1 })}.x`, 'refresh-token': 'r', 'idp-issuer-url': 'https://127.0.0.1:9', 'client-id': 'c' } },
    };
    await assert.rejects(oidc.applyToHTTPSOptions({} as never), (err: Error & { code?: unknown }) => typeof err.code === 'string' && !/is not a function|Cannot find module/.test(err.message));

    // The generated API's fetch-based requests (makeApiClient) load node-fetch when they run.
    const kc = loadKubeConfig(server.writeKubeconfig());
    const { CoreV1Api } = require('@kubernetes/client-node') as typeof import('@kubernetes/client-node');
    const list = await kc.makeApiClient(CoreV1Api).listNamespace();
    assert.deepEqual(
      list.items.map((n) => n.metadata?.name),
      ['x'],
    );
    assert.equal(loaded('node-fetch'), true);
  });
});
