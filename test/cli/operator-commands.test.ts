/** Issue 26 item 6, as real processes: `nfkube status` and `nfkube drops` against an agent
 * running in a node's namespace with pods in their own (real packets dropped), and shell
 * completion generated from the option tables. */
import { spawn, spawnSync, ChildProcess } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { COMMANDS } from '../../src/cli/registry';
import { namespace, pod, policy } from '../agent/fixtures';
import { sendPackets } from '../helpers/send';
import { createTopology, Topology } from '../helpers/topology';

const root = join(__dirname, '..', '..', '..');
const bin = join(root, 'bin', 'nfkube');
const PORT = 19481;
const addr = ['--metrics-addr', `127.0.0.1:${PORT}`];

function env(): NodeJS.ProcessEnv {
  return { PATH: process.env.PATH, HOME: mkdtempSync(join(tmpdir(), 'nfkube-home-')) };
}

function nfkube(netns: string, args: string[]): { status: number | null; stdout: string; stderr: string } {
  const r = spawnSync('nsenter', [`--net=${netns}`, process.execPath, bin, ...args], { encoding: 'utf8', timeout: 60_000, env: env() });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** x/a and x/b; x/b isolated for ingress: a -> b is dropped and logged. */
function manifests(topo: Topology): string {
  const [a, b] = topo.pods;
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-status-'));
  const items = [namespace('x'), pod('x', 'a', a.ipv4, { app: 'a' }, { ip6: a.ipv6 }), pod('x', 'b', b.ipv4, { app: 'b' }, { ip6: b.ipv6 }), policy('x', 'deny-b', { podSelector: { matchLabels: { app: 'b' } }, policyTypes: ['Ingress'] })];
  writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
  return dir;
}

async function until<T>(what: string, probe: () => T | undefined, limitMs = 30_000): Promise<T> {
  const end = Date.now() + limitMs;
  for (;;) {
    const v = probe();
    if (v !== undefined) return v;
    if (Date.now() > end) return assert.fail(`${what}: not within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function stopped(child: ChildProcess): Promise<number | null> {
  return new Promise((done) => (child.exitCode !== null ? done(child.exitCode) : child.on('close', (c) => done(c))));
}

test('status and drops: the held table and its holder, health, last sync, drift; the drops a pod met, filtered and followed', { timeout: 180_000 }, async () => {
  const topo = createTopology('routed', [
    { namespace: 'x', name: 'a' },
    { namespace: 'x', name: 'b' },
  ]);
  const [a, b] = topo.pods;
  const dir = manifests(topo);
  const node = topo.nodeNetnsPath;
  const agent = spawn('nsenter', [`--net=${node}`, process.execPath, bin, 'agent', '--manifests', dir, '--node-name', 'node-1', '--log-drops', '--log-level', 'warn', ...addr], { env: env() });
  let agentErr = '';
  agent.stderr.on('data', (d) => (agentErr += d));
  try {
    const status = await until('agent ready', () => {
      const r = nfkube(node, ['status', ...addr, '--manifests', dir, '--node-name', 'node-1', '-o', 'json']);
      return r.status === 0 ? (JSON.parse(r.stdout) as Record<string, any>) : undefined;
    });
    const [policyTable, proxyTable] = status.tables;
    assert.equal(policyTable.table, 'inet nfkube');
    assert.equal(policyTable.held, true);
    // nsenter execs node in its place: the agent's pid is the child's.
    assert.equal(policyTable.holder.pid, agent.pid, 'the holder is the agent process');
    assert.match(policyTable.holder.command, /nfkube agent --manifests/);
    assert.equal(policyTable.recordedOptions, '--deny-action=drop --log-drops --log-group=100 --log-rate=10 --log-burst=5');
    assert.ok(policyTable.chains > 0 && policyTable.sets > 0 && policyTable.rules > 0);
    assert.deepEqual(proxyTable, { table: 'inet nfkube-proxy', exists: false });
    assert.equal(status.agent.healthy, true);
    assert.equal(status.agent.ready, true);
    assert.ok(status.agent.lastSyncAgeSeconds >= 0 && typeof status.agent.lastSync === 'string');
    assert.equal(typeof status.agent.pods, 'number');
    assert.equal(status.agent.policies, 1);
    assert.deepEqual(status.drift, { checked: true, tables: [{ table: 'inet nfkube', drift: false }] });
    const text = nfkube(node, ['status', ...addr]);
    assert.match(text.stdout, /^table inet nfkube: held by pid \d+ \(.*nfkube agent/m);
    assert.match(text.stdout, /^drift: not checked \(no cluster to read/m);

    // A follower started before the packets sees them as they are logged.
    const follower = spawn('nsenter', [`--net=${node}`, process.execPath, bin, 'drops', ...addr, '--follow', '-o', 'json', '--pod', 'x/b'], { env: env() });
    let followed = '';
    follower.stdout.on('data', (d) => (followed += d));
    await new Promise((r) => setTimeout(r, 1500));
    await sendPackets(a.netnsPath, 'udp', b.ipv4, 80, 4);
    await sendPackets(a.netnsPath, 'tcp', b.ipv4, 81, 4);
    const recent = await until('drops listed', () => {
      const r = nfkube(node, ['drops', ...addr]);
      return r.stdout.split('\n').filter(Boolean).length >= 2 ? r : undefined;
    });
    assert.equal(recent.status, 0, recent.stderr);
    assert.match(recent.stdout, /^\d\d:\d\d:\d\d\.\d{3} drop   udp x\/a:\d+ -> x\/b:80 \(ingress of x\/b; selected by x\/deny-b\)$/m);
    assert.match(recent.stdout, /^\d\d:\d\d:\d\d\.\d{3} drop   tcp x\/a:\d+ -> x\/b:81 /m);
    const json = nfkube(node, ['drops', ...addr, '-o', 'json', '--pod', 'x/b']).stdout.split('\n').filter(Boolean).map((l) => JSON.parse(l));
    assert.deepEqual(json.map((d) => [d.drop.protocol, d.drop.dport, d.drop.pod, d.drop.policies]), [['udp', 80, 'x/b', ['x/deny-b']], ['tcp', 81, 'x/b', ['x/deny-b']]]);
    assert.equal(nfkube(node, ['drops', ...addr, '--pod', 'y/nobody']).stdout, '', 'another pod met no drop');
    assert.equal(nfkube(node, ['drops', ...addr, '--since', '1h']).stdout.split('\n').filter(Boolean).length, 2);
    await until('the follower saw both', () => (followed.split('\n').filter(Boolean).length >= 2 ? true : undefined));
    follower.kill('SIGINT');
    assert.equal(await stopped(follower), 0, 'interrupting --follow is a normal end');
    assert.deepEqual(followed.split('\n').filter(Boolean).map((l) => JSON.parse(l).drop.dport), [80, 81]);

    // The agent stops; its table stays, no longer held; the agent is unreachable: exit 1.
    agent.kill('SIGTERM');
    assert.equal(await stopped(agent), 0, agentErr);
    const after = nfkube(node, ['status', ...addr, '--manifests', dir, '--node-name', 'node-1', '-o', 'json']);
    assert.equal(after.status, 1);
    const s2 = JSON.parse(after.stdout) as Record<string, any>;
    assert.equal(s2.tables[0].held, false);
    assert.equal(s2.agent.reachable, false);
    // Drift: a foreign change to the ownerless table is seen by reading it back.
    await topo.runInNode('nft', ['flush', 'set', 'inet', 'nfkube', 'deny_in_v4']);
    const drifted = JSON.parse(nfkube(node, ['status', ...addr, '--manifests', dir, '--node-name', 'node-1', '-o', 'json']).stdout) as Record<string, any>;
    assert.deepEqual(drifted.drift, { checked: true, tables: [{ table: 'inet nfkube', drift: true }] });
    const noAgent = nfkube(node, ['drops', ...addr]);
    assert.equal(noAgent.status, 1);
    assert.match(noAgent.stderr, /cannot reach the agent at 127\.0\.0\.1:19481/);
  } finally {
    if (agent.exitCode === null) agent.kill('SIGKILL');
    nfkube(node, ['cleanup']);
    topo.close();
  }
});

test('completion: bash and zsh scripts from the option tables complete commands and every flag', () => {
  const bash = spawnSync(process.execPath, [bin, 'completion', 'bash'], { encoding: 'utf8' });
  assert.equal(bash.status, 0, bash.stderr);
  assert.equal(spawnSync('bash', ['-n'], { input: bash.stdout }).status, 0, 'bash parses it');
  const script = join(mkdtempSync(join(tmpdir(), 'nfkube-completion-')), 'nfkube.bash');
  writeFileSync(script, bash.stdout);
  const complete = (words: string[]) =>
    spawnSync('bash', ['-c', `source ${script}; COMP_WORDS=(${words.join(' ')}); COMP_CWORD=${words.length - 1}; _nfkube; printf '%s\\n' "\${COMPREPLY[@]}"`], { encoding: 'utf8' }).stdout.trim().split('\n');
  assert.deepEqual(complete(['nfkube', 'render', '--mani']), ['--manifests', '--manifests-max-bytes']);
  assert.deepEqual(complete(['nfkube', 'sta']), ['status']);
  assert.deepEqual(complete(['nfkube', 'drops', '--fo']), ['--follow']);
  for (const [name, load] of Object.entries(COMMANDS)) {
    const flags = complete(['nfkube', name, '-']);
    for (const flag of Object.keys(load().options ?? {})) assert.ok(flags.includes(`--${flag}`), `${name} completes --${flag}`);
    assert.ok(flags.includes('--config') && flags.includes('--log-format'), `${name} completes the global options`);
  }
  const zsh = spawnSync(process.execPath, [bin, 'completion', 'zsh'], { encoding: 'utf8' });
  assert.equal(zsh.status, 0);
  assert.match(zsh.stdout, /^#compdef nfkube$/m);
  assert.match(zsh.stdout, /^ {4}agent\) compadd -- .*--log-drops .*--policy-mode/m);
  const bad = spawnSync(process.execPath, [bin, 'completion', 'fish', '--log-format', 'text'], { encoding: 'utf8' });
  assert.equal(bad.status, 1);
  assert.equal(bad.stderr, 'nfkube completion: expected bash or zsh, got "fish" (see nfkube completion --help)\n');
});
