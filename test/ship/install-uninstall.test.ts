/** `nfkube install --root` writes only under the root, and `nfkube uninstall` takes all of it
 * away again, with nfkube's kernel tables (in a test namespace); so does the cluster's cleanup
 * DaemonSet, run as its manifest says over a scratch node; a value that would add a line to the
 * unit is refused; the unit gives the agent the directories it writes. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ENV_EXAMPLE } from '../../src/cli/commands/install';
import { renderChart } from '../helpers/chart-render';
import { withSandbox } from '../helpers/netns';

const root = join(__dirname, '..', '..', '..');
const launcher = join(root, 'bin', 'nfkube');
/** Every host path an install or uninstall with default options could touch. */
const HOST_PATHS = ['/opt', '/opt/nfkube', '/opt/cni/bin', '/etc/systemd/system', '/etc/sysusers.d', '/usr/lib/sysusers.d', '/etc/nfkube', '/var/lib/nfkube', '/run/nfkube', '/var/cache/nfkube'];
let scratch: string;

/** What each host path is: absent, or its mtime and (for a directory) its entries. */
function hostSnapshot(): Record<string, string> {
  return Object.fromEntries(
    HOST_PATHS.map((p) => {
      if (!existsSync(p)) return [p, 'absent'];
      const st = statSync(p);
      return [p, `${st.mtimeMs} ${st.isDirectory() ? readdirSync(p).sort().join(',') : st.size}`];
    }),
  );
}

/** Every file and link under dir, relative. */
function filesUnder(dir: string): string[] {
  return (readdirSync(dir, { recursive: true, withFileTypes: true }) as import('node:fs').Dirent[])
    .filter((d) => !d.isDirectory())
    .map((d) => join(d.parentPath, d.name).slice(dir.length));
}

function nfkube(args: string[], nsPath?: string) {
  const argv = nsPath ? ['nsenter', [`--net=${nsPath}`, process.execPath, launcher, ...args]] as const : [process.execPath, [launcher, ...args]] as const;
  return spawnSync(argv[0], [...argv[1]], { encoding: 'utf8', timeout: 120_000 });
}

before(() => {
  scratch = mkdtempSync(join(tmpdir(), 'nfkube-root-'));
});
after(() => rmSync(scratch, { recursive: true, force: true }));

test('install --systemd --cni --root writes every file under the root and nothing outside it; uninstall --root removes them and the tables', async () => {
  const image = join(scratch, 'image');
  const before = hostSnapshot();
  const r = nfkube(['install', '--systemd', '--cni', '--cni-plugin', 'node', '--root', image]);
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(hostSnapshot(), before, 'no host path changed');
  // Each step names where it writes: after "->" for a copy, else its first path.
  for (const line of r.stdout.split('\n').filter((l) => /^(copy|write|create) /.test(l))) {
    const target = line.startsWith('copy ') ? line.split(' -> ')[1] : line.split(' ').find((w) => w.startsWith('/'));
    assert.ok(target?.startsWith(`${image}/`), line);
  }
  const files = filesUnder(image);
  for (const f of ['/etc/systemd/system/nfkube.service', '/etc/sysusers.d/nfkube.conf', '/etc/nfkube/nfkube.env', '/opt/nfkube/bin/nfkube', '/opt/nfkube/bin/node', '/opt/cni/bin/nfkube-cni-ipam']) assert.ok(files.includes(f), `${f} in ${image}`);
  // Inside the files, the host's paths.
  assert.match(readFileSync(join(image, 'etc/systemd/system/nfkube.service'), 'utf8'), /^ExecStart=\/opt\/nfkube\/bin\/node \/opt\/nfkube\/bin\/nfkube agent /m);
  assert.equal(readFileSync(join(image, 'opt/cni/bin/nfkube-cni-ipam'), 'utf8').split('\n')[0], '#!/opt/nfkube/bin/node');
  // The agent's own directories exist as the unit would make them, with its state inside.
  for (const dir of ['var/lib/nfkube/ipam', 'run/nfkube', 'var/cache/nfkube/compile-cache']) mkdirSync(join(image, dir), { recursive: true });
  writeFileSync(join(image, 'var/lib/nfkube/ipam/record'), 'x');

  await withSandbox(async (sb) => {
    const agent = spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, launcher, 'agent', '--proxy', '--once', '--manifests', join(root, 'examples'), '--node-name', 'node-1'], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(agent.status, 0, agent.stderr);
    assert.equal(sb.run('nft', ['list', 'tables']), 'table inet nfkube\ntable inet nfkube-proxy\n');
    const dry = nfkube(['uninstall', '--root', image, '--dry-run'], sb.netns.path);
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(dry.stdout, /^would delete tables inet nfkube, inet nfkube-proxy if present$/m);
    assert.match(dry.stdout, new RegExp(`^would remove ${image}/etc/systemd/system/nfkube\\.service$`, 'm'));
    assert.equal(sb.run('nft', ['list', 'tables']).split('\n').length, 3, 'a dry run deletes nothing');
    assert.deepEqual(filesUnder(image).sort(), [...files, '/var/lib/nfkube/ipam/record'].sort(), 'a dry run removes nothing');
    const u = nfkube(['uninstall', '--root', image], sb.netns.path);
    assert.equal(u.status, 0, u.stderr);
    assert.match(u.stdout, /^delete table inet nfkube$/m);
    assert.match(u.stdout, /^delete table inet nfkube-proxy$/m);
    assert.equal(sb.run('nft', ['list', 'tables']), '', 'no nfkube table left');
  });
  assert.deepEqual(filesUnder(image), [], 'no file left under the root');
  assert.deepEqual(hostSnapshot(), before, 'no host path changed');
});

