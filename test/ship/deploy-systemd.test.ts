/** `nfkube install --systemd` into a temporary prefix: the copy runs from there on its own, the
 * unit it writes passes `systemd-analyze verify`, and deploy/systemd/ is exactly its output. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_ENV_FILE, DEFAULT_PREFIX, ENV_EXAMPLE, renderUnit, SYSUSERS_ENTRY } from '../../src/cli/commands/install';

const root = join(__dirname, '..', '..', '..');
const launcher = join(root, 'bin', 'nfkube');
/** The agent's words after the launcher: the IPAM paths in the unit's own directories, then the EnvironmentFile's. */
const AGENT_ARGS = 'agent --ipam-state-dir /var/lib/nfkube/ipam --ipam-socket /run/nfkube/ipam.sock $NFKUBE_ARGS';
let tmp: string;
let prefix: string;
let unitDir: string;
let envFile: string;
let sysusersDir: string;

/** The absolute path of a tool on this process's PATH (the copy under test runs with an empty one). */
function onPath(tool: string): string {
  const dir = (process.env.PATH ?? '').split(':').find((d) => existsSync(join(d, tool)));
  assert.ok(dir, `${tool} is not installed`);
  return join(dir, tool);
}

/** `Key=value` lines of a unit file's [Service] section. */
function serviceSection(unit: string): Map<string, string> {
  const body = unit.split(/^\[Service\]$/m)[1].split(/^\[/m)[0];
  return new Map(body.split('\n').filter((l) => /^\w+=/.test(l)).map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]));
}

before(() => {
  tmp = mkdtempSync(join(tmpdir(), 'nfkube-install-'));
  prefix = join(tmp, 'opt', 'nfkube');
  unitDir = join(tmp, 'units');
  envFile = join(tmp, 'etc', 'nfkube.env');
  sysusersDir = join(tmp, 'sysusers.d');
  execFileSync(process.execPath, [launcher, 'install', '--systemd', '--prefix', prefix, '--unit-dir', unitDir, '--environment-file', envFile, '--sysusers-dir', sysusersDir], { stdio: 'pipe' });
});
after(() => rmSync(tmp, { recursive: true, force: true }));

test('deploy/systemd holds the unit and env file install writes for the default prefix', () => {
  const committed = readFileSync(join(root, 'deploy', 'systemd', 'nfkube.service'), 'utf8');
  assert.equal(committed, renderUnit({ prefix: DEFAULT_PREFIX, envFile: DEFAULT_ENV_FILE, node: `${DEFAULT_PREFIX}/bin/node` }));
  assert.equal(readFileSync(join(root, 'deploy', 'systemd', 'nfkube.env.example'), 'utf8'), ENV_EXAMPLE);
  const s = serviceSection(committed);
  assert.equal(s.get('AmbientCapabilities'), 'CAP_NET_ADMIN');
  assert.equal(s.get('CapabilityBoundingSet'), 'CAP_NET_ADMIN');
  assert.equal(s.get('NoNewPrivileges'), 'yes');
  assert.equal(s.get('ProtectSystem'), 'strict');
  assert.equal(s.get('ProtectHome'), 'yes');
  assert.equal(s.get('PrivateTmp'), 'yes');
  assert.equal(s.get('RestrictAddressFamilies'), 'AF_NETLINK AF_UNIX AF_INET AF_INET6');
  assert.equal(s.get('Restart'), 'on-failure');
  assert.equal(s.get('EnvironmentFile'), DEFAULT_ENV_FILE);
  assert.equal(s.get('ExecStart'), `/opt/nfkube/bin/node /opt/nfkube/bin/nfkube ${AGENT_ARGS}`);
});

test('the installed unit passes systemd-analyze verify', () => {
  const unit = join(unitDir, 'nfkube.service');
  const s = serviceSection(readFileSync(unit, 'utf8'));
  assert.equal(s.get('ExecStart'), `${prefix}/bin/node ${prefix}/bin/nfkube ${AGENT_ARGS}`);
  assert.equal(s.get('EnvironmentFile'), envFile);
  const probe = spawnSync('systemd-analyze', ['--version']);
  assert.ok(!probe.error, 'systemd-analyze is not installed: install Debian\'s "systemd" package (.ci/run does); this test does not skip');
  const r = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
  // Only complaints about this unit count; the host's other units are not ours to judge.
  const ours = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.includes('nfkube.service'));
  assert.deepEqual(ours, [], ours.join('\n'));
  assert.equal(r.status, 0, r.stderr);
});

test('the installed copy runs from its prefix with its own node, code, packages and addon', () => {
  assert.equal(readFileSync(join(prefix, 'bin', 'nfkube'), 'utf8').split('\n')[0], `#!${prefix}/bin/node`);
  assert.ok(existsSync(join(prefix, 'build', 'Release', 'nfnl.node')));
  const modules = readdirSync(join(prefix, 'node_modules'));
  assert.ok(modules.includes('prom-client') && modules.includes('yaml') && modules.includes('pino'));
  assert.ok(!modules.includes('typescript'), `dev dependencies copied: ${modules}`);
  assert.equal(readFileSync(envFile, 'utf8'), ENV_EXAMPLE);
  const env = { PATH: '/nonexistent' }; // not even a node on PATH
  const help = execFileSync(join(prefix, 'bin', 'nfkube'), ['help'], { cwd: tmp, env, encoding: 'utf8' });
  assert.match(help, /^usage: nfkube <command>/);
  assert.match(help, /^ {2}install /m);
  // The addon loads from the prefix and talks to the kernel, in a namespace of its own.
  const save = spawnSync(onPath('unshare'), ['--net', join(prefix, 'bin', 'nfkube'), 'ipset', 'save'], { cwd: tmp, env, encoding: 'utf8' });
  assert.equal(save.status, 0, save.stderr);
  assert.equal(save.stdout, '');
});

