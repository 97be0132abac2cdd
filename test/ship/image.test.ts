/** The container image: builds from the Dockerfile with podman (chroot isolation, local stand-in
 * base images), contains no firewall tool and no compiler, and its agent programs a fresh network
 * namespace from the image's own filesystem (chroot) against a manifests directory.
 * Slow (debootstrap of two base images on the first run, then an npm ci and addon build), so it
 * is the slowest test of the suite (about 7 minutes on a fresh machine, under 1 minute once the
 * base images are cached); it fails, never skips, if a tool is missing.
 * Needs root, the Debian mirror apt uses and the npm registry (the build stage runs npm ci). */
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BASE_REPO, standInBases } from './stand-in-bases';

const root = join(__dirname, '..', '..', '..');
const IMAGE = `${BASE_REPO}/nfkube:image-test`;

/** File names whose presence anywhere in the image means a forbidden package got in. */
const FORBIDDEN_BINARIES = [
  'iptables', 'ip6tables', 'iptables-legacy', 'iptables-nft', 'iptables-restore', 'iptables-save',
  'ip6tables-restore', 'xtables-multi', 'xtables-nft-multi', 'xtables-legacy-multi', 'ebtables', 'arptables',
  'ipset', 'nft', 'ip', 'tc', 'ss', 'bridge', 'rtmon',
  'gcc', 'g++', 'cc', 'c++', 'cpp', 'clang', 'ld', 'as', 'make',
];
const FORBIDDEN_PACKAGES = ['iptables', 'ipset', 'nftables', 'iproute2', 'gcc', 'g++', 'make', 'binutils', 'clang'];
/** A distroless-style final stage: no shell, no package manager, no userland tools at all. */
const NO_SHELL_OR_PACKAGE_MANAGER = ['sh', 'bash', 'dash', 'ash', 'zsh', 'busybox', 'dpkg', 'dpkg-deb', 'apt', 'apt-get', 'apt-cache', 'rpm', 'yum', 'dnf', 'apk', 'perl', 'python3', 'env', 'ls', 'cat', 'chroot', 'ldd'];

/** Regular files with an execute bit, outside dir's /opt/nfkube. */
function executables(dir: string, rel = ''): string[] {
  const out: string[] = [];
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const path = join(rel, e.name);
    if (path === join('opt', 'nfkube')) continue;
    if (e.isDirectory()) out.push(...executables(dir, path));
    else if (e.isFile() && lstatSync(join(dir, path)).mode & 0o111) out.push(`/${path}`);
  }
  return out;
}

const work = mkdtempSync(join(tmpdir(), 'nfkube-image-'));
after(() => rmSync(work, { recursive: true, force: true }));

function need(tool: string, pkg: string): void {
  const r = spawnSync(tool, ['--version'], { stdio: 'ignore' });
  assert.ok(!r.error, `${tool} is not installed: apt-get install ${pkg} (this test never skips once enabled)`);
}

function build(args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('podman', args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`podman ${args.join(' ')} exited ${code}:\n${out.slice(-6000)}`))));
  });
}

/** Every path under dir whose last component is in names (symlinks included, not followed). */
function findNamed(dir: string, names: Set<string>, rel = ''): string[] {
  const hits: string[] = [];
  for (const e of readdirSync(join(dir, rel), { withFileTypes: true })) {
    const path = join(rel, e.name);
    if (e.isDirectory() && !e.isSymbolicLink()) hits.push(...findNamed(dir, names, path));
    else if (names.has(e.name)) hits.push(`/${path}`);
  }
  return hits;
}

const manifests = `
apiVersion: v1
kind: Namespace
metadata: {name: shop, labels: {team: shop}}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: shop, labels: {app: web}}
spec: {nodeName: node-1}
status: {phase: Running, podIP: 198.18.0.10}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-client, namespace: shop}
spec:
  podSelector: {matchLabels: {app: web}}
  ingress:
  - from: [{podSelector: {matchLabels: {app: client}}}]
    ports: [{port: 80, protocol: TCP}]
`;