test('uninstall keeps an edited environment file unless --purge, and refuses a prefix that is not an install', () => {
  const image = join(scratch, 'edited');
  mkdirSync(join(image, 'etc/nfkube'), { recursive: true });
  writeFileSync(join(image, 'etc/nfkube/nfkube.env'), `${ENV_EXAMPLE.replace(/--log-level info/, "--log-level debug --ipam")}`);
  mkdirSync(join(image, 'data'), { recursive: true });
  writeFileSync(join(image, 'data/precious'), 'keep');
  const refused = nfkube(['uninstall', '--root', image, '--keep-tables', '--prefix', '/data']);
  assert.equal(refused.status, 1);
  assert.match(refused.stderr, /option --prefix: .*\/data is not an nfkube install/);
  assert.ok(existsSync(join(image, 'data/precious')) && existsSync(join(image, 'etc/nfkube/nfkube.env')), 'nothing removed');
  const kept = nfkube(['uninstall', '--root', image, '--keep-tables']);
  assert.equal(kept.status, 0, kept.stderr);
  assert.match(kept.stdout, /^kept .*\/etc\/nfkube\/nfkube\.env: it was edited/m);
  assert.ok(existsSync(join(image, 'etc/nfkube/nfkube.env')));
  const purged = nfkube(['uninstall', '--root', image, '--keep-tables', '--purge']);
  assert.equal(purged.status, 0, purged.stderr);
  assert.equal(existsSync(join(image, 'etc/nfkube/nfkube.env')), false);
});

test('a path holding a newline cannot add a directive: install refuses it, naming the option, and writes nothing', () => {
  const image = join(scratch, 'inject');
  for (const [option, value] of [
    ['--prefix', '/opt/x\nExecStartPre=/bin/sh -c "touch /tmp/pwned"'],
    ['--environment-file', '/etc/nfkube/env\nUser=root'],
    ['--unit-dir', '/etc/systemd/system\r'],
  ]) {
    const r = nfkube(['install', '--systemd', '--root', image, option, value]);
    assert.equal(r.status, 1, `${option}: ${r.stdout}`);
    assert.match(r.stderr, new RegExp(`option ${option}: .* holds the control character`));
    assert.equal(existsSync(image), false, 'nothing written');
  }
});

test('the unit gives the agent its state, runtime and cache directories and points the IPAM flags there; the node name is the host name', () => {
  const unit = readFileSync(join(root, 'deploy', 'systemd', 'nfkube.service'), 'utf8');
  for (const line of ['StateDirectory=nfkube', 'RuntimeDirectory=nfkube', 'RuntimeDirectoryMode=0700', 'CacheDirectory=nfkube', 'Environment=NODE_NAME=%H']) assert.match(unit, new RegExp(`^${line}$`, 'm'));
  assert.match(unit, /^ExecStart=.* agent --ipam-state-dir \/var\/lib\/nfkube\/ipam --ipam-socket \/run\/nfkube\/ipam\.sock \$NFKUBE_ARGS$/m);
  assert.doesNotMatch(ENV_EXAMPLE, /^NFKUBE_ARGS=.*--node-name/m);
  assert.equal(execFileSync(process.execPath, [launcher, 'uninstall', '--help'], { encoding: 'utf8' }).split('\n')[0], 'usage: nfkube uninstall [options]');
});

