/** Real CNI: Debian's reference bridge plugin, invoked exactly as the CNI spec says (CNI_COMMAND,
 * CNI_CONTAINERID, CNI_NETNS, CNI_IFNAME, CNI_PATH, config on stdin), with nfkube-cni-ipam as its
 * ipam, in namespaces this test creates: two pods get distinct addresses and ping each other; DEL
 * frees; GC frees what the runtime's list omits; with the agent down ADD fails with a CNI error.
 * The plugin is the compiled one (native/cni/) when this checkout has it; the last case runs bridge
 * with the Node plugin, the fallback installed where no compiler was. */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, test } from 'node:test';
import { Netns } from '../../src/netlink/netns';
import { IpamService } from '../../src/ipam/service';
import { IpamSocketServer } from '../../src/ipam/server';
import { pool } from './cluster';
import { COMPILED_PLUGIN, NODE_PLUGIN, PluginAgent, PluginRun, runPlugin, startPluginAgent } from './plugins';

const BRIDGE = '/usr/lib/cni/bridge';
const PLUGIN = COMPILED_PLUGIN ?? NODE_PLUGIN;
const skip = !existsSync(BRIDGE) ? 'containernetworking-plugins is not installed' : process.getuid?.() !== 0 ? 'needs root for network namespaces' : false;

let warm: PluginAgent;
let agent: IpamService;
let socket: IpamSocketServer;
let host: Netns;
let pluginDir: string;
/** CNI_PATH holding the Node plugin as nfkube-cni-ipam. */
let nodePluginDir: string;
const pods: Netns[] = [];
/** The pod attached through the Node plugin. */
let nodePod: Netns;

function conf(version = '1.0.0', extra: Record<string, unknown> = {}, socketPath = socket.path): string {
  return JSON.stringify({
    cniVersion: version,
    name: 'nfkube-test',
    type: 'bridge',
    bridge: 'nfk0',
    isGateway: false,
    ipMasq: false,
    ipam: { type: 'nfkube-cni-ipam', socket: socketPath, pool: 'cni' },
    ...extra,
  });
}

/** Runs a plugin as a runtime does; the "host" side lives in the test's own namespace. Async:
 * the agent answering the plugin runs in this process. */
