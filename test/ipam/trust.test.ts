/** Trust on the node: the agent refuses a socket or state directory another user owns or can
 * write, never follows a link planted at a state file's name, and both plugins refuse to send
 * anything to a socket served by another user (the compiled one by SO_PEERCRED, the Node one by
 * the socket's and its directory's owner). */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { serveIpamSocket } from '../../src/ipam/server';
import { Wal } from '../../src/ipam/wal';
import { PLUGINS, runPlugin } from './plugins';
import { firstLine } from './small-tmpfs';

const root = typeof process.getuid === 'function' && process.getuid() === 0;
const NOBODY = 65534;

function freshDir(mode: number, uid?: number): string {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-ipam-trust-'));
  chmodSync(dir, mode);
  if (uid !== undefined) chownSync(dir, uid, uid);
  return dir;
}

test('the socket and the state directory are refused when others can write them or another user owns them', { skip: root ? false : 'needs root to chown' }, async () => {
  await assert.rejects(serveIpamSocket(join(freshDir(0o777), 'ipam.sock'), async () => ({ ok: true })), /--ipam-socket: .* is writable by group or others; refusing to serve there/);
  await assert.rejects(serveIpamSocket(join(freshDir(0o700, NOBODY), 'ipam.sock'), async () => ({ ok: true })), /--ipam-socket: .* belongs to uid 65534, not 0/);
  await assert.rejects(Wal.open(join(freshDir(0o775), 'n.wal')), /--ipam-state-dir: .* is writable by group or others; refusing to keep allocations there/);
  await assert.rejects(Wal.open(join(freshDir(0o700, NOBODY), 'n.wal')), /--ipam-state-dir: .* belongs to uid 65534, not 0/);
});

test('a link planted at the temporary or the record file name is never followed', async () => {
  const dir = freshDir(0o700);
  const victim = join(freshDir(0o700), 'victim');
  writeFileSync(victim, 'precious\n');
  symlinkSync(victim, join(dir, 'n.wal.tmp'));
  const { wal } = await Wal.open(join(dir, 'n.wal'));
  await wal.append([{ op: 'del', key: 'x' }]);
  await wal.close();
  assert.equal(readFileSync(victim, 'utf8'), 'precious\n', 'the compaction did not write through the link');
  const linked = freshDir(0o700);
  symlinkSync(victim, join(linked, 'n.wal'));
  await assert.rejects(Wal.open(join(linked, 'n.wal')), /ELOOP/);
  assert.equal(readFileSync(victim, 'utf8'), 'precious\n');
});

/** A socket served by uid 65534 in a directory anyone can write: what an attacker can plant. It
 * answers whatever it is sent with an address of its choosing, and reports what it received. */
async function plantedAgent(dir: string): Promise<{ path: string; received: () => string; stop: () => void }> {
  const path = join(dir, 'ipam.sock');
  const script = `
    const net = require('node:net');
    net.createServer((s) => {
      s.on('data', (d) => {
        process.stdout.write('GOT ' + d.length + '\\n');
        const result = JSON.stringify({ cniVersion: '1.0.0', ips: [{ address: '203.0.113.66/24' }], dns: {} }) + '\\n';
        s.end(String(d).includes('"EXEC"') ? JSON.stringify({ exit: 0, stdout: result }) + '\\n' : JSON.stringify({ ok: true, ips: [{ address: '203.0.113.66/24', family: 'v4' }] }) + '\\n');
      });
    }).listen(process.argv[1], () => process.stdout.write('listening\\n'));`;
  const child = spawn(process.execPath, ['-e', script, path], { uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'inherit'] });
  await firstLine(child, 'the planted agent');
  let received = '';
  child.stdout.on('data', (c) => (received += c));
  return { path, received: () => received, stop: () => child.kill('SIGKILL') };
}

for (const plugin of PLUGINS) {
  test(`the ${plugin.name} plugin sends nothing to a socket another user serves`, { skip: !root ? 'needs root to run a server as another user' : plugin.argv ? false : 'not built here' }, async () => {
    const dir = freshDir(0o777);
    const planted = await plantedAgent(dir);
    try {
      const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'n', ipam: { type: 'nfkube-cni-ipam', socket: planted.path } });
      const r = await runPlugin(plugin.argv!, { CNI_COMMAND: 'ADD', CNI_CONTAINERID: 'c1', CNI_IFNAME: 'eth0', CNI_NETNS: '/proc/self/ns/net', CNI_PATH: '/opt/cni/bin' }, conf);
      assert.equal(r.status, 1, r.out);
      const e = JSON.parse(r.out);
      assert.equal(e.code, 5, r.out);
      assert.match(e.msg, /uid 65534|does not own alone/);
      assert.match(e.msg, /nothing was sent$/);
      assert.doesNotMatch(r.out, /203\.0\.113\.66/);
      assert.equal(planted.received(), '', 'the planted socket received nothing');
    } finally {
      planted.stop();
    }
  });
}
