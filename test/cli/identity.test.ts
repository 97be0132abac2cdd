/** What an operator sees first: --version, every flag in --help, the agent's first log line,
 * level names, the 0-pods warning, the node in verify's output, and --metrics-addr forms. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from '../../src/cli/command';
import { parseMetricsAddress, startObserveServer } from '../../src/observe/server';
import { withSandbox } from '../helpers/netns';

const root = join(__dirname, '..', '..', '..');
const bin = join(root, 'bin', 'nfkube');
const examples = join(root, 'examples');
const commandsDir = join(root, 'dist', 'src', 'cli', 'commands');

function nfkube(args: string[], netns?: string): { status: number | null; stdout: string; stderr: string } {
  const [cmd, argv] = netns ? ['nsenter', [`--net=${netns}`, process.execPath, bin, ...args]] : [process.execPath, [bin, ...args]];
  const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 60_000, env: { ...process.env, NODE_NAME: '' } });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('--version and version print the package version and the commit recorded at build time', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  const info = JSON.parse(readFileSync(join(root, 'dist', 'src', 'build-info.json'), 'utf8')) as { version: string; revision: string };
  assert.equal(info.version, pkg.version);
  const head = execFileSync('git', ['rev-parse', 'HEAD'], { cwd: root, encoding: 'utf8' }).trim();
  assert.match(info.revision, new RegExp(`^${head}(-dirty)?$`), 'the commit the build was made from');
  for (const args of [['--version'], ['version'], ['-V']]) {
    const r = nfkube(args);
    assert.equal(r.status, 0, args.join(' '));
    assert.equal(r.stdout, `nfkube ${pkg.version} (commit ${info.revision}, node ${process.version})\n`);
  }
});

test('the version path never runs a program: the revision comes from the generated file', () => {
  const src = readFileSync(join(root, 'src', 'build-info.ts'), 'utf8') + readFileSync(join(root, 'src', 'cli', 'commands', 'version.ts'), 'utf8');
  assert.doesNotMatch(src, /child_process|execFile|spawn/);
});

test('every command: --help lists every flag with a description, and its default where it has one', () => {
  const files = readdirSync(commandsDir).filter((f) => f.endsWith('.js'));
  assert.ok(files.length >= 8, 'agent, render, verify, cleanup, ipset, install, demo, version');
  for (const file of files) {
    const name = file.replace(/\.js$/, '');
    const command = (require(join(commandsDir, file)) as { default: Command }).default;
    const r = nfkube(name === 'ipset' ? ['ipset', '--help'] : [name, '--help']);
    assert.equal(r.status, 0, `${name} --help`);
    assert.equal(r.stdout, `${command.usage}\n`);
    assert.ok(command.options, `${name} declares its options (an OptionTable) and builds --help from them with usageText`);
    for (const [flag, o] of Object.entries(command.options)) {
      const line = r.stdout.split("\n").find((l) => /^  (-\w, )?--/.test(l) && (l.replace(/^  (-\w, )?/, "").startsWith(`--${flag} `) || l.replace(/^  (-\w, )?/, "") === `--${flag}`));
      assert.ok(line, `${name} --help lists --${flag}`);
      assert.ok(line.includes(o.description), `${name} --${flag} has its description`);
      assert.ok(o.description.length > 10, `${name} --${flag}: a real description`);
      if (o.default !== undefined) assert.ok(line.endsWith(`(default: ${o.default})`), `${name} --${flag} shows its default`);
    }
    // Every flag the command parses is in its table: an unknown one is refused with the usage.
    if (name !== 'version' && name !== 'ipset') {
      const bad = nfkube([name, '--no-such-flag']);
      assert.notEqual(bad.status, 0);
      assert.match(bad.stderr, /--no-such-flag/);
    }
  }
  const agent = (require(join(commandsDir, 'agent.js')) as { default: Command }).default;
  assert.deepEqual(Object.keys(agent.options ?? {}).sort(), ['allowed-external-ip-cidrs', 'cluster-cidr', 'deny-action', 'healthz-bind-address', 'ipam', 'ipam-gc-interval', 'ipam-metrics-addr', 'ipam-socket', 'ipam-state-dir', 'kube-proxy-metric-names', 'kubeconfig', 'log-burst', 'log-drops', 'log-group', 'log-level', 'log-rate', 'manifests', 'manifests-max-bytes', 'masquerade-all', 'metrics-addr', 'no-hold-table', 'no-policy', 'node-name', 'nodeport-addresses', 'once', 'policy-mode', 'proxy', 'proxy-table', 'resync-period', 'table', 'timeout']);
});

test('--metrics-addr: host:port, [v6]:port, :port for every address, empty for no server', () => {
  assert.deepEqual(parseMetricsAddress('127.0.0.1:9476'), { host: '127.0.0.1', port: 9476 });
  assert.deepEqual(parseMetricsAddress('[::1]:9476'), { host: '::1', port: 9476 });
  assert.deepEqual(parseMetricsAddress(':10249'), { host: '', port: 10249 });
  assert.equal(parseMetricsAddress(''), undefined);
  assert.throws(() => parseMetricsAddress(':99999'), /--metrics-addr: port 99999 is out of range/);
  assert.throws(() => parseMetricsAddress('9476'), /--metrics-addr: expected host:port/);
});

test('--metrics-addr :PORT serves on every address', async () => {
  const server = await startObserveServer({
    address: parseMetricsAddress(':0')!,
    metrics: async () => ({ contentType: 'text/plain', body: 'x 1\n' }),
    lastSuccessfulSync: () => Date.now(),
    resyncPeriodMs: 60_000,
    ready: () => true,
  });
  try {
    assert.equal(server.address.host, '');
    assert.equal(await (await fetch(`http://127.0.0.1:${server.address.port}/metrics`)).text(), 'x 1\n');
  } finally {
    await server.close();
  }
});

test('agent: the first log line names version, node, source, table, resync period, deny action and metrics address; levels are names; 0 pods warns', async () => {
  await withSandbox(async (sb) => {
    const info = JSON.parse(readFileSync(join(root, 'dist', 'src', 'build-info.json'), 'utf8')) as { version: string; revision: string };
    const r = nfkube(['agent', '--once', '--manifests', examples, '--node-name', 'node-without-pods', '--table', 'idt', '--resync-period', '30s', '--deny-action', 'reject', '--metrics-addr', ''], sb.netns.path);
    assert.equal(r.status, 0, r.stderr);
    const lines = r.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.deepEqual(
      { ...lines[0], time: undefined, pid: undefined, hostname: undefined },
      {
        level: 'info', component: 'nfkube', time: undefined, pid: undefined, hostname: undefined,
        version: info.version, revision: info.revision, node: 'node-without-pods', source: `manifests ${examples}`,
        tables: ['inet idt'], resyncPeriod: '30s', denyAction: 'reject', metricsAddress: 'off',
        msg: `nfkube ${info.version} agent starting`,
      },
    );
    for (const l of lines) assert.equal(typeof l.level, 'string', 'level names, not numbers');
    const warn = lines.find((l) => l.level === 'warn' && String(l.msg).includes('no pods'));
    assert.ok(warn, 'warns that this node has no pods');
    assert.equal(warn.node, 'node-without-pods');

    const v = nfkube(['verify', '--manifests', examples, '--node-name', 'node-without-pods', '--table', 'idt', '--deny-action', 'reject'], sb.netns.path);
    assert.equal(v.status, 0, v.stdout + v.stderr);
    assert.equal(JSON.parse(v.stderr.split('\n')[0]).node, 'node-without-pods');
    assert.match(v.stdout, /table inet idt matches the desired state/);
  });
});
