/** rtnetlink against the kernel, read back with `ip -j` and `sysctl` as independent oracles:
 * veth pairs across namespaces, addresses, routes, forwarding; and the addon's in-namespace
 * sockets (listen, connect, sysctl). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { constants } from 'node:os';
import { createServer } from 'node:net';
import { withSandbox } from '../helpers/netns';
import { NetlinkError } from '../../src/netlink/errors';
import { AF_INET, AF_INET6 } from '../../src/netlink/message';
import { Netns } from '../../src/netlink/netns';
import { native } from '../../src/native/binding';
import { Rtnl } from '../../src/rtnl/client';
import { IFA_F_NODAD, IFF_UP, RT_SCOPE_LINK } from '../../src/rtnl/constants';

const inNs = (ns: Netns, cmd: string, args: string[]) => execFileSync('nsenter', [`--net=${ns.path}`, cmd, ...args], { encoding: 'utf8' });

test('a veth pair across namespaces, with addresses, routes and IPv4 forwarding, as ip sees it', async () => {
  await withSandbox(async (sb) => {
    const peerNs = Netns.create();
    const rtnl = Rtnl.open(sb.netns);
    const peer = Rtnl.open(peerNs);
    try {
      await rtnl.createVeth({ name: 'nfk-a' }, { name: 'eth0', netnsFd: peerNs.fd });
      const a = await rtnl.link('nfk-a');
      assert.ok(a);
      assert.equal(a.kind, 'veth');
      await rtnl.setUp(a.index);
      await rtnl.setIPv4Forwarding(a.index, true);
      await rtnl.addAddress({ index: a.index, address: '198.18.3.1', prefixLen: 32 });
      await rtnl.addAddress({ index: a.index, address: '2001:db8:3::1', prefixLen: 128, flags: IFA_F_NODAD });
      await rtnl.addRoute({ family: AF_INET, dst: '198.18.3.2', dstLen: 32, oif: a.index, scope: RT_SCOPE_LINK, prefsrc: '198.18.3.1' });
      await rtnl.addRoute({ family: AF_INET6, dst: '2001:db8:3::2', dstLen: 128, oif: a.index });

      const links = JSON.parse(sb.run('ip', ['-d', '-j', 'link', 'show', 'nfk-a']));
      assert.equal(links[0].linkinfo.info_kind, 'veth');
      assert.ok(links[0].flags.includes('UP'));
      const addrs = JSON.parse(sb.run('ip', ['-j', 'addr', 'show', 'dev', 'nfk-a'])) as { addr_info: { local: string; prefixlen: number; nodad?: boolean }[] }[];
      const info = addrs[0].addr_info.map((x) => `${x.local}/${x.prefixlen}${x.nodad ? ' nodad' : ''}`);
      assert.ok(info.includes('198.18.3.1/32'), info.join());
      assert.ok(info.includes('2001:db8:3::1/128 nodad'), info.join());
      assert.match(sb.run('ip', ['route', 'show', '198.18.3.2']), /198\.18\.3\.2 dev nfk-a proto static scope link src 198\.18\.3\.1/);
      assert.match(sb.run('ip', ['-6', 'route', 'show', '2001:db8:3::2']), /2001:db8:3::2 dev nfk-a proto static/);
      assert.equal(sb.run('sysctl', ['-n', 'net.ipv4.conf.nfk-a.forwarding']).trim(), '1');

      // The peer end was created directly in the other namespace.
      const e = await peer.link('eth0');
      assert.ok(e);
      assert.equal(JSON.parse(inNs(peerNs, 'ip', ['-j', 'link', 'show', 'eth0']))[0].ifindex, e.index);
      assert.equal(await rtnl.link('eth0'), undefined);

      // Read-back through rtnetlink dumps agrees with ip.
      assert.ok((await rtnl.links()).some((l) => l.name === 'nfk-a' && (l.flags & IFF_UP) !== 0));
      assert.ok((await rtnl.addresses(AF_INET6)).some((x) => x.address === '2001:db8:3::1' && (x.flags & IFA_F_NODAD) !== 0));
      assert.ok((await rtnl.routes(AF_INET)).some((r) => r.dst === '198.18.3.2' && r.oif === a.index && r.prefsrc === '198.18.3.1'));

      await assert.rejects(rtnl.createVeth({ name: 'nfk-a' }, { name: 'nfk-b' }), (err: unknown) => {
        assert.ok(err instanceof NetlinkError);
        assert.equal(err.code, 'EEXIST');
        assert.match(err.message, /RTM_NEWLINK veth nfk-a peer nfk-b/);
        return true;
      });
      await rtnl.deleteLink(a.index);
      assert.equal(await rtnl.link('nfk-a'), undefined);
      assert.equal(await peer.link('eth0'), undefined, 'deleting one end deletes the pair');
    } finally {
      await rtnl.close();
      await peer.close();
      peerNs.close();
    }
  });
});

test('sockets made inside a namespace: listen, connect, refused, timed out; sysctl writes', async () => {
  await withSandbox(async (sb) => {
    const rtnl = Rtnl.open(sb.netns);
    try {
      const lo = await rtnl.link('lo');
      assert.ok(lo);
      await rtnl.setUp(lo.index);
      await rtnl.addAddress({ index: lo.index, address: '198.18.4.1', prefixLen: 32 });
    } finally {
      await rtnl.close();
    }
    const server = createServer((s) => s.destroy());
    await new Promise<void>((resolve) => server.listen({ fd: native().listenInNetns(sb.netns.fd, '198.18.4.1', 8080) }, resolve));
    try {
      assert.match(sb.run('ss', ['-Hltn']), /198\.18\.4\.1:8080/);
      assert.equal(await native().connectInNetns(sb.netns.fd, '198.18.4.1', 8080, 2000), 0);
      assert.equal(await native().connectInNetns(sb.netns.fd, '198.18.4.1', 8081, 2000), constants.errno.ECONNREFUSED);
      sb.run('nft', ['add table inet t; add chain inet t in { type filter hook input priority 0; tcp dport 8080 drop; }']);
      assert.equal(await native().connectInNetns(sb.netns.fd, '198.18.4.1', 8080, 200), constants.errno.ETIMEDOUT);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
    assert.throws(() => native().listenInNetns(sb.netns.fd, '198.18.9.9', 80), (err: NodeJS.ErrnoException) => err.code === 'EADDRNOTAVAIL');
    assert.throws(() => native().listenInNetns(sb.netns.fd, 'nope', 80), /address nope or port is not valid/);

    native().writeSysctlInNetns(sb.netns.fd, 'net/ipv6/conf/all/forwarding', '1');
    assert.equal(sb.run('sysctl', ['-n', 'net.ipv6.conf.all.forwarding']).trim(), '1');
    assert.throws(() => native().writeSysctlInNetns(sb.netns.fd, 'kernel/hostname', 'x'), /must be under net\//);
    assert.throws(() => native().writeSysctlInNetns(sb.netns.fd, 'net/../kernel/hostname', 'x'), /must be under net\//);
  });
});
