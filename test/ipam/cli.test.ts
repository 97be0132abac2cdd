/** The commands as an operator runs them: `nfkube agent --ipam --no-policy` serving the plugin
 * (exec'd as a runtime does), stopping on SIGTERM with its record kept; `nfkube ipam show` and
 * `nfkube ipam check` (exit 1 on a duplicate, a leak or an orphan). */
import assert from 'node:assert/strict';
import { ChildProcess, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { TestApiServer } from '../helpers/apiserver';
import { node, pool, podObject, startIpamApiServer } from './cluster';

const root = resolve(__dirname, '..', '..', '..');
const NFKUBE = join(root, 'bin', 'nfkube');
const PLUGIN = join(root, 'bin', 'nfkube-cni-ipam');

let server: TestApiServer;
let kubeconfig: string;
let dir: string;

before(async () => {
  server = await startIpamApiServer();
  kubeconfig = server.writeKubeconfig();
  dir = mkdtempSync(join(tmpdir(), 'nfkube-ipam-cli-'));
  server.create(pool('cli', ['198.18.32.0/24'], { ipv4: 28 }));
  server.create(node('cli-node'));
});
after(async () => server.close());

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv = {}, input = ''): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [cmd, ...args], { env: { ...process.env, ...env } });
    let out = '';
    let err = '';
    child.stdout.on('data', (c) => (out += c));
    child.stderr.on('data', (c) => (err += c));
    child.on('error', rej);
    child.on('close', (code) => res({ code, out, err }));
    child.stdin.end(input);
  });
}

async function waitFor(cond: () => boolean, what: string, ms = 30_000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('agent --ipam --no-policy serves the plugin; SIGTERM stops it; the record stays', async () => {
  const sock = join(dir, 'ipam.sock');
  const agent: ChildProcess = spawn(process.execPath, [NFKUBE, 'agent', '--ipam', '--no-policy', '--kubeconfig', kubeconfig, '--node-name', 'cli-node', '--ipam-socket', sock, '--ipam-state-dir', dir, '--metrics-addr', '127.0.0.1:0', '--log-level', 'warn'], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  agent.stderr!.on('data', (c) => (stderr += c));
  const exited = new Promise<number | null>((r) => agent.on('exit', (code) => r(code)));
  try {
    await waitFor(() => existsSync(sock), 'the ipam socket');
    const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'cli-net', ipam: { type: 'nfkube-cni-ipam', socket: sock } });
    const env = { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'ctr1', CNI_IFNAME: 'eth0', CNI_NETNS: '/proc/self/ns/net', CNI_ARGS: 'K8S_POD_NAMESPACE=default;K8S_POD_NAME=p1' };
    const r = await run(PLUGIN, [], env, conf);
    assert.equal(r.code, 0, r.out + r.err);
    const result = JSON.parse(r.out);
    assert.equal(result.cniVersion, '1.0.0');
    assert.match(result.ips[0].address, /^198\.18\.32\.\d+\/24$/);
    const again = await run(PLUGIN, [], env, conf);
    assert.deepEqual(JSON.parse(again.out), result, 'ADD is idempotent');
  } finally {
    agent.kill('SIGTERM');
  }
  assert.equal(await exited, 0, stderr);
  assert.equal(existsSync(sock), false, 'the socket is removed on stop');
  assert.match(readFileSync(join(dir, 'cli-node.wal'), 'utf8'), /"containerID":"ctr1"/);
});

test('ipam show lists pools, blocks and allocations; ipam check passes, then finds a leak and an orphan', async () => {
  // The pod p1 that ctr1 was allocated for exists: no leak yet.
  server.create(podObject('default', 'p1', 'cli-node'));
  const show = await run(NFKUBE, ['ipam', 'show', '--kubeconfig', kubeconfig]);
  assert.equal(show.code, 0, show.err);
  assert.match(show.out, /^POOLS\n {2}cli {2}cidrs=198\.18\.32\.0\/24/m);
  assert.match(show.out, /198\.18\.32\.\d+\/28 {2}node=cli-node {2}pool=cli {2}allocated=1/);
  assert.match(show.out, /198\.18\.32\.\d+ {2}cli-node cli-net\/ctr1\/eth0 {2}pod=default\/p1/);
  const ok = await run(NFKUBE, ['ipam', 'check', '--kubeconfig', kubeconfig]);
  assert.equal(ok.code, 0, ok.out + ok.err);
  assert.match(ok.out, /^ok: 1 blocks/m);
  server.delete('Pod', 'default', 'p1');
  server.create({ apiVersion: 'ipam.nfkube.io/v1alpha1', kind: 'IPBlock', metadata: { name: 'v4-198-18-32-240-28' }, spec: { pool: 'cli', cidr: '198.18.32.240/28', node: 'gone-node' } });
  const bad = await run(NFKUBE, ['ipam', 'check', '--kubeconfig', kubeconfig]);
  assert.equal(bad.code, 1);
  assert.match(bad.out, /^leak: 198\.18\.32\.\d+ is held for pod default\/p1, which no longer exists/m);
  assert.match(bad.out, /^orphan: IPBlock v4-198-18-32-240-28 \(198\.18\.32\.240\/28\) is held by node gone-node, which does not exist/m);
});
