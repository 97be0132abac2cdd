import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { IpsetClient, IpsetTransport } from '../../src/ipset/client';
import { syncSets, SyncMode, tempNamePattern } from '../../src/ipset/sync';
import { DesiredSet } from '../../src/ipset/types';
import { NetlinkSocket } from '../../src/netlink/socket';
import { withSandbox } from '../helpers/netns';

const PREFIX = 'c-';
const addr = (n: number) => `198.18.${(n >> 8) & 255}.${n & 255}`;

function desired(round: number): Record<string, DesiredSet> {
  const out: Record<string, DesiredSet> = {};
  for (let i = 0; i < 60; i++) {
    out[`c-${i}`] = { type: 'hash:ip', members: Array.from({ length: 20 }, (_, j) => addr(i * 40 + j + round * 3)) };
    if (i % 10 === 0) out[`c6-${i}`.replace('c6', 'c-v6')] = { type: 'hash:net', family: 'inet6', members: [`2001:db8:${round}::/48`, `2001:db8:ff::${(i + 1).toString(16)}`] };
  }
  return out;
}

/** In the child: sync round 1 over a transport that SIGKILLs the process after N datagram sends. */
async function child(nsPath: string, killAfter: number, mode: SyncMode): Promise<void> {
  const socket = NetlinkSocket.open({ netns: nsPath });
  let sends = 0;
  const transport: IpsetTransport = {
    nextSeq: () => socket.nextSeq(),
    dump: (r, w) => socket.dump(r, w),
    transact: async (datagrams) => {
      const reply = await socket.transact(datagrams);
      if (++sends >= killAfter) process.kill(process.pid, 'SIGKILL');
      return reply;
    },
  };
  await syncSets(new IpsetClient(transport), desired(1), { prefix: PREFIX, mode });
  process.exit(3);
}

if (process.env.NFKUBE_IPSET_CRASH_CHILD) {
  const [nsPath, n, mode] = process.env.NFKUBE_IPSET_CRASH_CHILD.split(' ');
  void child(nsPath, Number(n), mode as SyncMode);
} else {
  for (const mode of ['replace', 'incremental'] as SyncMode[]) {
    test(`${mode}: a sync killed mid-run is converged by the next run, with no temporary set left`, async () => {
      await withSandbox(async (sb) => {
        sb.run('ipset', ['restore'], 'create keep hash:ip\nadd keep 198.18.250.1\n');
        const foreign = sb.run('ipset', ['save', 'keep']);
        const client = new IpsetClient(sb.socket);
        const temp = tempNamePattern(PREFIX);
        let sawLeftover = false;
        for (const killAfter of [2, 3, 5, 9, 17, 33]) {
          await syncSets(client, desired(0), { prefix: PREFIX, mode });
          // The child changes every set; it dies after killAfter sends.
          const { signal, status } = spawnSync(process.execPath, [__filename], {
            env: { ...process.env, NFKUBE_IPSET_CRASH_CHILD: `${sb.netns.path} ${killAfter} ${mode}` },
            stdio: 'inherit',
          });
          assert.ok(signal === 'SIGKILL' || status === 3, `child ended with ${signal ?? status}`);
          const names = sb.run('ipset', ['list', '-n']).split('\n');
          if (names.some((n) => temp.test(n))) sawLeftover = true;
          const r = await syncSets(client, desired(1), { prefix: PREFIX, mode });
          assert.deepEqual(r.failures, []);
          const after = await client.list({ include: (n) => n.startsWith(PREFIX) });
          const want = desired(1);
          assert.deepEqual(after.sets.map((s) => s.name).sort(), Object.keys(want).sort());
          for (const s of after.sets) assert.deepEqual(s.members.map((m) => m.key).sort(), [...(want[s.name].members as string[])].sort(), s.name);
          assert.ok(sb.run('ipset', ['list', '-n']).split('\n').every((n) => !temp.test(n)), 'no temporary set left');
          assert.equal(sb.run('ipset', ['save', 'keep']), foreign);
        }
        if (mode === 'replace') assert.ok(sawLeftover, 'some kill left a temporary set for the next run to clean');
      });
    });
  }
}
