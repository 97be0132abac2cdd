import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { Agent } from '../../src/pipeline/agent';
import { Renderer } from '../../src/policy/render/render';
import { listTable } from '../../src/nft/readback';
import { compileFull } from '../../src/policy/engine/compile';
import { diffRulesets, isEmptyDiff } from '../../src/ruleset/diff';
import { modelFromKernel } from '../../src/ruleset/model';
import { Sandbox, withSandbox } from '../helpers/netns';
import { baseCluster, Cluster, NODE, pod, policy } from './fixtures';

const silent = pino({ level: 'silent' });

/** Each started agent's policy component. */
const policyOf = new WeakMap<Agent, PolicyComponent>();

async function startAgent(sb: Sandbox, cluster: Cluster, extra: Partial<ConstructorParameters<typeof Agent>[0]> = {}): Promise<Agent> {
  const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent });
  const agent = new Agent({ socket: sb.socket, logger: silent, components: [component], ...extra });
  policyOf.set(agent, component);
  await agent.start(cluster.snapshot());
  cluster.agent = agent;
  return agent;
}

/** The kernel's table equals a from-scratch compile of the cluster. */
async function assertEnforced(sb: Sandbox, cluster: Cluster): Promise<void> {
  const snap = cluster.snapshot();
  const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, NODE);
  const desired = new Renderer({ table: 'nfkube', denyAction: 'drop' }).full(ir, snap.pods.values());
  const back = await listTable(sb.socket, 'inet', 'nfkube');
  assert.ok(back, 'table exists');
  const d = diffRulesets(modelFromKernel(back), desired);
  assert.ok(isEmptyDiff(d), `kernel differs from desired: ${JSON.stringify(d, (_k, v) => (v instanceof Map ? [...v.keys()] : v))}`);
}

const messagesSince = (agent: Agent, before: number) => agent.totals.messages - before;

test('start-up brings a leftover table to the cluster state in one transaction', async () => {
  await withSandbox(async (sb) => {
    // A leftover table from an earlier run (marked as nfkube marks its tables), with content
    // nfkube no longer means.
    sb.run('nft', ['add table inet nfkube { comment "managed by nfkube"; }; add chain inet nfkube stale; add set inet nfkube old { type ipv4_addr; }']);
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);
    assert.equal(agent.totals.commits, 1);
    await assertEnforced(sb, cluster);
    const text = sb.run('nft', ['list', 'table', 'inet', 'nfkube']);
    assert.doesNotMatch(text, /stale|set old/);
    await agent.stop();
  });
});

test('a restart writes only what changed while it was down: nothing, or one policy chain', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    await (await startAgent(sb, cluster)).stop();
    const table = () => sb.run('nft', ['-a', 'list', 'table', 'inet', 'nfkube']);
    const before = table();

    const same = await startAgent(sb, cluster);
    assert.equal(same.totals.messages, 0, 'an unchanged cluster: nothing written');
    assert.equal(table(), before, 'every rule, set and element as it was, handles included');
    await same.stop();

    cluster.apply(policy('x', 'web', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port: 8080 }] }] }));
    const baseChain = () => sb.run('nft', ['-a', 'list', 'chain', 'inet', 'nfkube', 'forward_ingress']);
    const baseBefore = baseChain();
    const changed = await startAgent(sb, cluster);
    assert.equal(changed.totals.commits, 1);
    // As for the same change made while running: one chain refilled, the unused sets deleted.
    assert.deepEqual(Object.fromEntries(changed.totals.byType), { NFT_MSG_DELRULE: 1, NFT_MSG_NEWRULE: 2, NFT_MSG_DELSET: 2 });
    assert.equal(baseChain(), baseBefore, 'base chains untouched');
    await assertEnforced(sb, cluster);
    await changed.stop();
  });
});

