/** The agent hosts several components, each owning its table: one change that concerns two of
 * them is one transaction per table, a change that concerns one writes only its table, and a
 * resync or table check repairs every table. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { Renderer } from '../../src/policy/render/render';
import { ClusterChange, ClusterSnapshot } from '../../src/k8s/source';
import { listTable } from '../../src/nft/readback';
import { ipv4 } from '../../src/net/ip-bytes';
import { Agent } from '../../src/pipeline/agent';
import { Component, SyncKind, TableRef } from '../../src/pipeline/component';
import { ChangeScope } from '../../src/pipeline/scope';
import { compileFull } from '../../src/policy/engine/compile';
import { diffRulesets, isEmptyDiff, RuleSetDiff } from '../../src/ruleset/diff';
import { elementKey, emptyModel, modelFromKernel, RulesetModel } from '../../src/ruleset/model';
import { withSandbox } from '../helpers/netns';
import { baseCluster, Cluster, NODE, pod } from './fixtures';

const silent = pino({ level: 'silent' });

/** A second producer of desired state: every pod's IPv4 address in the cluster, on any node, in
 * set `pods` of table `ip nfkube_pods`. */
class PodAddresses implements Component {
  readonly name = 'pod-addresses';
  readonly table: TableRef = { family: 'ip', name: 'nfkube_pods' };
  readonly desired: RulesetModel = emptyModel(this.table);
  readonly commits: { kind: SyncKind; diff: RuleSetDiff }[] = [];

  start(snapshot: ClusterSnapshot): void {
    this.desired.chains.set('check', { chain: { family: 'ip', table: this.table.name, name: 'check' }, rules: [] });
    this.desired.sets.set('pods', { set: { family: 'ip', table: this.table.name, name: 'pods', key: ['ipv4_addr'], flags: 0 }, elements: new Map() });
    for (const p of snapshot.pods.values()) this.put(p.ips, true);
  }

  apply(change: ClusterChange, scope: ChangeScope): boolean {
    if (change.kind !== 'Pod') return false;
    for (const k of this.put(change.object.ips, change.type === 'upsert')) scope.element('pods', k);
    return true;
  }

  async afterCommit(diff: RuleSetDiff, kind: SyncKind): Promise<void> {
    this.commits.push({ kind, diff });
  }

  stats(): Record<string, number> {
    return { addresses: this.desired.sets.get('pods')!.elements.size };
  }

  private put(ips: string[], present: boolean): string[] {
    const elements = this.desired.sets.get('pods')!.elements;
    const keys: string[] = [];
    for (const ip of ips.filter((a) => !a.includes(':'))) {
      const e = { key: ipv4(ip) };
      const k = elementKey(e);
      if (present) elements.set(k, e);
      else elements.delete(k);
      keys.push(k);
    }
    return keys;
  }
}

function policyDesired(cluster: Cluster): RulesetModel {
  const snap = cluster.snapshot();
  const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, NODE);
  return new Renderer({ table: 'nfkube', denyAction: 'drop' }).full(ir, snap.pods.values());
}

/** The addresses in set `pods`, as nft lists them. */
function podSet(sb: { run(cmd: string, args: string[]): string }): string[] {
  return (sb.run('nft', ['list', 'set', 'ip', 'nfkube_pods', 'pods']).match(/198\.18\.\d+\.\d+/g) ?? []).sort();
}

