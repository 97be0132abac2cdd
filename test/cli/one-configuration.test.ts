/** Issue 26 items 3 and 5, as real processes: one configuration (--config, NFKUBE_*, flags, and the
 * options the agent records in its table), kubeconfig found as kubectl finds it, and output for
 * people (one-line usage errors with "did you mean", text or JSON logs, quiet EPIPE, what
 * cleanup did, render's warning on a node with no pods). */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseWithPositionals, usageText } from '../../src/cli/options';
import { parseConfig } from '../../src/cli/config';
import { DENY_OPTIONS } from '../../src/policy/options';
import { COMMON_OPTIONS } from '../../src/cli/options';
import { withSandbox, Sandbox } from '../helpers/netns';

const root = join(__dirname, '..', '..', '..');
const bin = join(root, 'bin', 'nfkube');
const examples = join(root, 'examples');
const node = ['--node-name', 'node-1'];

/** The environment without anything that would configure nfkube or find a cluster. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { PATH: process.env.PATH, HOME: mkdtempSync(join(tmpdir(), 'nfkube-home-')), ...extra };
  return env;
}

function nfkube(args: string[], opts: { netns?: string; env?: NodeJS.ProcessEnv } = {}): { status: number | null; stdout: string; stderr: string } {
  const [cmd, argv] = opts.netns ? ['nsenter', [`--net=${opts.netns}`, process.execPath, bin, ...args]] : [process.execPath, [bin, ...args]];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 60_000, env: opts.env ?? cleanEnv() });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

const table = { ...COMMON_OPTIONS, ...DENY_OPTIONS };

test('precedence: flags > NFKUBE_* > the --config file > defaults, from the same option table', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-config-'));
  const file = join(dir, 'nfkube.yaml');
  writeFileSync(file, 'apiVersion: nfkube.io/v1alpha1\nkind: NfkubeConfiguration\ndenyAction: reject\nlogDrops: true\nlogRate: 7\ntable: from-file\n');
  const usage = usageText('nfkube verify [options]', table);
  const parse = (args: string[], env: NodeJS.ProcessEnv) => parseWithPositionals(args, table, usage, false, env).values;
  assert.deepEqual(parse(['--config', file], {}), { 'deny-action': 'reject', 'log-drops': true, 'log-rate': '7', table: 'from-file' });
  assert.deepEqual(parse([], { NFKUBE_CONFIG: file, NFKUBE_TABLE: 'from-env', NFKUBE_LOG_DROPS: 'false' }), { 'deny-action': 'reject', 'log-drops': true, 'log-rate': '7', table: 'from-env' });
  assert.deepEqual(parse(['--table', 'from-flag', '--deny-action', 'drop'], { NFKUBE_CONFIG: file, NFKUBE_TABLE: 'from-env' }), { 'deny-action': 'drop', 'log-drops': true, 'log-rate': '7', table: 'from-flag' });
  assert.deepEqual(parse([], {}), {}, 'nothing set: the defaults stay the commands’ own');
  assert.throws(() => parse([], { NFKUBE_LOG_DROPS: 'maybe' }), /NFKUBE_LOG_DROPS: "maybe" is not true or false/);
  // Every option of the table has its environment variable and field in --help.
  assert.match(usage, /--config FILE +read options from a NfkubeConfiguration YAML file/);
});

test('the config file: versioned, and an unknown field is an error naming it (with the field meant)', () => {
  const known = { ...table, 'resync-period': { type: 'string', description: 'x' } } as const;
  const header = 'apiVersion: nfkube.io/v1alpha1\nkind: NfkubeConfiguration\n';
  assert.throws(() => parseConfig(`${header}denyActon: reject\n`, 'c.yaml', known), /--config c\.yaml: unknown field "denyActon"; did you mean denyAction\?/);
  assert.throws(() => parseConfig('apiVersion: nfkube.io/v1\nkind: NfkubeConfiguration\n', 'c.yaml', known), /apiVersion: "nfkube.io\/v1" is not nfkube.io\/v1alpha1/);
  assert.throws(() => parseConfig(`${header}logDrops: "yes"\n`, 'c.yaml', known), /logDrops: "yes" is not true or false/);
  assert.throws(() => parseConfig(`${header}table: [1, 2]\n`, 'c.yaml', known), /table: \[1,2\] is not a string/);
  assert.throws(() => parseConfig(`${header}table: a\ntable: b\n`, 'c.yaml', known), /not YAML/);
  // A field of another command (the agent's resync period) is left to it.
  assert.deepEqual(parseConfig(`${header}resyncPeriod: 30s\n`, 'c.yaml', known), { 'resync-period': '30s' });
  // Through the CLI: one line, exit 1.
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-config-'));
  writeFileSync(join(dir, 'c.yaml'), `${header}denyActon: reject\n`);
  const r = nfkube(['render', '--manifests', examples, '--config', join(dir, 'c.yaml'), '--log-format', 'text']);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, `nfkube render: --config ${join(dir, 'c.yaml')}: unknown field "denyActon"; did you mean denyAction?\n`);
});

test('a mistyped flag or command: one line with "did you mean", no stack, no usage text', () => {
  const r = nfkube(['render', '--manifest', examples, '--log-format', 'text']);
  assert.equal(r.status, 1);
  assert.equal(r.stderr, 'nfkube render: unknown option "--manifest"; did you mean --manifests? (see nfkube render --help)\n');
  const json = nfkube(['render', '--manifest', examples]);
  const lines = json.stderr.trim().split('\n');
  assert.equal(lines.length, 1, 'one JSON line when stderr is not a terminal');
  const line = JSON.parse(lines[0]) as Record<string, unknown>;
  assert.equal(line.command, 'render');
  assert.match(String(line.msg), /did you mean --manifests\?/);
  assert.equal(line.err, undefined, 'no stack');
  const cmd = nfkube(['verfy']);
  assert.equal(cmd.status, 2);
  assert.equal(cmd.stderr, 'nfkube: unknown command "verfy"; did you mean verify? (see nfkube help)\n');
  const ipam = nfkube(['ipam', 'shwo', '--log-format', 'text']);
  assert.equal(ipam.stderr, 'nfkube ipam: expected show or check, got "shwo"; did you mean show? (see nfkube ipam --help)\n');
});

test('logs: JSON lines when stderr is not a terminal, one readable line each with --log-format text or NFKUBE_LOG_FORMAT', () => {
  const json = nfkube(['render', '--manifests', examples, '--node-name', 'no-such-node']);
  assert.equal(json.status, 0, json.stderr);
  const text = nfkube(['render', '--manifests', examples, '--node-name', 'no-such-node', '--log-format', 'text']);
  // render warns about a node with no pods, in the command's own words.
  assert.equal(text.stderr, 'nfkube render: warning: no pods are scheduled on node no-such-node: nothing to enforce yet (is --node-name right?)\n');
  const env = nfkube(['verify', '--manifests', examples], { env: cleanEnv({ NFKUBE_LOG_FORMAT: 'text', NODE_NAME: 'n' }) });
  // No kernel access needed to see the format of the first line (verify names its node).
  assert.match(env.stderr.split('\n')[0], /^\d\d:\d\d:\d\d\.\d{3} INFO  verifying node n node=n table="inet nfkube"$/);
  const bad = nfkube(['render', '--manifests', examples, '--log-format', 'yaml']);
  assert.match(bad.stderr, /--log-format: \\?"yaml\\?" is not json or text/);
});

async function agentOnce(sb: Sandbox, args: string[], env = cleanEnv()): Promise<void> {
  const r = nfkube(['agent', '--once', '--manifests', examples, ...node, '--log-level', 'warn', ...args], { netns: sb.netns.path, env });
  assert.equal(r.status, 0, r.stderr);
}

test('verify and explain agree with the agent without its flags: the options are recorded in the table', async () => {
  await withSandbox(async (sb) => {
    await agentOnce(sb, ['--log-drops', '--policy-mode', 'audit', '--deny-action', 'reject']);
    // nft reads the table with nfkube's own user data (it ignores the TLV it does not know).
    assert.match(sb.run('nft', ['list', 'table', 'inet', 'nfkube']), /comment "managed by nfkube"/);
    const verify = nfkube(['verify', '--manifests', examples, ...node, '--log-level', 'warn'], { netns: sb.netns.path });
    assert.equal(verify.status, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, /table inet nfkube matches the desired state/);
    const explain = nfkube(['explain', '--manifests', examples, ...node, 'shop/web', 'shop/db', '--port', '5432'], { netns: sb.netns.path });
    assert.equal(explain.status, 0, explain.stdout + explain.stderr);
    assert.doesNotMatch(explain.stderr, /disagree/);
    // An explicit option still wins, and says it differs from the record.
    const other = nfkube(['verify', '--manifests', examples, ...node, '--log-level', 'warn', '--deny-action', 'drop'], { netns: sb.netns.path });
    assert.equal(other.status, 1, 'drop is not what the table enforces');
    assert.match(other.stderr, /nfkube verify: note: --deny-action drop differs from reject, which the agent recorded in table inet nfkube; using the given value/);
    // The agent started with other options replaces the table (the kernel sets user data only at
    // creation), so the record stays true.
    await agentOnce(sb, []);
    const again = nfkube(['verify', '--manifests', examples, ...node, '--log-level', 'warn'], { netns: sb.netns.path });
    assert.equal(again.status, 0, again.stdout + again.stderr);
    assert.doesNotMatch(sb.run('nft', ['list', 'table', 'inet', 'nfkube']), /log group|reject/);
  });
});

test('a --config file and NFKUBE_* configure the agent; flags win over both', async () => {
  await withSandbox(async (sb) => {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-config-'));
    const file = join(dir, 'nfkube.yaml');
    writeFileSync(file, 'apiVersion: nfkube.io/v1alpha1\nkind: NfkubeConfiguration\ndenyAction: reject\ntable: fromfile\n');
    await agentOnce(sb, ['--config', file]);
    assert.match(sb.run('nft', ['list', 'table', 'inet', 'fromfile']), /reject/);
    await agentOnce(sb, [], cleanEnv({ NFKUBE_CONFIG: file, NFKUBE_TABLE: 'fromenv' }));
    assert.match(sb.run('nft', ['list', 'table', 'inet', 'fromenv']), /reject/);
    await agentOnce(sb, ['--table', 'fromflag', '--deny-action', 'drop'], cleanEnv({ NFKUBE_CONFIG: file, NFKUBE_TABLE: 'fromenv' }));
    assert.doesNotMatch(sb.run('nft', ['list', 'table', 'inet', 'fromflag']), /reject/);
    const cleanup = nfkube(['cleanup', '--table', 'fromflag'], { netns: sb.netns.path });
    assert.equal(cleanup.status, 0, cleanup.stderr);
    assert.equal(cleanup.stdout, 'deleted table inet fromflag\ntable inet nfkube-proxy does not exist: nothing to delete\n');
  });
});

test('explain | head: a reader that stops reading ends the command quietly, exit 0', async () => {
  await withSandbox(async (sb) => {
    await agentOnce(sb, []);
    const child = spawn('nsenter', [`--net=${sb.netns.path}`, process.execPath, bin, 'explain', '--manifests', examples, ...node, 'shop/web', 'shop/db'], { env: cleanEnv() });
    // The reader is gone before the command writes a byte.
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (b) => (stderr += b));
    const code = await new Promise<number | null>((done) => child.on('close', (c) => done(c)));
    assert.equal(code, 0, stderr);
    assert.doesNotMatch(stderr, /EPIPE|Unhandled/);
  });
});

test('kubeconfig as kubectl finds it: $KUBECONFIG and ~/.kube/config for every command; agent --ipam --manifests writes nothing', async () => {
  await withSandbox(async (sb) => {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-kc-'));
    const kubeconfig = join(dir, 'kubeconfig');
    // Port 1 of the sandbox's loopback: nothing listens, every connection is refused.
    writeFileSync(kubeconfig, JSON.stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1', 'insecure-skip-tls-verify': true } }], users: [{ name: 'u', user: { token: 't' } }], contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }], 'current-context': 'c' }));
    const viaEnv = nfkube(['ipam', 'show', '--log-format', 'text'], { netns: sb.netns.path, env: cleanEnv({ KUBECONFIG: `${join(dir, 'missing')}:${kubeconfig}` }) });
    assert.equal(viaEnv.status, 1);
    assert.doesNotMatch(viaEnv.stderr, /Invalid URL/);
    assert.match(viaEnv.stderr, /ECONNREFUSED|127\.0\.0\.1:1/);
    const home = mkdtempSync(join(tmpdir(), 'nfkube-home-'));
    spawnSync('mkdir', ['-p', join(home, '.kube')]);
    writeFileSync(join(home, '.kube', 'config'), JSON.stringify({ apiVersion: 'v1', kind: 'Config', clusters: [{ name: 'c', cluster: { server: 'https://127.0.0.1:1' } }], users: [{ name: 'u', user: { token: 't' } }], contexts: [{ name: 'c', context: { cluster: 'c', user: 'u' } }], 'current-context': 'c' }));
    const viaHome = nfkube(['ipam', 'check', '--log-format', 'text'], { netns: sb.netns.path, env: { PATH: process.env.PATH, HOME: home } });
    assert.equal(viaHome.status, 1);
    assert.doesNotMatch(viaHome.stderr, /Invalid URL/);
    assert.match(viaHome.stderr, /ECONNREFUSED|127\.0\.0\.1:1/);
    const none = nfkube(['ipam', 'show', '--log-format', 'text'], { netns: sb.netns.path });
    assert.match(none.stderr, /^nfkube ipam: no cluster to read: pass --kubeconfig PATH or --manifests DIR, set \$KUBECONFIG, create ~\/\.kube\/config/);

    const state = join(dir, 'state');
    const ipam = nfkube(['agent', '--ipam', '--manifests', examples, ...node, '--ipam-state-dir', state, '--ipam-socket', join(dir, 'sock'), '--log-format', 'text'], { netns: sb.netns.path });
    assert.equal(ipam.status, 1);
    assert.match(ipam.stderr, /^nfkube agent: --ipam needs an API server/);
    assert.equal(existsSync(state), false, 'no write-ahead file');
    assert.equal(existsSync(join(dir, 'sock')), false);
  });
});

test('the proxy table records the proxy options: verify --proxy agrees without repeating them', async () => {
  const { node1, web, webSlice } = await import('../k8s/service-objects');
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-proxy-record-'));
  writeFileSync(join(dir, 'svc.yaml'), [web, webSlice, node1].map((o) => JSON.stringify(o)).join('\n---\n'));
  await withSandbox(async (sb) => {
    const base = ['--manifests', dir, ...node, '--proxy', '--no-policy', '--log-level', 'warn'];
    const once = nfkube(['agent', '--once', ...base, '--cluster-cidr', '198.18.0.0/16,2001:db8::/32', '--masquerade-all'], { netns: sb.netns.path });
    assert.equal(once.status, 0, once.stderr);
    const verify = nfkube(['verify', ...base], { netns: sb.netns.path });
    assert.equal(verify.status, 0, verify.stdout + verify.stderr);
    assert.match(verify.stdout, /table inet nfkube-proxy matches the desired state/);
    const status = nfkube(['status', '-o', 'json', '--metrics-addr', '127.0.0.1:1'], { netns: sb.netns.path });
    assert.equal(JSON.parse(status.stdout).tables[1].recordedOptions, '--cluster-cidr=198.18.0.0/16,2001:db8::/32 --masquerade-all');
  });
});

test('every EPERM says CAP_NET_ADMIN is needed, in the one error style', async () => {
  await withSandbox(async (sb) => {
    const drop = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups', '--inh-caps=-all'];
    const cases: [string, string[]][] = [
      ['status', ['status', '--log-format', 'text']],
      ['explain', ['explain', '--manifests', examples, ...node, 'shop/web', 'shop/db', '--log-format', 'text']],
      ['ipset', ['ipset', 'save', '--log-format', 'text']],
      ['verify', ['verify', '--manifests', examples, ...node, '--log-format', 'text']],
    ];
    for (const [name, args] of cases) {
      const r = spawnSync('nsenter', [`--net=${sb.netns.path}`, ...drop, process.execPath, bin, ...args], { encoding: 'utf8', timeout: 60_000, env: cleanEnv({ HOME: '/nonexistent' }) });
      assert.equal(r.status, 1, `${name}: ${r.stderr}`);
      const lines = r.stderr.trim().split('\n');
      const last = lines[lines.length - 1];
      assert.match(last, new RegExp(`^nfkube ${name}( save)?: .*EPERM.*nfkube needs CAP_NET_ADMIN in this network namespace`), `${name}: ${r.stderr}`);
      assert.doesNotMatch(r.stderr, /\n\s+at /, `${name}: no stack`);
    }
  });
});