test('--dry-run prints the plan and changes nothing', () => {
  const other = join(tmp, 'dry');
  const out = execFileSync(process.execPath, [launcher, 'install', '--systemd', '--dry-run', '--prefix', other, '--unit-dir', join(other, 'units'), '--environment-file', join(other, 'env')], { encoding: 'utf8' });
  assert.match(out, /^would create .*\/dry\/bin$/m);
  assert.match(out, /^would copy node v\d+/m);
  assert.match(out, /^would copy \d+ production packages/m);
  assert.match(out, /^would write .*\/dry\/units\/nfkube\.service$/m);
  assert.equal(existsSync(other), false);
});

test('install refuses without --systemd and names unknown options', () => {
  const r = spawnSync(process.execPath, [launcher, 'install', '--prefix', join(tmp, 'x')], { encoding: 'utf8' });
  assert.equal(r.status, 2);
  assert.match(r.stderr, /only --systemd is supported/);
  const bad = spawnSync(process.execPath, [launcher, 'install', '--systemd', '--bogus'], { encoding: 'utf8' });
  assert.equal(bad.status, 1);
  assert.match(bad.stderr, /unknown option "--bogus"/);
});

test('the unit runs as a dedicated user with only CAP_NET_ADMIN, sandboxed; systemd-analyze security rates it <= 3.0', () => {
  const unit = join(unitDir, 'nfkube.service');
  const s = serviceSection(readFileSync(unit, 'utf8'));
  assert.equal(s.get('User'), 'nfkube');
  assert.equal(s.get('Group'), 'nfkube');
  for (const key of ['PrivateDevices', 'ProtectKernelTunables', 'ProtectKernelModules', 'ProtectKernelLogs', 'ProtectControlGroups', 'RestrictNamespaces', 'LockPersonality', 'RestrictSUIDSGID', 'NoNewPrivileges']) {
    assert.equal(s.get(key), 'yes', key);
  }
  assert.equal(s.get('SystemCallErrorNumber'), 'EPERM', 'a syscall outside the filter fails, it does not kill the agent');
  assert.match(readFileSync(unit, 'utf8'), /^SystemCallFilter=@system-service$/m);
  assert.equal(readFileSync(join(sysusersDir, 'nfkube.conf'), 'utf8'), SYSUSERS_ENTRY);
  assert.equal(readFileSync(join(root, 'deploy', 'systemd', 'nfkube.sysusers.conf'), 'utf8'), SYSUSERS_ENTRY);
  assert.match(SYSUSERS_ENTRY, /^u nfkube - "[^"]+" \/ \/usr\/sbin\/nologin$/m);
  const r = spawnSync('systemd-analyze', ['security', '--offline=yes', '--no-pager', unit], { encoding: 'utf8' });
  const score = /Overall exposure level for nfkube\.service: (\d+\.\d+)/.exec(r.stdout);
  assert.ok(score, `${r.stdout}${r.stderr}`);
  assert.ok(Number(score[1]) <= 3.0, `exposure ${score[1]}:\n${r.stdout.split('\n').filter((l) => l.includes('✗')).join('\n')}`);
});

test('install --prefix with spaces (and a % and a $) writes a quoted ExecStart that systemd accepts and that runs', () => {
  const odd = join(tmp, 'my opt', '50% $off', 'nfkube');
  const units = join(tmp, 'odd units');
  const env = join(tmp, 'odd etc', 'nfkube.env');
  execFileSync(process.execPath, [launcher, 'install', '--systemd', '--prefix', odd, '--unit-dir', units, '--environment-file', env, '--sysusers-dir', join(tmp, 'odd sysusers')], { stdio: 'pipe' });
  const unit = join(units, 'nfkube.service');
  const s = serviceSection(readFileSync(unit, 'utf8'));
  const quoted = (p: string, executable: boolean) => `"${p.replace(/%/g, '%%').replace(/\$/g, executable ? '$' : '$$$$')}"`;
  assert.equal(s.get('ExecStart'), `${quoted(`${odd}/bin/node`, true)} ${quoted(`${odd}/bin/nfkube`, false)} ${AGENT_ARGS}`);
  assert.equal(s.get('EnvironmentFile'), env);
  const r = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8' });
  const ours = `${r.stdout}${r.stderr}`.split('\n').filter((l) => l.includes('nfkube.service'));
  assert.deepEqual(ours, [], ours.join('\n'));
  assert.equal(r.status, 0, r.stderr);
  // The words systemd hands to execve: the copied node running the copied launcher.
  const help = execFileSync(join(odd, 'bin', 'node'), [join(odd, 'bin', 'nfkube'), 'help'], { cwd: tmp, env: { PATH: '/nonexistent' }, encoding: 'utf8' });
  assert.match(help, /^usage: nfkube <command>/);
});