test('two components, two tables: one transaction per table a change concerns, every table repaired by a resync', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const addresses = new PodAddresses();
    const agent = new Agent({ socket: sb.socket, logger: silent, components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent }), addresses] });
    const start = await agent.start(cluster.snapshot());
    cluster.agent = agent;
    assert.equal(agent.totals.commits, 2, 'one transaction per table at start');
    assert.equal(start.component, undefined, 'the start report sums both tables');
    assert.ok(start.messages > 0);
    const tables = sb.run('nft', ['list', 'tables']);
    assert.match(tables, /^table inet nfkube$/m);
    assert.match(tables, /^table ip nfkube_pods$/m);
    assert.deepEqual(podSet(sb), ['198.18.0.2', '198.18.0.3', '198.18.0.4']);

    // A local client pod concerns both components: two transactions, one per table.
    let commits = agent.totals.commits;
    cluster.apply(pod('x', 'd', '198.18.0.5', { app: 'client' }));
    await agent.idle();
    assert.equal(agent.totals.commits - commits, 2);
    assert.ok(podSet(sb).includes('198.18.0.5'));
    const back = await listTable(sb.socket, 'inet', 'nfkube');
    assert.ok(back && isEmptyDiff(diffRulesets(modelFromKernel(back), policyDesired(cluster))), 'the policy table equals a full compile');

    // A pod on another node concerns only the address component.
    commits = agent.totals.commits;
    const before = sb.run('nft', ['list', 'table', 'inet', 'nfkube']);
    cluster.apply(pod('y', 'remote', '198.18.1.9', { app: 'other' }, { node: 'node-2' }));
    await agent.idle();
    assert.equal(agent.totals.commits - commits, 1);
    assert.equal(sb.run('nft', ['list', 'table', 'inet', 'nfkube']), before, 'the policy table is not written');
    assert.ok(podSet(sb).includes('198.18.1.9'));
    const last = addresses.commits.at(-1)!;
    assert.equal(last.kind, 'incremental');
    assert.deepEqual([...last.diff.addElements.keys()], ['pods'], 'afterCommit gets the diff committed');

    // Drift in both tables: one resync repairs both and reports both.
    sb.run('nft', ['delete', 'element', 'ip', 'nfkube_pods', 'pods', '{ 198.18.0.2 }']);
    sb.run('nft', ['delete', 'table', 'inet', 'nfkube']);
    const repaired = await agent.resync();
    assert.match(repaired.drift ?? '', /table inet nfkube missing/);
    assert.match(repaired.drift ?? '', /^\+ element pods \{ 198\.18\.0\.2 \}$/m);
    assert.deepEqual(repaired.repaired, { table: 1, element: 1 });
    assert.equal((await agent.resync()).drift, '', 'nothing left to repair');

    // The table check looks at every table.
    sb.run('nft', ['delete', 'table', 'ip', 'nfkube_pods']);
    const checked = await agent.checkTable();
    assert.match(checked?.drift ?? '', /table ip nfkube_pods missing/);
    assert.equal(await agent.checkTable(), undefined);
    await agent.stop();
  });
});

test('two components may not own one table', () => {
  const a = new PodAddresses();
  const b = new PodAddresses();
  assert.throws(() => new Agent({ socket: undefined as never, logger: silent, components: [a, b] }), /two components own table ip nfkube_pods/);
  assert.throws(() => new Agent({ socket: undefined as never, logger: silent, components: [] }), /no components/);
});

/** Polls until check() holds; the limit is generous because the machine may be loaded. */
async function eventually(what: string, check: () => boolean, limitMs = 10_000): Promise<void> {
  const until = Date.now() + limitMs;
  while (!check()) {
    if (Date.now() > until) assert.fail(`${what}: not within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

test('the agent schedules its own table check and periodic resync, and stop() ends both', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const kinds: SyncKind[] = [];
    const agent = new Agent({
      socket: sb.socket,
      logger: silent,
      components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent }), new PodAddresses()],
      observer: { synced: (r) => void kinds.push(r.kind) },
      resyncPeriodMs: 150,
      tableCheckMs: 50,
    });
    await agent.start(cluster.snapshot());
    const tables = () => sb.run('nft', ['list', 'tables']);
    sb.run('nft', ['delete', 'table', 'inet', 'nfkube']);
    await eventually('the table check recreates a deleted table', () => /^table inet nfkube$/m.test(tables()));
    sb.run('nft', ['delete', 'element', 'ip', 'nfkube_pods', 'pods', '{ 198.18.0.3 }']);
    await eventually('the periodic resync restores a deleted element', () => podSet(sb).includes('198.18.0.3'));
    assert.ok(kinds.filter((k) => k === 'resync').length >= 2);
    await agent.stop();
    const after = kinds.length;
    sb.run('nft', ['delete', 'table', 'inet', 'nfkube']);
    await new Promise((r) => setTimeout(r, 400));
    assert.equal(kinds.length, after, 'nothing runs after stop()');
    assert.doesNotMatch(tables(), /^table inet nfkube$/m);
  });
});
