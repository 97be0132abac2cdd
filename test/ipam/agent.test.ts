/** The IPAM agent against the test API server through client-node: claims, idempotent ADD, DEL,
 * unknown outcomes read back, durable record across restarts, GC by pod list, CNI GC, borrowing
 * and blocks of deleted Nodes. */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { TestApiServer } from '../helpers/apiserver';
import { agentFactory, AgentFactory, checkEverything, node, pool, podObject, startIpamApiServer } from './cluster';
import { IpamRequest } from '../../src/cni/protocol';
import { IpamMetrics } from '../../src/ipam/metrics';

let server: TestApiServer;
let f: AgentFactory;

before(async () => {
  server = await startIpamApiServer();
  f = agentFactory(server);
});
after(async () => server.close());

const add = (containerID: string, extra: Partial<IpamRequest> = {}): IpamRequest => ({ command: 'ADD', network: 'net', containerID, ifname: 'eth0', ...extra });

test('ADD claims a block by create and answers from it; a retried ADD gets the same address; DEL frees', async () => {
  server.create(pool('p1', ['198.18.0.0/24', '2001:db8:1::/120'], { ipv4: 28, ipv6: 124 }));
  server.create(node('n1'));
  const metrics = new IpamMetrics();
  const agent = f.make('n1', { metrics });
  await agent.start();
  const a = await agent.handle(add('c1'));
  assert.equal(a.ok, true);
  assert.ok(a.ok && a.ips?.length === 2);
  const again = await agent.handle(add('c1'));
  assert.deepEqual(again, a);
  const blocks = server.objects('ipblocks').filter((b) => b.spec.node === 'n1');
  assert.equal(blocks.length, 2, 'one v4 and one v6 block');
  assert.ok(a.ok && a.ips!.every((ip) => ip.address.endsWith('/24') || ip.address.endsWith('/120')), 'addresses carry the pool prefix');
  const b = await agent.handle(add('c2'));
  assert.ok(b.ok && a.ok && b.ips![0].address !== a.ips![0].address);
  assert.deepEqual(await agent.handle({ command: 'DEL', network: 'net', containerID: 'c1', ifname: 'eth0' }), { ok: true });
  assert.deepEqual(await agent.handle({ command: 'DEL', network: 'net', containerID: 'nope', ifname: 'eth0' }), { ok: true }, 'DEL of an unknown handle succeeds');
  assert.equal(agent.state.allocations.size, 1);
  const check = await agent.handle({ command: 'CHECK', network: 'net', containerID: 'c2', ifname: 'eth0', expected: b.ok ? b.ips!.map((i) => i.address) : [] });
  assert.deepEqual(check, { ok: true });
  const bad = await agent.handle({ command: 'CHECK', network: 'net', containerID: 'c1', ifname: 'eth0' });
  assert.equal(bad.ok, false);
  const exposed = (await metrics.expose()).body;
  assert.match(exposed, /^nfkube_ipam_blocks_owned\{pool="p1",family="v4"\} 1$/m);
  assert.match(exposed, /^nfkube_ipam_addresses_in_use\{pool="p1",family="v6"\} 1$/m);
  assert.match(exposed, /^nfkube_ipam_addresses_free\{pool="p1",family="v4"\} 15$/m);
  assert.match(exposed, /^nfkube_ipam_block_claims_total\{result="won"\} 2$/m);
  assert.match(exposed, /^nfkube_ipam_allocation_duration_seconds_count\{result="ok"\} 3$/m);
  assert.match(exposed, /^# TYPE nfkube_ipam_conflicts_total counter$/m);
  assert.match(exposed, /^# TYPE nfkube_ipam_gc_releases_total counter$/m);
  assert.match(exposed, /^# TYPE nfkube_ipam_retries_total counter$/m);
  await agent.stop();
  server.delete('IPPool' as never, undefined, 'p1');
});

test('a block create committed but its reply lost is read back and used; a lost race moves on', async () => {
  server.create(pool('p2', ['198.18.1.0/24'], { ipv4: 28 }));
  server.create(node('n2'));
  server.create(node('n3'));
  let dropped = 0;
  server.faults = (ctx) => (ctx.method === 'POST' && ctx.resource === 'ipblocks' && dropped++ < 3 ? { dropReply: true } : undefined);
  const n2 = f.make('n2');
  const n3 = f.make('n3');
  await Promise.all([n2.start(), n3.start()]);
  const [r2, r3] = await Promise.all([n2.handle(add('x', { pool: 'p2' })), n3.handle(add('y', { pool: 'p2' }))]);
  server.faults = undefined;
  assert.ok(r2.ok && r3.ok, JSON.stringify([r2, r3]));
  assert.ok(dropped >= 2);
  assert.notEqual(r2.ok && r2.ips![0].address, r3.ok && r3.ips![0].address);
  await n2.flushPublish();
  await n3.flushPublish();
  assert.deepEqual(checkEverything(server, [n2, n3]).filter((x) => x.kind !== 'orphan' || !x.message.includes('IPPool p1')), []);
  await Promise.all([n2.stop(), n3.stop()]);
});

test('the durable record survives a crash: same handle, same address; GC releases pods that are gone', async () => {
  server.create(pool('p3', ['198.18.2.0/24'], { ipv4: 27 }));
  server.create(node('n4'));
  const live = server.create(podObject('default', 'live', 'n4'));
  server.create(podObject('default', 'gone', 'n4'));
  const agent = f.make('n4');
  await agent.start();
  const args = (name: string, uid: string) => ({ K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: name, K8S_POD_UID: uid });
  const r1 = await agent.handle(add('live-c', { pool: 'p3', args: args('live', live.metadata.uid) }));
  const goneUid = server.get('Pod', 'default', 'gone')!.metadata.uid;
  const r2 = await agent.handle(add('gone-c', { pool: 'p3', args: args('gone', goneUid) }));
  assert.ok(r1.ok && r2.ok);
  agent.crash();
  const again = f.make('n4');
  await again.start();
  assert.deepEqual(await again.handle(add('live-c', { pool: 'p3', args: args('live', live.metadata.uid) })), r1);
  server.delete('Pod', 'default', 'gone');
  await new Promise((r) => setTimeout(r, 5));
  const report = await again.runGc();
  assert.equal(report.pod, 1);
  assert.ok(again.state.allocations.has('net/live-c/eth0'), 'a live pod keeps its address');
  assert.ok(!again.state.allocations.has('net/gone-c/eth0'));
  // CNI GC: everything of the network but the listed attachment goes.
  await again.handle(add('extra', { pool: 'p3' }));
  const gc = await again.handle({ command: 'GC', network: 'net', validAttachments: [{ containerID: 'live-c', ifname: 'eth0' }] });
  assert.deepEqual(gc, { ok: true, released: 1 });
  assert.deepEqual([...again.state.allocations.keys()], ['net/live-c/eth0']);
  await again.stop();
});

test('an exhausted pool lends block tails; a starved node borrows single addresses by create', async () => {
  // Two /28 blocks: nodes a and b take one each, b fills its block, then borrows from a.
  server.create(pool('tiny', ['198.18.3.0/27'], { ipv4: 28 }));
  server.create(node('na'));
  server.create(node('nb'));
  const a = f.make('na');
  const b = f.make('nb');
  await a.start();
  await b.start();
  assert.ok((await a.handle(add('a1', { pool: 'tiny' }))).ok);
  const got: string[] = [];
  let failed = 0;
  for (let i = 0; i < 20; i++) {
    const r = await b.handle(add(`b${i}`, { pool: 'tiny' }));
    if (r.ok) got.push(r.ips![0].address);
    else failed++;
  }
  // a notices the exhausted pool on its GC pass and lends; b then borrows.
  await a.runGc();
  const lent = server.objects('ipblocks').find((x) => x.spec.node === 'na');
  assert.equal(typeof lent?.spec.lendFrom, 'number');
  const borrowed = await b.handle(add('borrower', { pool: 'tiny' }));
  assert.ok(borrowed.ok, JSON.stringify(borrowed));
  assert.equal(server.objects('ipaddressclaims').length, 1);
  assert.equal(new Set(got).size, got.length);
  assert.ok(failed > 0, 'b ran out before borrowing');
  // a keeps allocating below its lent range only.
  for (let i = 0; i < 20; i++) await a.handle(add(`a-more-${i}`, { pool: 'tiny' }));
  await a.flushPublish();
  await b.flushPublish();
  assert.deepEqual(checkEverything(server, [a, b]).filter((x) => x.kind === 'duplicate'), []);
  assert.deepEqual(await b.handle({ command: 'DEL', network: 'net', containerID: 'borrower', ifname: 'eth0' }), { ok: true });
  assert.equal(server.objects('ipaddressclaims').length, 0, 'DEL deletes the claim');
  await a.stop();
  await b.stop();
});

test('blocks of a deleted Node are released after the grace period, not while a pod is bound to it', async () => {
  server.create(pool('p5', ['198.18.4.0/24'], { ipv4: 28 }));
  server.create(node('keeper'));
  server.create(node('doomed'));
  const keeper = f.make('keeper', { nodeGraceMs: 0 });
  const doomed = f.make('doomed');
  await keeper.start();
  await doomed.start();
  assert.ok((await keeper.handle(add('k', { pool: 'p5' }))).ok);
  assert.ok((await doomed.handle(add('d', { pool: 'p5' }))).ok);
  await doomed.stop();
  server.delete('Node' as never, undefined, 'doomed');
  server.create(podObject('default', 'stuck', 'doomed'));
  await keeper.runGc();
  assert.ok(server.objects('ipblocks').some((b) => b.spec.node === 'doomed'), 'a pod is still bound to the node');
  server.delete('Pod', 'default', 'stuck');
  const report = await keeper.runGc();
  assert.ok(report.node >= 1);
  assert.ok(!server.objects('ipblocks').some((b) => b.spec.node === 'doomed'));
  await keeper.stop();
});

test('a block deleted under a running agent is no longer used; one still holding addresses is claimed back', async () => {
  server.create(pool('p6', ['198.18.6.0/24'], { ipv4: 28 }));
  server.create(node('n6'));
  const agent = f.make('n6');
  await agent.start();
  const r = await agent.handle(add('held', { pool: 'p6' }));
  assert.ok(r.ok);
  const block = server.objects('ipblocks').find((b) => b.spec.node === 'n6')!;
  server.delete('IPBlock' as never, undefined, block.metadata.name);
  await agent.runGc();
  const back = server.objects('ipblocks').find((b) => b.metadata.name === block.metadata.name);
  assert.equal(back?.spec.node, 'n6', 'claimed back: an address in it is still held');
  assert.notEqual(back?.metadata.uid, block.metadata.uid);
  assert.ok(agent.state.blocks.has(block.metadata.name));
  // Taken by another node instead: this node stops allocating from it.
  server.delete('IPBlock' as never, undefined, block.metadata.name);
  server.create({ ...block, metadata: { name: block.metadata.name }, spec: { ...block.spec, node: 'other' } });
  assert.ok((await agent.handle(add('two', { pool: 'p6' }))).ok);
  await agent.runGc();
  assert.ok(!agent.state.blocks.has(block.metadata.name));
  await agent.stop();
});
