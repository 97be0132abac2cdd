/** A kubeconfig user's `tokenFile` (how a rotated ServiceAccount token is given) authenticates
 * the agent's requests; an inline token still wins. Found against the real apiserver
 * (test/cluster/watches.test.ts): client-node alone sent such requests anonymously. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadKubeConfig as loadIpamKubeConfig } from '../../src/ipam/api';
import { loadKubeConfig } from '../../src/k8s/informer-source';
import { tokenFiles } from '../../src/k8s/token-file';

function kubeconfig(dir: string, user: string): string {
  const path = join(dir, 'config');
  writeFileSync(path, ['apiVersion: v1', 'kind: Config', 'clusters:', '- name: c', '  cluster:', '    server: https://127.0.0.1:6443',
    'users:', '- name: u', '  user:', user, 'contexts:', '- name: c', '  context: {cluster: c, user: u}', 'current-context: c', ''].join('\n'));
  return path;
}

async function authorization(load: typeof loadKubeConfig, path: string): Promise<unknown> {
  const opts: { headers?: Record<string, unknown> } = { headers: {} };
  await load(path).applyToHTTPSOptions(opts as never);
  return opts.headers?.Authorization ?? opts.headers?.authorization;
}

for (const [who, load] of [['the informers (policy, proxy)', loadKubeConfig], ['IPAM', loadIpamKubeConfig]] as const) {
  test(`${who}: a kubeconfig tokenFile (relative to the kubeconfig) is sent as the bearer token`, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-tokenfile-'));
    try {
      writeFileSync(join(dir, 'token'), 'token-from-file');
      assert.equal(await authorization(load, kubeconfig(dir, '    tokenFile: token')), 'Bearer token-from-file');
      assert.equal(await authorization(load, kubeconfig(dir, `    tokenFile: ${join(dir, 'token')}\n    token: inline`)), 'Bearer inline');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
}

test('tokenFiles names only users with a file and no inline token', () => {
  const text = 'users:\n- name: a\n  user: {tokenFile: /t/a}\n- name: b\n  user: {token: x, tokenFile: /t/b}\n- name: c\n  user: {token-file: rel}\n- name: d\n  user: null\n';
  assert.deepEqual([...tokenFiles(text, '/etc/kube/config')], [['a', '/t/a'], ['c', '/etc/kube/rel']]);
});
