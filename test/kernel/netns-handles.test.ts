/** Namespace handles and the sandbox helpers reached through them: identity, a TCP round trip
 * inside the namespace, and the failures (a path that is not there, a descriptor that is not a
 * namespace, a closed handle) as errors that name the call, the path and the errno. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { createServer } from 'node:net';
import { constants } from 'node:os';
import { NETLINK_NETFILTER } from '../../src/netlink/message';
import { Netns } from '../../src/netlink/netns';
import { native } from '../../src/native/binding';
import { withSandbox } from '../helpers/netns';

test('Netns.id is the identity nsenter sees inside the namespace', async () => {
  await withSandbox(async (sb) => {
    assert.match(sb.netns.id, /^net:\[\d+\]$/);
    assert.equal(sb.run('readlink', ['/proc/self/ns/net']).trim(), sb.netns.id);
    assert.notEqual(sb.netns.id, execFileSync('readlink', ['/proc/self/ns/net'], { encoding: 'utf8' }).trim());
  });
});

test('listenTcp, connectTcp and writeSysctl act inside the namespace', async () => {
  await withSandbox(async (sb) => {
    sb.run('ip', ['link', 'set', 'lo', 'up']);
    sb.run('ip', ['address', 'add', '198.18.5.1/32', 'dev', 'lo']);
    const server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen({ fd: sb.netns.listenTcp('198.18.5.1', 8080) }, resolve));
    try {
      assert.match(sb.run('ss', ['-Hltn']), /198\.18\.5\.1:8080/);
      assert.equal(await sb.netns.connectTcp('198.18.5.1', 8080, 2000), 0);
      assert.equal(await sb.netns.connectTcp('198.18.5.1', 8081, 2000), constants.errno.ECONNREFUSED);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    sb.netns.writeSysctl('net/ipv4/conf/all/forwarding', '1');
    assert.equal(sb.run('sysctl', ['-n', 'net.ipv4.conf.all.forwarding']).trim(), '1');
    assert.throws(() => sb.netns.writeSysctl('net/ipv4/conf/nfk-none/forwarding', '1'),
      (err: NodeJS.ErrnoException) => err.code === 'ENOENT' && /open \/proc\/sys\/net\/ipv4\/conf\/nfk-none\/forwarding/.test(err.message));
  });
});

test('a namespace path that does not exist throws an error naming the path and ENOENT', () => {
  assert.throws(() => Netns.open('/var/run/netns/nfk-no-such-namespace'), (err: NodeJS.ErrnoException) =>
    err.code === 'ENOENT' && err.errno === constants.errno.ENOENT && err.message.includes('/var/run/netns/nfk-no-such-namespace'));
});

test('connecting from a descriptor that is not a namespace rejects with the setns errno', async () => {
  const notNs = openSync('/dev/null', 'r');
  try {
    await assert.rejects(native().connectInNetns(notNs, '198.18.5.1', 80, 100), (err: NodeJS.ErrnoException) =>
      err instanceof Error && err.code === 'EINVAL' && err.errno === constants.errno.EINVAL &&
      err.syscall === 'connectInNetns: setns' && /^connectInNetns: setns: .*\(EINVAL\)$/.test(err.message));
    // A netlink socket is opened the same way: entering the namespace fails first.
    assert.throws(() => new (native().NetlinkSocket)(NETLINK_NETFILTER, notNs), (err: NodeJS.ErrnoException) =>
      err.code === 'EINVAL' && err.syscall === 'setns');
  } finally {
    closeSync(notNs);
  }
  // Far above any descriptor this process has open.
  await assert.rejects(native().connectInNetns(1 << 24, '198.18.5.1', 80, 100), (err: NodeJS.ErrnoException) =>
    err.code === 'EBADF' && err.syscall === 'connectInNetns: setns');
  assert.throws(() => native().listenInNetns(1 << 24, '198.18.5.1', 80), (err: NodeJS.ErrnoException) =>
    err.code === 'EBADF' && err.syscall === 'listenInNetns: setns');
  assert.throws(() => native().writeSysctlInNetns(1 << 24, 'net/ipv4/ip_forward', '1'), (err: NodeJS.ErrnoException) =>
    err.code === 'EBADF' && err.message.startsWith('setns /proc/sys/net/ipv4/ip_forward'));
});

test('a closed handle refuses the helpers instead of using a descriptor number that may be reused', () => {
  const ns = Netns.create();
  ns.close();
  assert.throws(() => ns.listenTcp('198.18.5.1', 80), /Netns\.listenTcp: the namespace handle \d+ is closed/);
  assert.throws(() => ns.connectTcp('198.18.5.1', 80, 100), /Netns\.connectTcp: the namespace handle \d+ is closed/);
  assert.throws(() => ns.writeSysctl('net/ipv4/ip_forward', '1'), /Netns\.writeSysctl: the namespace handle \d+ is closed/);
  assert.throws(() => ns.id, /Netns\.id: the namespace handle \d+ is closed/);
});

test('Netns.open of a bind-mounted namespace (ip netns add) has the namespace identity, not the path', () => {
  const name = `nfk-${process.pid}-id`;
  execFileSync('ip', ['netns', 'add', name], { stdio: 'pipe' });
  try {
    const ns = Netns.open(`/var/run/netns/${name}`);
    try {
      assert.match(ns.id, /^net:\[\d+\]$/);
      const inside = execFileSync('ip', ['netns', 'exec', name, 'readlink', '/proc/self/ns/net'], { encoding: 'utf8' }).trim();
      assert.equal(ns.id, inside);
    } finally {
      ns.close();
    }
  } finally {
    execFileSync('ip', ['netns', 'delete', name], { stdio: 'pipe' });
  }
});
