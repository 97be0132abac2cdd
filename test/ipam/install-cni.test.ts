/** `nfkube install --cni` writes the plugin as one standalone file that runs with nothing else
 * installed next to it (the compiled one when the package has it, else the Node one); `--systemd
 * --cni` adds it to the host install. */
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { compiledPluginCandidates, findCompiledPlugin } from '../../src/cni/install';

const launcher = resolve(__dirname, '..', '..', '..', 'bin', 'nfkube');

test('install --cni --root: a standalone plugin file under the root, shebang naming the host path', () => {
  const root = mkdtempSync(join(tmpdir(), 'nfkube-cni-root-'));
  execFileSync(process.execPath, [launcher, 'install', '--cni', '--cni-plugin', 'node', '--root', root, '--system-node'], { encoding: 'utf8' });
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
  const out = execFileSync(process.execPath, [launcher, 'install', '--systemd', '--cni', '--cni-plugin', 'node', '--dry-run', '--prefix', prefix, '--unit-dir', join(prefix, 'u'), '--environment-file', join(prefix, 'env'), '--cni-bin-dir', join(prefix, 'cni')], { encoding: 'utf8' });
  assert.match(out, new RegExp(`^would write CNI plugin ${join(prefix, 'cni')}/nfkube-cni-ipam \\(#!${prefix}/bin/node\\)$`, 'm'));
  assert.equal((out.match(/would copy node/g) ?? []).length, 1, 'node is copied once');
  assert.equal(existsSync(prefix), false);
});

const compiled = findCompiledPlugin();

test('install --cni --root: the compiled plugin when the package has one, and no node copy', { skip: compiled ? false : 'no compiled plugin (npm install without a C compiler)' }, () => {
  const root = mkdtempSync(join(tmpdir(), 'nfkube-cni-compiled-'));
  const out = execFileSync(process.execPath, [launcher, 'install', '--cni', '--root', root], { encoding: 'utf8' });
  const plugin = join(root, 'opt', 'cni', 'bin', 'nfkube-cni-ipam');
  assert.equal(out, `write CNI plugin ${plugin} (compiled, from ${compiled})\n`);
  assert.ok(readFileSync(plugin).equals(readFileSync(compiled!)), 'the installed file is the compiled plugin');
  assert.equal(statSync(plugin).mode & 0o777, 0o755);
  assert.equal(existsSync(join(root, 'opt', 'nfkube')), false, 'no node binary is needed');
  const r = spawnSync(plugin, [], { env: { CNI_COMMAND: 'VERSION' }, encoding: 'utf8', input: '' });
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout).supportedVersions, ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']);
  const dry = execFileSync(process.execPath, [launcher, 'install', '--systemd', '--cni', '--cni-plugin', 'compiled', '--dry-run', '--prefix', join(root, 'p'), '--unit-dir', join(root, 'u'), '--environment-file', join(root, 'env')], { encoding: 'utf8' });
  assert.match(dry, /^would write CNI plugin \/opt\/cni\/bin\/nfkube-cni-ipam \(compiled, from .*\)$/m);
});

test('install --cni-plugin compiled fails clearly where there is none; a foreign-architecture binary is never chosen', () => {
  const r = spawnSync(process.execPath, [launcher, 'install', '--cni', '--cni-plugin', 'nope', '--dry-run'], { encoding: 'utf8' });
  assert.equal(r.status, 1);
  assert.match(r.stderr, /--cni-plugin: "nope" is not one of auto, compiled, node/);
  const empty = mkdtempSync(join(tmpdir(), 'nfkube-cni-none-'));
  assert.equal(findCompiledPlugin(empty), undefined);
  assert.deepEqual(compiledPluginCandidates('/p', 'linux', 'arm64'), ['/p/build/Release/nfkube-cni-ipam', '/p/prebuilds/linux-arm64/nfkube-cni-ipam']);
  // A binary for another machine in this machine's slot (a mislabelled copy) is refused by its ELF header.
  const arm = resolve(__dirname, '..', '..', '..', 'prebuilds', 'linux-arm64', 'nfkube-cni-ipam');
  if (existsSync(arm)) {
    const other = process.arch === 'arm64' ? 'x64' : 'arm64';
    const fake = mkdtempSync(join(tmpdir(), 'nfkube-cni-foreign-'));
    mkdirSync(join(fake, 'prebuilds', `linux-${other}`), { recursive: true });
    copyFileSync(arm, join(fake, 'prebuilds', `linux-${other}`, 'nfkube-cni-ipam'));
    assert.equal(findCompiledPlugin(fake, 'linux', other), other === 'arm64' ? join(fake, 'prebuilds', 'linux-arm64', 'nfkube-cni-ipam') : undefined);
    mkdirSync(join(fake, 'prebuilds', 'linux-ppc64'), { recursive: true });
    copyFileSync(arm, join(fake, 'prebuilds', 'linux-ppc64', 'nfkube-cni-ipam'));
    assert.equal(findCompiledPlugin(fake, 'linux', 'ppc64'), undefined);
  }
});