function cni(binary: string, command: string, containerID: string, netns: string, stdin: string, cniPath = pluginDir): Promise<PluginRun> {
  return runPlugin(['nsenter', `--net=${host.path}`, binary], {
    PATH: `${dirname(process.execPath)}:/usr/sbin:/usr/bin:/sbin:/bin`,
    CNI_COMMAND: command,
    CNI_CONTAINERID: containerID,
    CNI_NETNS: netns,
    CNI_IFNAME: 'eth0',
    CNI_PATH: `${cniPath}:/usr/lib/cni`,
    CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME=${containerID}`,
  }, stdin);
}

function inPod(ns: Netns, cmd: string, args: string[]): Promise<string> {
  return new Promise((res, rej) => execFile('nsenter', [`--net=${ns.path}`, cmd, ...args], { encoding: 'utf8', timeout: 15_000 }, (e, out) => (e ? rej(e) : res(out))));
}

/** UDP echo on port 7 (v4 and v6) inside a pod; what the ping below talks to. */
const UDP_ECHO = `
const dgram = require('node:dgram');
for (const type of ['udp4', 'udp6']) {
  const s = dgram.createSocket({ type, ipv6Only: type === 'udp6' });
  s.on('message', (m, r) => s.send(Buffer.concat([Buffer.from('echo '), m]), r.port, r.address));
  s.bind(7);
}`;
/** Sends a datagram every 200 ms (duplicate address detection may hold v6 for a second) and
 * prints the first echo; gives up after 10 s. */
const UDP_PING = `
const dgram = require('node:dgram');
const to = process.argv[1];
const s = dgram.createSocket(to.includes(':') ? 'udp6' : 'udp4');
s.on('message', (m, r) => { if (m.toString() === 'echo ping' && r.address === to) { process.stdout.write('echo from ' + r.address); process.exit(0); } });
s.on('error', () => {});
const t = setInterval(() => s.send('ping', 7, to, () => {}), 200);
setTimeout(() => { clearInterval(t); process.stderr.write('no echo from ' + to); process.exit(1); }, 10000);`;

function startEcho(ns: Netns): import('node:child_process').ChildProcess {
  return spawn('nsenter', [`--net=${ns.path}`, process.execPath, '-e', UDP_ECHO], { stdio: 'ignore' });
}

before(async () => {
  if (skip) return;
  warm = await startPluginAgent('cni-node', [pool('cni', ['198.18.64.0/24', '2001:db8:64::/120'], { ipv4: 28, ipv6: 124 })]);
  ({ agent, socket } = warm);
  pluginDir = mkdtempSync(join(tmpdir(), 'nfkube-cni-bin-'));
  symlinkSync(PLUGIN, join(pluginDir, 'nfkube-cni-ipam'));
  nodePluginDir = mkdtempSync(join(tmpdir(), 'nfkube-cni-bin-node-'));
  symlinkSync(NODE_PLUGIN, join(nodePluginDir, 'nfkube-cni-ipam'));
  host = Netns.create();
  pods.push(Netns.create(), Netns.create());
  nodePod = Netns.create();
});

after(async () => {
  if (skip) return;
  await warm.close();
  for (const p of pods) p.close();
  nodePod.close();
  host.close();
});

test('bridge + nfkube-cni-ipam: two pods get distinct addresses and reach each other; DEL frees', { skip }, async () => {
  const results: Array<{ ips: Array<{ address: string }> }> = [];
  for (const [i, p] of pods.entries()) {
    const r = await cni(BRIDGE, 'ADD', `pod${i}`, p.path, conf());
    assert.equal(r.status, 0, `bridge ADD failed: ${r.out} ${r.err}`);
    results.push(JSON.parse(r.out));
  }
  const v4 = results.map((r) => r.ips.find((ip) => ip.address.includes('.'))!.address);
  const v6 = results.map((r) => r.ips.find((ip) => ip.address.includes(':'))!.address);
  assert.notEqual(v4[0], v4[1]);
  assert.notEqual(v6[0], v6[1]);
  assert.ok(v4.every((a) => a.startsWith('198.18.64.') && a.endsWith('/24')), v4.join());
  // The interface in the pod carries the address the plugin returned.
  assert.match(await inPod(pods[0], 'ip', ['-o', 'addr', 'show', 'dev', 'eth0']), new RegExp(v4[0].replace(/\./g, '\\.')));
  // Each pod echoes UDP; each sends to the other (v4 and v6) and must get its echo back.
  const echo = [startEcho(pods[0]), startEcho(pods[1])];
  try {
    for (const [from, to] of [[0, 1], [1, 0]]) {
      for (const addrs of [v4, v6]) {
        const reply = await inPod(pods[from], process.execPath, ['-e', UDP_PING, addrs[to].split('/')[0]]);
        assert.equal(reply.trim(), `echo from ${addrs[to].split('/')[0]}`);
      }
    }
  } finally {
    for (const e of echo) e.kill();
  }
  // A retried ADD (same container and interface) gets the same addresses.
  const again = JSON.parse((await spawnIpam('ADD', 'pod0', pods[0].path, conf())).out) as { ips: Array<{ address: string }> };
  assert.deepEqual(again.ips.map((i) => i.address).sort(), results[0].ips.map((i) => i.address).sort());
  // CHECK of the ipam (bridge's own CHECK also compares the bridge's MAC, which changes as ports join).
  const check = await spawnIpam('CHECK', 'pod0', pods[0].path, conf('1.0.0', { prevResult: results[0] }));
  assert.equal(check.status, 0, `CHECK: ${check.out} ${check.err}`);
  const wrong = await spawnIpam('CHECK', 'pod0', pods[0].path, conf('1.0.0', { prevResult: results[1] }));
  assert.equal(JSON.parse(wrong.out).code, 100, 'CHECK against other addresses fails');
  const del = await cni(BRIDGE, 'DEL', 'pod1', pods[1].path, conf());
  assert.equal(del.status, 0, del.out);
  assert.equal(agent.state.allocations.size, 1, [...agent.state.allocations.keys()].join());
  const delUnknown = await cni(BRIDGE, 'DEL', 'never-added', pods[1].path, conf());
  assert.equal(delUnknown.status, 0, 'DEL of an unknown attachment succeeds');
});

/** The IPAM plugin alone, as a 1.1 runtime would call it (bridge 1.1 predates GC). */
function spawnIpam(command: string, containerID: string, netns: string, stdin: string): Promise<{ status: number | null; out: string; err: string }> {
  return cni(join(pluginDir, 'nfkube-cni-ipam'), command, containerID, netns, stdin);
}

test('GC (CNI 1.1) releases every attachment the runtime no longer lists; VERSION; STATUS', { skip }, async () => {
  const extra = await spawnIpam('ADD', 'stray', pods[1].path, conf('1.1.0'));
  assert.equal(extra.status, 0, extra.out);
  const before = agent.state.allocations.size;
  const gc = await spawnIpam('GC', '', '', conf('1.1.0', { 'cni.dev/valid-attachments': [{ containerID: 'pod0', ifname: 'eth0' }] }));
  assert.equal(gc.status, 0, gc.out);
  assert.equal(agent.state.allocations.size, 1);
  assert.ok(before > 1);
  assert.ok(agent.state.allocations.has('nfkube-test/pod0/eth0'));
  const version = JSON.parse((await spawnIpam('VERSION', '', '', '{"cniVersion":"1.1.0"}')).out);
  assert.deepEqual(version.supportedVersions, ['0.3.0', '0.3.1', '0.4.0', '1.0.0', '1.1.0']);
  assert.equal((await spawnIpam('STATUS', '', '', conf('1.1.0'))).status, 0);
  const legacy = JSON.parse((await spawnIpam('ADD', 'old', pods[1].path, conf('0.4.0'))).out);
  assert.ok(legacy.ips.every((ip: { version: string }) => ip.version === '4' || ip.version === '6'), 'pre-1.0 results carry ips[].version');
});

test('with the agent down, ADD fails with a CNI error and allocates nothing', { skip }, async () => {
  const count = agent.state.allocations.size;
  const r = await spawnIpam('ADD', 'orphan', pods[1].path, conf('1.0.0', {}, join(pluginDir, 'no-agent.sock')));
  assert.equal(r.status, 1);
  const err = JSON.parse(r.out);
  assert.equal(err.code, 11);
  assert.match(err.msg, /not running/);
  assert.equal(agent.state.allocations.size, count);
  const bad = await spawnIpam('ADD', 'x', pods[1].path, '{not json');
  assert.equal(JSON.parse(bad.out).code, 6);
  const noVersion = await spawnIpam('ADD', 'x', pods[1].path, conf('9.9.9'));
  assert.equal(JSON.parse(noVersion.out).code, 1);
});

test('bridge + the Node plugin (the fallback): ADD gets a distinct address that reaches a pod of the compiled plugin; DEL frees', { skip }, async () => {
  const pod = nodePod;
  const r = await cni(BRIDGE, 'ADD', 'node-pod', pod.path, conf(), nodePluginDir);
  assert.equal(r.status, 0, `bridge ADD with the Node plugin failed: ${r.out} ${r.err}`);
  const v4 = (JSON.parse(r.out) as { ips: Array<{ address: string }> }).ips.find((ip) => ip.address.includes('.'))!.address;
  const pod0 = agent.state.allocations.get('nfkube-test/pod0/eth0')!.ips.find((ip) => ip.address.includes('.'))!.address;
  assert.notEqual(v4, pod0);
  assert.match(await inPod(pod, 'ip', ['-o', 'addr', 'show', 'dev', 'eth0']), new RegExp(v4.split('/')[0].replace(/\./g, '\\.')));
  const echo = startEcho(pods[0]);
  try {
    const reply = await inPod(pod, process.execPath, ['-e', UDP_PING, pod0.split('/')[0]]);
    assert.equal(reply.trim(), `echo from ${pod0.split('/')[0]}`);
  } finally {
    echo.kill();
  }
  assert.ok(agent.state.allocations.has('nfkube-test/node-pod/eth0'));
  const del = await cni(BRIDGE, 'DEL', 'node-pod', pod.path, conf(), nodePluginDir);
  assert.equal(del.status, 0, del.out);
  assert.equal(agent.state.allocations.has('nfkube-test/node-pod/eth0'), false);
});
