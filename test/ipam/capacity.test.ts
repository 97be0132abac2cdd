/** Exact capacity: in a pool of exactly one block per family on one node, every address of the
 * block but the reserved ones is handed out, a failed ADD allocates nothing, the node lends no
 * tail it needs, capacity comes back in full after DEL, and CNI GC releases exactly the
 * attachments not listed, leaving no published allocation for a handle that is gone. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { IpamService } from '../../src/ipam/service';
import { IpamReply, IpamRequest } from '../../src/cni/protocol';
import { TestApiServer } from '../helpers/apiserver';
import { agentFactory, node, pool, startIpamApiServer } from './cluster';

let server: TestApiServer;
let agent: IpamService;

before(async () => {
  server = await startIpamApiServer();
  // One /26 and one /122: 62 usable IPv4 (network and broadcast reserved), 63 IPv6 (anycast).
  server.create(pool('exact', ['198.18.120.0/26', '2001:db8:120::/122'], { ipv4: 26, ipv6: 122 }));
  server.create(node('exact-node'));
  agent = agentFactory(server).make('exact-node');
  await agent.start();
});
after(async () => {
  await agent.stop();
  await server.close();
});

const req = (command: 'ADD' | 'DEL', id: string): IpamRequest => ({ command, network: 'n', containerID: id, ifname: 'eth0' });

async function addAll(ids: string[]): Promise<IpamReply[]> {
  const out: IpamReply[] = [];
  for (const id of ids) out.push(await agent.handle(req('ADD', id)));
  return out;
}

const free = () => Object.fromEntries(agent.usage().map((u) => [u.family, u.free]));
const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

test('every usable address of the only block is handed out, twice over, with GC and DEL in between', async () => {
  const first = await addAll(ids('a', 62));
  assert.deepEqual(first.filter((r) => !r.ok), [], 'all 62 dual-stack ADDs succeed');
  const v4 = new Set(first.map((r) => r.ok && r.ips!.find((ip) => ip.family === 'v4')!.address));
  assert.equal(v4.size, 62);
  const over = await agent.handle(req('ADD', 'one-too-many'));
  assert.equal(over.ok, false);
  assert.deepEqual(free(), { v4: 0, v6: 1 }, 'the failed ADD holds nothing (its IPv6 address came back)');
  await agent.runGc();
  for (const id of ids('a', 62)) assert.deepEqual(await agent.handle(req('DEL', id)), { ok: true });
  await agent.runGc(); // an exhausted pool: the node may lend, but takes back what it needs
  assert.deepEqual((await addAll(ids('b', 62))).filter((r) => !r.ok), [], 'after DEL of every one, all 62 succeed again');
  assert.deepEqual(free(), { v4: 0, v6: 1 });
});

test('CNI GC releases exactly the attachments not listed; published allocations follow', async () => {
  const keep = ids('b', 62).slice(0, 38);
  const r = await agent.handle({ command: 'GC', network: 'n', validAttachments: keep.map((containerID) => ({ containerID, ifname: 'eth0' })) });
  assert.deepEqual(r, { ok: true, released: 24 });
  assert.deepEqual(free(), { v4: 24, v6: 25 });
  assert.deepEqual((await addAll(ids('c', 24))).filter((x) => !x.ok), [], 'all 24 released addresses are usable again');
  await agent.flushPublish();
  const live = new Set(agent.state.allocations.keys());
  const published = server.objects('ipblocks').flatMap((b) => Object.values(b.status?.allocations ?? {}).map((a) => (a as { handle: string }).handle));
  assert.equal(published.length, 2 * live.size, 'one v4 and one v6 entry per live handle');
  assert.deepEqual(published.filter((h) => !live.has(h)), [], 'no published allocation names a handle that is gone');
});