test('image: builds, holds no firewall tools or compilers, and its agent runs from its rootfs', { timeout: 1_200_000 }, async (t) => {
  for (const [tool, pkg] of [['podman', 'podman'], ['debootstrap', 'debootstrap'], ['unshare', 'util-linux'], ['nft', 'nftables']]) need(tool, pkg);
  const bases = await standInBases((line) => t.diagnostic(line));
  t.diagnostic(`bases: ${bases.build}, ${bases.runtime}`);
  await build(['build', '--isolation', 'chroot', '--build-arg', `BUILD_BASE=${bases.build}`, '--build-arg', `RUNTIME_BASE=${bases.runtime}`, '-t', IMAGE, '.']);

  const rootfs = join(work, 'rootfs');
  mkdirSync(rootfs);
  const container = execFileSync('podman', ['create', IMAGE], { encoding: 'utf8' }).trim();
  try {
    execFileSync('sh', ['-c', `podman export "$1" | tar -x -C "$2"`, 'export', container, rootfs]);
  } finally {
    execFileSync('podman', ['rm', container], { stdio: 'ignore' });
  }

  // Only the compiled output, production dependencies and the addon.
  const app = join(rootfs, 'opt', 'nfkube');
  assert.deepEqual(readdirSync(app).sort(), ['bin', 'build', 'dist', 'node_modules', 'package.json']);
  assert.deepEqual(readdirSync(join(app, 'dist')), ['src']);
  assert.deepEqual(readdirSync(join(app, 'build', 'Release')).sort(), ['nfkube-cni-ipam', 'nfnl.node']);
  assert.ok(!existsSync(join(app, 'node_modules', 'typescript')), 'dev dependencies are pruned');
  assert.ok(lstatSync(join(rootfs, 'usr', 'local', 'bin', 'node')).isFile());

  assert.deepEqual(findNamed(rootfs, new Set(FORBIDDEN_BINARIES)), [], 'forbidden binaries in the image');
  assert.deepEqual(findNamed(rootfs, new Set(NO_SHELL_OR_PACKAGE_MANAGER)), [], 'a shell, package manager or tool in the image');
  assert.ok(!existsSync(join(rootfs, 'var', 'lib', 'dpkg')) && !existsSync(join(rootfs, 'etc', 'apt')), 'no package database');
  // What can be executed at all: node, and the shared libraries and loader it maps.
  const programs = executables(rootfs).filter((p) => !/\.so(\.\d+)*$/.test(p));
  assert.deepEqual(programs, ['/usr/local/bin/node'], 'the only program in the image is node');
  const status = join(rootfs, 'var', 'lib', 'dpkg', 'status');
  if (existsSync(status)) {
    const installed = [...readFileSync(status, 'utf8').matchAll(/^Package: (\S+)/gm)].map((m) => m[1]);
    assert.deepEqual(installed.filter((p) => FORBIDDEN_PACKAGES.includes(p) || /^(gcc|g\+\+|cpp)-\d+$/.test(p)), [], 'forbidden packages in the image');
  }

  assert.equal(execFileSync('chroot', [rootfs, '/usr/local/bin/node', '--version'], { encoding: 'utf8' }).trim(), `v${bases.nodeVersion}`);
  const help = execFileSync('chroot', [rootfs, '/usr/local/bin/node', '/opt/nfkube/bin/nfkube', 'help'], { encoding: 'utf8' });
  assert.match(help, /^usage: nfkube <command>/);
  // The compiled CNI plugin is static (the init container copies it onto hosts of any libc), and
  // `install --cni` (the init container's command) installs it rather than the Node plugin.
  const cniVersion = execFileSync('chroot', [rootfs, '/opt/nfkube/build/Release/nfkube-cni-ipam'], { encoding: 'utf8', env: { PATH: process.env.PATH, CNI_COMMAND: 'VERSION' } });
  assert.deepEqual(JSON.parse(cniVersion).supportedVersions, ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']);
  const installed = execFileSync('chroot', [rootfs, '/usr/local/bin/node', '/opt/nfkube/bin/nfkube', 'install', '--cni', '--root', '/tmp/host'], { encoding: 'utf8' });
  assert.equal(installed, 'write CNI plugin /tmp/host/opt/cni/bin/nfkube-cni-ipam (compiled, from /opt/nfkube/build/Release/nfkube-cni-ipam)\n');

  // The agent from the image's filesystem, in a fresh network namespace, against manifests; the
  // host's nft (outside the chroot, same namespace) reads back what it made.
  mkdirSync(join(rootfs, 'tmp', 'manifests'), { recursive: true });
  writeFileSync(join(rootfs, 'tmp', 'manifests', 'shop.yaml'), manifests);
  const nfkube = `chroot "$1" /usr/local/bin/node /opt/nfkube/bin/nfkube`;
  const script = `set -e
${nfkube} agent --once --manifests /tmp/manifests --node-name node-1 2>&1
${nfkube} verify --manifests /tmp/manifests --node-name node-1
echo ---
nft list table inet nfkube
${nfkube} cleanup
echo ---
nft list tables`;
  const out = execFileSync('unshare', ['--net', 'sh', '-c', script, 'image', rootfs], { encoding: 'utf8' });
  const [agentAndVerify, table, tablesAfter] = out.split('---\n');
  assert.match(agentAndVerify, /"msg":"sync committed"/);
  assert.match(agentAndVerify, /matches the desired state/);
  assert.match(table, /^table inet nfkube \{/m);
  assert.match(table, /198\.18\.0\.10/);
  assert.equal(tablesAfter.trim(), '', 'cleanup removed the table');
});
