/** The nfnetlink_log subscription on a real kernel: packets logged by an nft rule arrive decoded;
 * a queue overflow while the event loop is busy is counted and the subscription keeps going; a
 * group another socket holds is refused with a NetlinkError naming it. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { NetlinkError } from '../../src/netlink/errors';
import { NflogPacket } from '../../src/nflog/codec';
import { decodeHeaders } from '../../src/nflog/headers';
import { NflogSubscription } from '../../src/nflog/subscription';
import { withSandbox } from '../helpers/netns';

const SEND = (n: number) => `import socket\ns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\nfor i in range(${n}): s.sendto(b'x', ('127.0.0.1', 9))\n`;

test('logged packets arrive; an overrun is counted and logging goes on; a held group is refused', { timeout: 60_000 }, async () => {
  await withSandbox(async (sb) => {
    sb.run('ip', ['link', 'set', 'lo', 'up']);
    sb.run('nft', ['-f', '-'], 'table inet t {\n chain o {\n type filter hook output priority 0;\n udp dport 9 log prefix "nfkube out t1" group 3\n }\n}\n');
    const got: NflogPacket[] = [];
    const sub = await NflogSubscription.open({ group: 3, netns: sb.netns, onPacket: (p) => got.push(p) });
    try {
      await assert.rejects(NflogSubscription.open({ group: 3, netns: sb.netns, onPacket: () => undefined }), (err: unknown) => err instanceof NetlinkError && /nflog group 3/.test(err.message) && err.code === 'EPERM' && /another socket/.test(err.message));

      sb.run('python3', ['-c', SEND(3)]);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(got.length, 3);
      assert.equal(got[0].prefix, 'nfkube out t1');
      assert.deepEqual([decodeHeaders(got[0].payload!).transport, decodeHeaders(got[0].payload!).dport], ['udp', 9]);

      // The event loop is blocked while 200,000 packets are logged: the socket queue overflows.
      execFileSync('nsenter', [`--net=${sb.netns.path}`, 'python3', '-c', SEND(200_000)]);
      // Whatever the queue held is read; then nothing more arrives.
      for (let last = -1; got.length !== last; ) {
        last = got.length;
        await new Promise((r) => setTimeout(r, 300));
      }
      assert.ok(sub.stats.overruns >= 1, JSON.stringify(sub.stats));
      assert.ok(got.length < 200_003, 'the overflow lost packets');
      const before = got.length;
      sb.run('python3', ['-c', SEND(5)]);
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(got.length - before, 5, 'logging goes on after the overrun');
    } finally {
      await sub.close();
    }
    // Closing released the group.
    const again = await NflogSubscription.open({ group: 3, netns: sb.netns, onPacket: () => undefined });
    await again.close();
  });
});