test('two local pods briefly sharing an address: the entry passes to the one that stays', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);
    const dispatch = () => sb.run('nft', ['list', 'map', 'inet', 'nfkube', 'ingress_v4']);
    const chainOf = (text: string, ip: string) => new RegExp(`${ip.replace(/\./g, '\\.')} : goto (combo_\\w+_in)`).exec(text)?.[1];
    // The pods share their combination chain: whose default deny counts the address is the holder.
    const holder = () => policyOf.get(agent)!.podAt('198.18.0.2', 'ingress');
    const chainA = chainOf(dispatch(), '198.18.0.2');
    assert.ok(chainA);
    assert.equal(holder(), 'x/a');
    // A new web pod gets x/a's address while x/a is still running (slow status update): x/a,
    // first by key, keeps the entry.
    cluster.apply(pod('x', 'a2', '198.18.0.2', { app: 'web' }));
    await agent.idle();
    assert.equal(chainOf(dispatch(), '198.18.0.2'), chainA);
    assert.equal(holder(), 'x/a');
    await assertEnforced(sb, cluster);
    // x/a leaves: its address stays dispatched, now to x/a2's chain (before, it lost the entry
    // and x/a2 was not isolated at all).
    cluster.remove('Pod', 'x/a');
    await agent.idle();
    const chainA2 = chainOf(dispatch(), '198.18.0.2');
    assert.ok(chainA2, 'the address is still dispatched');
    assert.equal(holder(), 'x/a2', 'now held by x/a2');
    await assertEnforced(sb, cluster);
    // The same the other way round: a claimant first by key arrives, then leaves.
    cluster.apply(pod('x', 'a1', '198.18.0.2', { app: 'web' }));
    await agent.idle();
    await assertEnforced(sb, cluster);
    cluster.remove('Pod', 'x/a1');
    await agent.idle();
    assert.equal(chainOf(dispatch(), '198.18.0.2'), chainA2);
    await assertEnforced(sb, cluster);
    assert.equal((await agent.resync()).drift, '');
    await agent.stop();
  });
});

test('the table check finds a flushed ruleset or a dormant table and restores enforcement at once', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);
    const before = agent.totals.messages;
    assert.equal(await agent.checkTable(), undefined, 'a healthy table: nothing to do');
    assert.equal(agent.totals.messages, before);

    // What restarting a host's nftables.service does: its file starts with `flush ruleset`.
    sb.run('nft', ['flush ruleset']);
    const restored = await agent.checkTable();
    assert.match(restored?.drift ?? '', /missing/);
    await assertEnforced(sb, cluster);

    sb.run('nft', ['add table inet nfkube { flags dormant; }']);
    assert.match((await agent.checkTable())?.drift ?? '', /dormant/);
    await assertEnforced(sb, cluster);
    await agent.stop();
  });
});

test('event cost is counted: irrelevant events write nothing, a pod joining a selector adds elements only', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);

    let before = agent.totals.messages;
    cluster.apply(pod('z', 'far', '198.18.9.9', { app: 'other' }, { node: 'node-2' }));
    cluster.apply(pod('x', 'b', '198.18.0.3', { app: 'client', 'pod-template-hash': 'abc' }));
    await agent.idle();
    assert.equal(messagesSince(agent, before), 0, 'a pod elsewhere that no selector matches, and a label no selector reads');

    before = agent.totals.messages;
    const byTypeBefore = new Map(agent.totals.byType);
    cluster.apply(pod('x', 'd', '198.18.0.5', { app: 'client' }, { node: 'node-2' }));
    await agent.idle();
    const added = [...agent.totals.byType].filter(([k, v]) => v !== (byTypeBefore.get(k) ?? 0)).map(([k]) => k);
    assert.deepEqual(added, ['NFT_MSG_NEWSETELEM'], 'a new peer pod is one element add');
    assert.equal(messagesSince(agent, before), 1);
    await assertEnforced(sb, cluster);

    before = agent.totals.messages;
    cluster.remove('Pod', 'x/d');
    await agent.idle();
    assert.equal(messagesSince(agent, before), 1, 'a peer pod leaving is one element delete');
    await assertEnforced(sb, cluster);
    await agent.stop();
  });
});

test('a changed policy rewrites only its own chain', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);
    const handlesBefore = sb.run('nft', ['-a', 'list', 'chain', 'inet', 'nfkube', 'forward_ingress']);
    const before = new Map(agent.totals.byType);
    cluster.apply(policy('x', 'web', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port: 8080 }] }] }));
    await agent.idle();
    const delta = Object.fromEntries([...agent.totals.byType].map(([k, v]) => [k, v - (before.get(k) ?? 0)]).filter(([, v]) => v !== 0));
    // One chain flushed and refilled (one rule per peer family); the named-port sets it no longer
    // uses are deleted. No other chain is touched.
    assert.deepEqual(delta, { NFT_MSG_DELRULE: 1, NFT_MSG_NEWRULE: 2, NFT_MSG_DELSET: 2 });
    assert.equal(sb.run('nft', ['-a', 'list', 'chain', 'inet', 'nfkube', 'forward_ingress']), handlesBefore, 'base chains untouched');
    await assertEnforced(sb, cluster);
    await agent.stop();
  });
});