test("cluster removal: the cleanup DaemonSet's uninstall, over the host paths it mounts, leaves no table, CNI file or state of what the agent's pod made", async () => {
  const chart = join(root, 'deploy', 'helm', 'nfkube');
  const node = join(scratch, 'node');
  const daemonSet = (values: unknown, name: string) => renderChart(chart, { namespace: 'kube-system', values }).find((o) => o.kind === 'DaemonSet' && o.metadata.name === name)!;
  /** A container's arguments with the node's root (/host in the pod) at the scratch node. */
  const onNode = (container: { args: string[] }) => container.args.map((a) => a.replace(/^--root=\/host$/, `--root=${node}`));
  const agent = daemonSet({ ipam: { enabled: true }, proxy: { enabled: true } }, 'nfkube');
  const installed = nfkube(onNode(agent.spec.template.spec.initContainers[0]));
  assert.equal(installed.status, 0, installed.stderr);
  assert.ok(existsSync(join(node, 'opt/cni/bin/nfkube-cni-ipam')));
  // What the agent writes on the node: IPAM's record and socket.
  mkdirSync(join(node, 'var/lib/nfkube/ipam'), { recursive: true });
  writeFileSync(join(node, 'var/lib/nfkube/ipam/allocations'), 'x');
  mkdirSync(join(node, 'run/nfkube'), { recursive: true });
  writeFileSync(join(node, 'run/nfkube/ipam.sock'), '');
  const cleanup = daemonSet({ cleanup: { enabled: true } }, 'nfkube-cleanup').spec.template.spec;
  const mounted = cleanup.initContainers[0].volumeMounts.map((m: { mountPath: string }) => m.mountPath.replace(/^\/host/, ''));
  for (const f of filesUnder(node)) assert.ok(mounted.some((m: string) => f.startsWith(`${m}/`)), `${f} is under a path the cleanup pod mounts`);
  await withSandbox(async (sb) => {
    const run = spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, launcher, ...agent.spec.template.spec.containers[0].args.filter((a: string) => a !== '--ipam' && !a.startsWith('--node-name')), '--once', '--manifests', join(root, 'examples'), '--node-name', 'node-1'], { encoding: 'utf8', timeout: 120_000 });
    assert.equal(run.status, 0, run.stderr);
    assert.equal(sb.run('nft', ['list', 'tables']), 'table inet nfkube\ntable inet nfkube-proxy\n');
    const u = nfkube(onNode(cleanup.initContainers[0]), sb.netns.path);
    assert.equal(u.status, 0, u.stderr);
    assert.equal(sb.run('nft', ['list', 'tables']), '', 'no nfkube table left');
  });
  assert.deepEqual(filesUnder(node), [], 'no CNI file or state left');
});

test('uninstall refuses while an agent runs and holds its table, and then removes nothing', async () => {
  const image = join(scratch, 'running');
  const r = nfkube(['install', '--systemd', '--root', image]);
  assert.equal(r.status, 0, r.stderr);
  const before = filesUnder(image).sort();
  await withSandbox(async (sb) => {
    const agent = spawn('nsenter', [`--net=${sb.netns.path}`, process.execPath, launcher, 'agent', '--manifests', join(root, 'examples'), '--node-name', 'node-1', '--metrics-addr', ''], { stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      // Held once its first sync is committed, which the agent logs.
      await new Promise<void>((resolve, reject) => {
        let log = '';
        agent.stderr!.on('data', (b: Buffer) => {
          log += b;
          if (log.includes('"msg":"sync committed"')) resolve();
        });
        agent.on('exit', (code) => reject(new Error(`the agent exited (${code}) before its first sync:\n${log}`)));
      });
      const u = nfkube(['uninstall', '--root', image], sb.netns.path);
      assert.equal(u.status, 1, u.stdout);
      assert.match(u.stderr, /held by another running process[\s\S]*stop the agent first \(systemctl disable --now nfkube/);
      assert.match(sb.run('nft', ['list', 'tables']), /table inet nfkube/);
      assert.deepEqual(filesUnder(image).sort(), before, 'nothing removed');
    } finally {
      agent.kill('SIGTERM');
      await new Promise((resolve) => (agent.exitCode !== null ? resolve(undefined) : agent.once('exit', resolve)));
    }
  });
});
