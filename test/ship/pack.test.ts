/** `npm pack` makes a package whose install needs no compiler on linux-x64/arm64 (glibc): the
 * prebuilt addon ships inside it and loads; elsewhere the install falls back to node-gyp, and that
 * build works too. Another project installs the tarball and uses the library to sandbox, commit
 * and read back a ruleset. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addonCandidates } from '../../src/native/binding';

const root = join(__dirname, '..', '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const { sourcesDigest } = require(join(root, 'scripts', 'native-sources.js')) as { sourcesDigest(root: string): string };

/** ELF e_machine of a shared object. */
function elfMachine(file: string): string {
  const b = readFileSync(file);
  assert.equal(b.subarray(0, 4).toString('latin1'), '\x7fELF', `${file} is ELF`);
  return ({ 62: 'x64', 183: 'arm64' } as Record<number, string>)[b.readUInt16LE(18)] ?? `machine ${b.readUInt16LE(18)}`;
}

/** Whether a 64-bit little-endian ELF executable has a PT_INTERP program header (is dynamic). */
function hasInterpreter(file: string): boolean {
  const b = readFileSync(file);
  const phoff = Number(b.readBigUInt64LE(0x20));
  const phentsize = b.readUInt16LE(0x36);
  const phnum = b.readUInt16LE(0x38);
  for (let i = 0; i < phnum; i++) if (b.readUInt32LE(phoff + i * phentsize) === 3) return true;
  return false;
}

test('the prebuilt binaries are for their platforms and built from the current native sources', () => {
  for (const arch of ['x64', 'arm64']) assert.equal(elfMachine(join(root, 'prebuilds', `linux-${arch}`, 'nfnl.node')), arch);
  for (const arch of ['x64', 'arm64']) {
    const plugin = join(root, 'prebuilds', `linux-${arch}`, 'nfkube-cni-ipam');
    assert.equal(elfMachine(plugin), arch);
    // Static (no PT_INTERP): the init container copies it onto hosts whose libc it cannot know.
    assert.equal(hasInterpreter(plugin), false, `${plugin} asks for no dynamic loader`);
  }
  const recorded = readFileSync(join(root, 'prebuilds', 'SOURCES.sha256'), 'utf8').trim();
  assert.equal(recorded, sourcesDigest(root), 'native/ or binding.gyp changed since the prebuilds were made: run npm run prebuilds');
});

test('loader: NFKUBE_ADDON, then the prebuilt for this platform, then the node-gyp build', () => {
  assert.deepEqual(addonCandidates('/p', 'linux', 'arm64', {}), ['/p/prebuilds/linux-arm64/nfnl.node', '/p/build/Release/nfnl.node', '/p/build/Debug/nfnl.node']);
  assert.deepEqual(addonCandidates('/p', 'linux', 'x64', { NFKUBE_ADDON: '/x/nfnl.node' })[0], '/x/nfnl.node');
});

const LIBRARY_CHECK = `
  const { Netns, NetlinkSocket, Transaction, commit, listTable, addonPath } = require('nfkube/netfilter');
  (async () => {
    const ns = Netns.create();
    const socket = NetlinkSocket.open({ netns: ns });
    await commit(socket, new Transaction().addTable({ family: 'inet', name: 'consumer' }));
    const t = await listTable(socket, 'inet', 'consumer');
    await socket.close();
    ns.close();
    console.log(t.table.name, require('node:path').relative(require('node:path').dirname(require.resolve('nfkube/package.json')), addonPath()));
  })().catch((e) => { console.error(e); process.exit(1); });`;

test('npm pack, then install in another project without a compiler: the prebuilt loads; the node-gyp fallback builds and works', { timeout: 900_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-pack-'));
  try {
    execFileSync('npm', ['pack', '--pack-destination', dir, '--ignore-scripts'], { cwd: root, stdio: 'pipe' });
    const tarball = readdirSync(dir).find((f) => f.endsWith('.tgz'));
    assert.ok(tarball, 'npm pack wrote a tarball');
    const listing = execFileSync('tar', ['tzf', join(dir, tarball)], { encoding: 'utf8' });
    const files = new Set(listing.split('\n').filter(Boolean));
    assert.match(listing, /package\/dist\/src\/index\.js/);
    assert.match(listing, /package\/native\/netlink_io\.cc/);
    assert.match(listing, /package\/binding\.gyp/);
    assert.doesNotMatch(listing, /package\/(test|bench|build)\//);
    for (const f of ['prebuilds/linux-x64/nfnl.node', 'prebuilds/linux-arm64/nfnl.node', 'prebuilds/linux-x64/nfkube-cni-ipam', 'prebuilds/linux-arm64/nfkube-cni-ipam', 'native/cni/plugin.c', 'scripts/install.js', 'dist/src/build-info.json', 'docs/coexistence.md']) {
      assert.ok(files.has(`package/${f}`), `the package holds ${f}`);
    }
    // Source maps ship with the sources they point at.
    for (const map of [...files].filter((f) => f.endsWith('.js.map'))) {
      const raw = execFileSync('tar', ['xzOf', join(dir, tarball), map], { encoding: 'utf8' });
      for (const src of (JSON.parse(raw) as { sources: string[] }).sources) {
        const resolved = join(map, '..', src).replace(/\\/g, '/');
        assert.ok(files.has(resolved), `${map} points at ${resolved}, which ships`);
      }
    }

    const app = join(dir, 'app');
    mkdirSync(app);
    writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'consumer', version: '1.0.0', private: true }));
    // No compiler: any attempt to build would fail.
    const noCompiler = { ...process.env, CC: '/bin/false', CXX: '/bin/false', LINK: '/bin/false' };
    const install = execFileSync('npm', ['install', '--no-audit', '--no-fund', '--foreground-scripts', join(dir, tarball)], { cwd: app, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: noCompiler });
    void install;
    const pkg = join(app, 'node_modules', 'nfkube');
    assert.equal(existsSync(join(pkg, 'build')), false, 'nothing was compiled');
    assert.equal(execFileSync(process.execPath, ['-e', LIBRARY_CHECK], { cwd: app, encoding: 'utf8' }).trim(), `consumer prebuilds/linux-${process.arch}/nfnl.node`);

    // Where no prebuilt loads (another platform, musl, an old glibc), install builds from source.
    execFileSync('npm', ['rebuild', 'nfkube', '--foreground-scripts'], { cwd: app, stdio: 'pipe', env: { ...process.env, NFKUBE_BUILD_FROM_SOURCE: '1' } });
    assert.ok(existsSync(join(pkg, 'build', 'Release', 'nfnl.node')), 'node-gyp built the addon');
    assert.ok(existsSync(join(pkg, 'build', 'Release', 'nfkube-cni-ipam')), 'and the compiled CNI plugin');
    rmSync(join(pkg, 'prebuilds'), { recursive: true });
    assert.equal(execFileSync(process.execPath, ['-e', LIBRARY_CHECK], { cwd: app, encoding: 'utf8' }).trim(), 'consumer build/Release/nfnl.node');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