test('events during a commit are coalesced into the next one and the result is exact', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);
    const commitsBefore = agent.totals.commits;
    for (let i = 0; i < 200; i++) cluster.apply(pod('y', `p${i}`, `198.18.1.${i}`, { app: 'client' }, { node: i % 2 ? NODE : 'node-2' }));
    for (let i = 0; i < 200; i += 3) cluster.remove('Pod', `y/p${i}`);
    await agent.idle();
    assert.ok(agent.totals.commits - commitsBefore < 20, `${agent.totals.commits - commitsBefore} commits for 267 events`);
    await assertEnforced(sb, cluster);
    await agent.stop();
  });
});

test('drift is found by read-back and repaired in one transaction', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);
    const clean = await agent.resync();
    assert.equal(clean.drift, '');
    assert.equal(clean.messages, 0);

    const handle = /ct state established,related accept # handle (\d+)/.exec(sb.run('nft', ['-a', 'list', 'chain', 'inet', 'nfkube', 'forward_ingress']))![1];
    sb.run('nft', ['delete', 'rule', 'inet', 'nfkube', 'forward_ingress', 'handle', handle]);
    const set = [...(await listTable(sb.socket, 'inet', 'nfkube'))!.sets].find((s) => s.name.startsWith('ps') && s.name.endsWith('_v4'))!.name;
    sb.run('nft', ['flush', 'set', 'inet', 'nfkube', set]);
    sb.run('nft', ['add', 'rule', 'inet', 'nfkube', 'forward_egress', 'meta', 'mark', '0x1', 'accept']);
    const repaired = await agent.resync();
    assert.match(repaired.drift ?? '', /~ chain forward_ingress/);
    assert.match(repaired.drift ?? '', new RegExp(`\\+ element ${set}`));
    assert.match(repaired.drift ?? '', /-   meta mark 0x00000001 accept/);
    await assertEnforced(sb, cluster);

    sb.run('nft', ['delete', 'table', 'inet', 'nfkube']);
    const recreated = await agent.resync();
    assert.match(recreated.drift ?? '', /missing/);
    await assertEnforced(sb, cluster);
    await agent.stop();
  });
});

test('a table switched off (dormant) is drift: replaced at start and by a resync', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const dormant = () => /flags dormant/.test(sb.run('nft', ['list', 'table', 'inet', 'nfkube']));
    await (await startAgent(sb, cluster)).stop();
    // Its base chains see no packets, though every rule and element is in place.
    sb.run('nft', ['add table inet nfkube { flags dormant; }']);
    assert.ok(dormant());
    const agent = await startAgent(sb, cluster);
    assert.ok(!dormant(), 'start wakes it');
    assert.equal(agent.totals.commits, 1);

    sb.run('nft', ['add table inet nfkube { flags dormant; }']);
    const repaired = await agent.resync();
    assert.match(repaired.drift ?? '', /table inet nfkube has flags dormant/);
    assert.ok(!dormant(), 'a resync wakes it');
    await assertEnforced(sb, cluster);
    await agent.stop();
  });
});

test('a commit the kernel rejects keeps the previous state, is retried, and repaired', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const failures: unknown[] = [];
    const agent = await startAgent(sb, cluster, { observer: { failed: (_k, err) => failures.push(err) } });
    // Someone deletes a chain nfkube owns; the next change to it is refused by the kernel.
    const podChain = /chain (combo_\w+_in)/.exec(sb.run('nft', ['list', 'table', 'inet', 'nfkube']))![1];
    sb.run('nft', ['flush', 'chain', 'inet', 'nfkube', podChain]);
    sb.run('nft', ['-f', '-'], `flush map inet nfkube ingress_v4\nflush map inet nfkube ingress_v6\ndelete chain inet nfkube ${podChain}\n`);
    cluster.apply(policy('x', 'web-2', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ ports: [{ port: 443 }] }] }));
    await agent.idle();
    assert.ok(failures.length >= 1, 'the kernel refused the incremental commit');
    const repaired = await agent.resync();
    assert.ok(repaired.drift);
    await assertEnforced(sb, cluster);
    await agent.stop();
  });
});
