/** `nfkube install --cni` writes the plugin as one standalone file that runs with nothing else
 * installed next to it; `--systemd --cni` adds it to the host install. */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';

const launcher = resolve(__dirname, '..', '..', '..', 'bin', 'nfkube');

test('install --cni --root: a standalone plugin file under the root, shebang naming the host path', () => {
  const root = mkdtempSync(join(tmpdir(), 'nfkube-cni-root-'));
  execFileSync(process.execPath, [launcher, 'install', '--cni', '--root', root, '--system-node'], { encoding: 'utf8' });
  const plugin = join(root, 'opt', 'cni', 'bin', 'nfkube-cni-ipam');
  const text = readFileSync(plugin, 'utf8');
  assert.match(text, /^#!\/usr\/bin\/env node\n/);
  assert.equal(statSync(plugin).mode & 0o777, 0o755);
  assert.doesNotMatch(text, /require\("(?!node:)/, 'the plugin requires only node: builtins');
  const r = spawnSync(process.execPath, [plugin], { env: { CNI_COMMAND: 'VERSION' }, encoding: 'utf8', input: '' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout).supportedVersions, ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']);
  const down = spawnSync(process.execPath, [plugin], {
    env: { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c', CNI_IFNAME: 'eth0', CNI_NETNS: '/proc/self/ns/net' },
    input: JSON.stringify({ cniVersion: '1.0.0', name: 'n', ipam: { type: 'nfkube-cni-ipam', socket: join(root, 'none.sock') } }),
    encoding: 'utf8',
  });
  assert.equal(down.status, 1);
  assert.equal(JSON.parse(down.stdout).code, 11);
});

test('install --systemd --cni --dry-run plans the plugin with the copied node, changes nothing', () => {
  const prefix = join(mkdtempSync(join(tmpdir(), 'nfkube-cni-dry-')), 'p');
  const out = execFileSync(process.execPath, [launcher, 'install', '--systemd', '--cni', '--dry-run', '--prefix', prefix, '--unit-dir', join(prefix, 'u'), '--environment-file', join(prefix, 'env'), '--cni-bin-dir', join(prefix, 'cni')], { encoding: 'utf8' });
  assert.match(out, new RegExp(`^would write CNI plugin ${join(prefix, 'cni')}/nfkube-cni-ipam \\(#!${prefix}/bin/node\\)$`, 'm'));
  assert.equal((out.match(/would copy node/g) ?? []).length, 1, 'node is copied once');
  assert.equal(existsSync(prefix), false);
});
