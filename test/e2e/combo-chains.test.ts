/** Combination chains with real packets: pods isolated by the same policies share one chain, yet
 * every denied packet is counted against, and logged with, the pod it was meant for (by its
 * address); a pod moving to another combination is a vmap element change, its counter kept. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Agent } from '../../src/pipeline/agent';
import { PolicyComponent } from '../../src/policy/component';
import { policyCounterReader } from '../../src/policy/metrics-bridge';
import { PolicyModes } from '../../src/policy/modes';
import { DropLogOptions } from '../../src/policy/render/tail';
import { ClusterChange } from '../../src/k8s/source';
import { NetlinkSocket } from '../../src/netlink/socket';
import { DropRecord, startDropLogging } from '../../src/policy/droplog';
import { PolicyCounterRow } from '../../src/observe/metrics';
import { Cluster, namespace, pod, policy } from '../agent/fixtures';
import { recordingLogger } from '../helpers/recording-logger';
import { sendPackets } from '../helpers/send';
import { createTopology } from '../helpers/topology';

const NODE = 'node-1';
// No rate limit: the pods share one chain, and so its token bucket.
const LOG: DropLogOptions = { group: 9, rate: 0, burst: 0 };

const settle = () => new Promise((r) => setTimeout(r, 400));

test('two pods share a combination chain; each denied packet is counted and logged against its own pod; moving a pod is an element change', { timeout: 120_000 }, async () => {
  const topo = createTopology('routed', [
    { namespace: 'x', name: 'a' },
    { namespace: 'x', name: 'b' },
    { namespace: 'x', name: 'c' },
  ]);
  const [a, b, c] = topo.pods;
  const { logger, lines } = recordingLogger('info');
  const socket = NetlinkSocket.open({ netns: topo.nodeNetnsPath });
  const modes = new PolicyModes('enforce');
  const cluster = new Cluster();
  cluster.apply(namespace('x'));
  cluster.apply(pod('x', 'a', a.ipv4, { role: 'db' }, { ip6: a.ipv6 }));
  cluster.apply(pod('x', 'b', b.ipv4, { role: 'db' }, { ip6: b.ipv6 }));
  cluster.apply(pod('x', 'c', c.ipv4, { role: 'client' }, { ip6: c.ipv6 }));
  cluster.apply(policy('x', 'deny-db', { podSelector: { matchLabels: { role: 'db' } }, policyTypes: ['Ingress'] }));
  cluster.apply(policy('x', 'deny-hot', { podSelector: { matchLabels: { tier: 'hot' } }, policyTypes: ['Ingress'] }));
  const drops = await startDropLogging({ log: LOG, nodeName: NODE, modes, denyAction: 'drop', logger, netns: topo.nodeNetnsPath });
  const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', log: LOG, modes, logger });
  const agent = new Agent({ socket, logger, components: [component] });
  try {
    const snapshot = cluster.snapshot();
    drops.load(snapshot);
    await agent.start(snapshot);
    cluster.agent = { onChange: (ch: ClusterChange) => (drops.apply(ch), agent.onChange(ch)) } as unknown as Agent;

    // One chain for both db pods; their vmap entries point at it.
    const combos = () => [...agent.desiredModel!.chains.keys()].filter((n) => n.startsWith('combo_'));
    assert.equal(combos().length, 1, combos().join(' '));
    const shared = combos()[0];
    const vmap = agent.desiredModel!.sets.get('ingress_v4')!;
    const target = (addr: string) => [...vmap.elements.values()].find((e) => e.key.equals(Buffer.from(addr.split('.').map(Number))))?.verdict;
    assert.deepEqual(target(a.ipv4), { kind: 'goto', chain: shared });
    assert.deepEqual(target(b.ipv4), { kind: 'goto', chain: shared });

    const reader = policyCounterReader(socket, 'nfkube', (addr, dir) => component.podAt(addr, dir));
    const denied = async (podName: string): Promise<bigint> => {
      const rows: PolicyCounterRow[] = await reader();
      return rows.filter((r) => r.verdict === 'drop' && r.direction === 'ingress' && r.namespace === 'x' && r.pod === podName).reduce((n, r) => n + BigInt(r.packets), 0n);
    };
    const logged = (podName: string, dst: string) => lines.filter((l) => l.drop && (l.drop as DropRecord).pod === `x/${podName}` && (l.drop as DropRecord).dstAddr === dst).length;

    // 3 datagrams to a, 5 to b (IPv4), 2 to b over IPv6: each pod's own count and log lines.
    await sendPackets(c.netnsPath, 'udp', a.ipv4, 80, 4, 3);
    await sendPackets(c.netnsPath, 'udp', b.ipv4, 80, 4, 5);
    await sendPackets(c.netnsPath, 'udp', b.ipv6, 80, 6, 2);
    await settle();
    assert.equal(await denied('a'), 3n);
    assert.equal(await denied('b'), 7n);
    assert.equal(await denied('c'), 0n, 'c is not isolated');
    assert.equal(logged('a', a.ipv4), 3, JSON.stringify(lines.filter((l) => l.drop)));
    assert.equal(logged('b', b.ipv4), 5);
    assert.equal(logged('b', b.ipv6), 2);
    const record = lines.find((l) => l.drop && l.drop.pod === 'x/a')!.drop as DropRecord;
    assert.deepEqual({ direction: record.direction, src: record.src, dst: record.dst, policies: record.policies }, { direction: 'ingress', src: 'x/c', dst: 'x/a', policies: ['x/deny-db'] });

    // a joins a second policy: a new combination chain appears, a's vmap elements move to it;
    // b's chain, the counter sets and every other element stay as they are.
    const before = new Map(agent.totals.byType);
    const commits = agent.totals.commits;
    cluster.apply(pod('x', 'a', a.ipv4, { role: 'db', tier: 'hot' }, { ip6: a.ipv6 }));
    await agent.idle();
    const delta = () => Object.fromEntries([...agent.totals.byType].map(([k, v]) => [k, v - (before.get(k) ?? 0)]).filter(([, v]) => v !== 0));
    assert.equal(agent.totals.commits, commits + 1);
    // The chain with its rules (2 jumps, the log, the goto to the default deny), deny-hot's chain
    // (no rule: it allows nothing), which no pod of this node needed before, and one element
    // message per family's vmap to delete a's old entry and one to add its new one.
    assert.deepEqual(delta(), { NFT_MSG_NEWCHAIN: 2, NFT_MSG_NEWRULE: 4, NFT_MSG_DELSETELEM: 2, NFT_MSG_NEWSETELEM: 2 });
    assert.equal(combos().length, 2);
    const moved = target(a.ipv4)!;
    assert.ok(moved.kind === 'goto' && moved.chain !== shared && combos().includes(moved.chain));
    assert.deepEqual(target(b.ipv4), { kind: 'goto', chain: shared });
    assert.equal(await denied('a'), 3n, "a's counter element was kept: only the vmap element changed");
    await sendPackets(c.netnsPath, 'udp', a.ipv4, 80, 4, 2);
    await settle();
    assert.equal(await denied('a'), 5n);
    assert.equal(await denied('b'), 7n);
    assert.equal(logged('a', a.ipv4), 5);
    const last = lines.filter((l) => l.drop && l.drop.pod === 'x/a').at(-1)!.drop as DropRecord;
    assert.deepEqual(last.policies, ['x/deny-db', 'x/deny-hot']);

    // Back again: the vmap elements return to the shared chain, and the chains no pod uses go
    // (the combination's and deny-hot's, each flushed, then deleted).
    const back = new Map(agent.totals.byType);
    cluster.apply(pod('x', 'a', a.ipv4, { role: 'db' }, { ip6: a.ipv6 }));
    await agent.idle();
    const delta2 = Object.fromEntries([...agent.totals.byType].map(([k, v]) => [k, v - (back.get(k) ?? 0)]).filter(([, v]) => v !== 0));
    assert.deepEqual(delta2, { NFT_MSG_DELRULE: 2, NFT_MSG_DELCHAIN: 2, NFT_MSG_DELSETELEM: 2, NFT_MSG_NEWSETELEM: 2 });
    assert.deepEqual(combos(), [shared]);
    assert.deepEqual(target(a.ipv4), { kind: 'goto', chain: shared });
    assert.equal(await denied('a'), 5n);
    assert.equal((await agent.resync()).drift, '', 'the kernel holds exactly what was meant');
  } finally {
    await drops.close();
    await agent.stop();
    await socket.close();
    topo.close();
  }
});

test('a rule entry of several port matches, as one port set: allowed ports pass, others are counted against the pod', { timeout: 120_000 }, async () => {
  const topo = createTopology('routed', [
    { namespace: 'x', name: 'a' },
    { namespace: 'x', name: 'c' },
  ]);
  const [a, c] = topo.pods;
  const socket = NetlinkSocket.open({ netns: topo.nodeNetnsPath });
  const cluster = new Cluster();
  cluster.apply(namespace('x'));
  cluster.apply(pod('x', 'a', a.ipv4, { role: 'db' }, { ip6: a.ipv6 }));
  cluster.apply(pod('x', 'c', c.ipv4, { role: 'client' }, { ip6: c.ipv6 }));
  cluster.apply(policy('x', 'ports', { podSelector: { matchLabels: { role: 'db' } }, ingress: [{ from: [{ podSelector: { matchLabels: { role: 'client' } } }], ports: [{ protocol: 'TCP', port: 80 }, { protocol: 'UDP', port: 53, endPort: 60 }, { protocol: 'UDP', port: 55 }] }] }));
  const silent = pino({ level: 'silent' });
  const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent });
  const agent = new Agent({ socket, logger: silent, components: [component] });
  try {
    await agent.start(cluster.snapshot());
    assert.ok([...agent.desiredModel!.sets.keys()].some((n) => /^ports_[0-9a-f]{12}$/.test(n)), 'the entry has a port set');
    const reader = policyCounterReader(socket, 'nfkube', (addr, dir) => component.podAt(addr, dir));
    const count = async (verdict: 'accept' | 'drop') => (await reader()).filter((r) => r.verdict === verdict && r.direction === 'ingress' && (verdict === 'drop' ? r.pod === 'a' : r.policy === 'x/ports')).reduce((n, r) => n + BigInt(r.packets), 0n);
    for (const family of [4, 6] as const) {
      const dst = family === 4 ? a.ipv4 : a.ipv6;
      const [accepted0, dropped0] = [await count('accept'), await count('drop')];
      // One datagram per allowed flow (later ones of a flow may pass as part of the connection);
      // a denied flow never gets a conntrack entry, so each of its datagrams meets the deny.
      await sendPackets(c.netnsPath, 'udp', dst, 53, family, 1);
      await sendPackets(c.netnsPath, 'udp', dst, 60, family, 1);
      await sendPackets(c.netnsPath, 'udp', dst, 61, family, 3);
      await sendPackets(c.netnsPath, 'udp', dst, 80, family, 1);
      await settle();
      assert.equal((await count('accept')) - accepted0, 2n, `IPv${family}: udp 53 and 60 are in the range`);
      assert.equal((await count('drop')) - dropped0, 4n, `IPv${family}: udp 61 and udp 80 (tcp only) are denied`);
    }
  } finally {
    await agent.stop();
    await socket.close();
    topo.close();
  }
});
