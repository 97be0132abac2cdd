/** TableSync on the in-memory table store, with no kernel and no root: the first start and a
 * restart, coalescing of bursts, backoff and the full resync after repeated failures, the
 * deferred read-back, drift repair, the generation guard retrying on a race, bounded batches in
 * their order, and a held table. test/kernel/fake-store-agrees.test.ts keeps the fake honest. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import * as b from '../../src/nft/build';
import { HOLD_FLAGS, kernelCanHold } from '../../src/nft/ownership';
import { Transaction } from '../../src/nft/transaction';
import { Chain, Expr, NftSet, Operation, Rule, Table } from '../../src/nft/types';
import { ipv4 } from '../../src/net/ip-bytes';
import type { Component } from '../../src/pipeline/component';
import { FakeTableStore, ReceivedBatch } from '../../src/pipeline/fake-store';
import { ChangeScope } from '../../src/pipeline/scope';
import { Lane } from '../../src/pipeline/lane';
import type { SyncReport, SyncTotals } from '../../src/pipeline/sync-report';
import { TableSync, TableSyncOptions } from '../../src/pipeline/table-sync';
import { diffRulesets, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { elementKey, emptyModel, modelFromKernel, RulesetModel } from '../../src/ruleset/model';
import { recordingLogger } from '../helpers/recording-logger';

const TABLE: Table = { family: 'inet', name: 'nfk' };
const chain = (name: string, base?: Chain['base']): Chain => ({ family: 'inet', table: 'nfk', name, base });
const rule = (chainName: string, exprs: Expr[]): Rule => ({ family: 'inet', table: 'nfk', chain: chainName, exprs });
const set = (name: string): NftSet => ({ family: 'inet', table: 'nfk', name, key: ['ipv4_addr'], flags: 0 });
const INPUT = { hook: 'input', priority: 0, type: 'filter', policy: 'accept' } as const;

/** A component whose desired model the test edits directly. */
class TestComponent implements Component {
  readonly name = 'test';
  readonly table = { family: 'inet', name: 'nfk' } as const;
  readonly desired: RulesetModel = emptyModel(TABLE);
  start(): void {}
  apply(): boolean {
    return false;
  }
}

/** The base chain `input` jumps to `pol`, whose rules look `peers` up, with `n` regular chains
 * `c<i>` and sets `s<i>` of `elements` addresses each besides. */
function populate(m: RulesetModel, n = 0, elements = 0): RulesetModel {
  m.chains.set('input', { chain: chain('input', INPUT), rules: [rule('input', [b.jump('pol')])] });
  m.chains.set('pol', { chain: chain('pol'), rules: [rule('pol', [...b.matchAddrInSet('ip saddr', 'peers'), b.accept()])] });
  m.sets.set('peers', { set: set('peers'), elements: new Map() });
  for (let i = 0; i < n; i++) {
    m.chains.set(`c${i}`, { chain: chain(`c${i}`), rules: [rule(`c${i}`, [...b.matchAddrInSet('ip daddr', `s${i}`), b.counter()]), rule(`c${i}`, [b.drop()])] });
    const s = { set: set(`s${i}`), elements: new Map() };
    for (let e = 0; e < elements; e++) {
      const el = { key: ipv4(`198.18.${i}.${e + 1}`) };
      s.elements.set(elementKey(el), el);
    }
    m.sets.set(`s${i}`, s);
  }
  return m;
}

/** An edit adding address `198.18.200.<i>` to `peers`, as a component records it. */
const addPeer = (c: TestComponent, i: number) => (scope: ChangeScope) => {
  const e = { key: ipv4(`198.18.200.${i}`) };
  c.desired.sets.get('peers')!.elements.set(elementKey(e), e);
  scope.element('peers', elementKey(e));
  return true;
};

/** An edit appending a counter rule to `pol` (the chain is rewritten). A component replaces a
 * chain's model: the committed model shares the old one. */
const growPol = (c: TestComponent) => (scope: ChangeScope) => {
  const pol = c.desired.chains.get('pol')!;
  c.desired.chains.set('pol', { chain: pol.chain, rules: [...pol.rules, rule('pol', [b.counter()])] });
  scope.chains.add('pol');
  return true;
};

interface Harness {
  sync: TableSync;
  component: TestComponent;
  store: FakeTableStore;
  reports: SyncReport[];
  failures: { kind: string; err: unknown }[];
  lines: Record<string, any>[];
  /** Resolves at the next report of `kind` (or any kind). */
  next(kind?: string): Promise<SyncReport>;
}

function harness(store = new FakeTableStore(), extra: Partial<TableSyncOptions> = {}, component = new TestComponent()): Harness {
  const { logger, lines } = recordingLogger('info');
  const totals: SyncTotals = { commits: 0, messages: 0, events: 0, emptyEvents: 0, byType: new Map() };
  const reports: SyncReport[] = [];
  const failures: Harness['failures'] = [];
  const waiting: { kind?: string; resolve: (r: SyncReport) => void }[] = [];
  const sync = new TableSync({
    store,
    logger,
    component,
    lane: new Lane(),
    totals,
    observer: {
      synced(r) {
        reports.push(r);
        for (const w of waiting.splice(0).filter((w) => (!w.kind || w.kind === r.kind ? (w.resolve(r), false) : true))) waiting.push(w);
      },
      failed: (kind, err) => void failures.push({ kind, err }),
    },
    ...extra,
  });
  return { sync, component, store, reports, failures, lines, next: (kind) => new Promise((resolve) => waiting.push({ kind, resolve })) };
}

async function started(h: Harness, fill: (m: RulesetModel) => void = (m) => void populate(m)): Promise<SyncReport> {
  fill(h.component.desired);
  h.sync.load({} as Parameters<Component['start']>[0]);
  return h.sync.start();
}

/** What the store holds differs from the component's desired model by this ('' when equal). */
async function drift(h: Harness): Promise<string> {
  const read = await h.store.readTable('inet', 'nfk');
  if (!read.value) return 'no table';
  const back = modelFromKernel(read.value);
  const d = diffRulesets(back, h.component.desired);
  return isEmptyDiff(d) ? '' : formatDiff(back, h.component.desired, d);
}

const opsOf = (batches: ReceivedBatch[]): Operation[] => batches.flatMap((r) => r.operations);
const describeOp = (op: Operation) => new Transaction().add(op).toString().split(' {')[0];

test('a first start creates the table in one guarded batch; a restart over the same desired state writes nothing', async () => {
  const h = harness();
  const first = await started(h);
  assert.equal(first.kind, 'full');
  assert.equal(await drift(h), '');
  assert.equal(h.store.received.length, 1);
  assert.equal(h.store.received[0].genId, 1, 'guarded by the generation the table list was read at');

  const again = harness(h.store);
  const report = await started(again);
  assert.equal(report.messages, 0);
  assert.equal(h.store.received.length, 1, 'nothing sent');
});

test('a burst offered together is one commit; changes arriving during a commit are merged into the next', async () => {
  const h = harness();
  await started(h);
  const before = h.store.received.length;
  for (let i = 1; i <= 5; i++) h.sync.offerEdit(`peer ${i}`, addPeer(h.component, i));
  assert.equal(h.sync.pendingEvents, 5);
  await h.sync.idle();
  assert.equal(h.store.received.length, before + 1, 'five edits, one commit');
  assert.equal(opsOf(h.store.received.slice(before)).flatMap((op) => (op.kind === 'element' ? op.elements : [])).length, 5);

  // A slow commit: whatever arrives meanwhile waits for it, then goes in one more commit.
  const resume = h.store.pause();
  h.sync.offerEdit('peer 6', addPeer(h.component, 6));
  await new Promise((r) => setImmediate(r));
  for (let i = 7; i <= 12; i++) h.sync.offerEdit(`peer ${i}`, addPeer(h.component, i));
  assert.equal(h.sync.pendingEvents, 6, 'the six later edits wait, merged');
  resume();
  await h.sync.idle();
  const later = h.store.received.slice(before + 1);
  assert.deepEqual(
    later.map((r) => r.operations.flatMap((op) => (op.kind === 'element' ? op.elements : [])).length),
    [1, 6],
  );
  assert.equal(await drift(h), '');
});

// A bound on the wait for the resync (not an assertion on time): a broken retry fails, never hangs.
test('a refused commit leaves the change pending, is retried with a growing backoff, and the third failure in a row brings a full resync', { timeout: 60_000 }, async () => {
  const h = harness();
  await started(h);
  h.store.inject({ refuse: 'EBUSY' }, { refuse: 'EBUSY' }, { refuse: 'EBUSY' });
  const resynced = h.next('resync');
  h.sync.offerEdit('peer 1', addPeer(h.component, 1));
  // The retry timers do not hold the process open (an agent exits without waiting for them).
  const keepAlive = setInterval(() => undefined, 1000);
  const report = await resynced.finally(() => clearInterval(keepAlive));
  assert.deepEqual(
    h.failures.map((f) => f.kind),
    ['incremental', 'incremental', 'incremental'],
  );
  assert.deepEqual(
    h.lines.filter((l) => l.retryInMs !== undefined).map((l) => [l.code, l.retryInMs]),
    [
      ['EBUSY', 100],
      ['EBUSY', 200],
      ['EBUSY', 400],
    ],
  );
  assert.ok(h.sync.failing === undefined, 'the resync succeeded: no longer failing');
  assert.equal(report.repaired?.element, 1, 'the resync committed the pending element');
  assert.equal(await drift(h), '');
  const outcomes = h.store.received.slice(1).map((r) => r.outcome);
  assert.deepEqual(outcomes, ['EBUSY', 'EBUSY', 'EBUSY', 'committed']);
});

test('chains a commit rewrote are read back once no change is pending, after the commits of changes that arrived meanwhile', async () => {
  const h = harness();
  await started(h);
  const from = h.store.journal.length;
  const resume = h.store.pause();
  h.sync.offerEdit('grow pol', growPol(h.component));
  await new Promise((r) => setImmediate(r));
  h.sync.offerEdit('peer 1', addPeer(h.component, 1));
  resume();
  await h.sync.idle();
  const events = h.store.journal.slice(from).map((e) => ('read' in e ? e.read : `commit ${e.batch.outcome}`));
  assert.deepEqual(events, ['commit committed', 'commit committed', 'rules inet nfk pol']);
  assert.equal(h.failures.length, 0);
});

test('a resync repairs what another writer changed, in one batch guarded by the generation it read', async () => {
  const h = harness();
  await started(h, (m) => void populate(m, 2, 3));
  const other = h.store.peer();
  const pol = (await other.listRules('inet', 'nfk', 'pol'))[0];
  const s0 = h.component.desired.sets.get('s0')!;
  await other.commit(new Transaction().deleteRule(pol).deleteElements(s0.set, [[...s0.elements.values()][0]]).addChain(chain('stray')));
  const gen = await h.store.generation();
  const report = await h.sync.resync();
  assert.match(report.drift!, /pol/);
  assert.deepEqual(report.repaired, { chain: 2, element: 1 });
  const repair = h.store.received.at(-1)!;
  assert.equal(repair.genId, gen);
  assert.equal(repair.outcome, 'committed');
  assert.equal(await drift(h), '');
  assert.equal((await h.sync.resync()).drift, '', 'nothing left to repair');
});

test('a resync whose commit loses a race to another writer reads again and commits, reporting no failure', async () => {
  const h = harness();
  await started(h);
  const other = h.store.peer();
  await other.commit(new Transaction().deleteRule((await other.listRules('inet', 'nfk', 'pol'))[0]));
  h.store.inject({ race: true });
  const report = await h.sync.resync();
  const [lost, won] = h.store.received.slice(-2);
  assert.equal(lost.outcome, 'ERESTART');
  assert.equal(won.outcome, 'committed');
  assert.equal(won.genId, lost.genId! + 1, 'planned again from a read at the new generation');
  assert.equal(report.repaired?.chain, 1);
  assert.equal(h.failures.length, 0);
  assert.equal(await drift(h), '');
});

test('bounded batches build off to the side before linking, and unlink before removing', async () => {
  const limits = { batchLimits: { objects: 4, elements: 4 } };
  const h = harness(undefined, limits);
  await started(h, (m) => void populate(m, 3, 5));
  const build = h.store.received;
  assert.ok(build.length > 3, `${build.length} batches`);
  assert.equal(await drift(h), '');
  // Everything the base chain reaches exists, filled, before the batch that adds it.
  const link = build.findIndex((r) => r.operations.some((op) => op.kind === 'chain' && op.chain.name === 'input'));
  assert.equal(link, build.length - 1, 'the base chain is linked last');
  // Unguarded (any commit on the node would trip a guard while the batches go): the first
  // creates the table, which the kernel refuses if someone made it since the read.
  assert.ok(build.every((r) => r.genId === undefined));
  assert.equal(describeOp(build[0].operations[0]), 'create table inet nfk');

  // A restart that no longer wants c0..c2 and s0..s2: flushed, then the sets, then the chains.
  const after = harness(h.store, limits);
  await started(after, (m) => void populate(m));
  const removal = opsOf(h.store.received.slice(build.length)).map(describeOp);
  const firstSetDelete = removal.findIndex((s) => s.startsWith('delete set'));
  const lastFlush = removal.length - 1 - [...removal].reverse().findIndex((s) => s.startsWith('flush chain'));
  const firstChainDelete = removal.findIndex((s) => s.startsWith('delete chain'));
  assert.ok(lastFlush >= 0 && lastFlush < firstSetDelete && firstSetDelete < firstChainDelete, removal.join('\n'));
  assert.equal(await drift(after), '');
});

test('a held table is owned by the agent: another writer is refused; when the agent exits it stays, and the next start adopts it', { skip: !kernelCanHold() && 'the kernel cannot hold a table (before 6.9)' }, async () => {
  const h = harness(undefined, { holdTable: true });
  await started(h, (m) => void populate(m, 3, 5));
  const t = (await h.store.listTables('inet'))[0];
  assert.equal(t.flags, HOLD_FLAGS);
  assert.equal(t.owner, h.store.portId);
  const other = h.store.peer();
  await assert.rejects(other.commit(new Transaction().addChain(chain('stray'))), /EPERM/);

  h.sync.stop();
  h.store.close();
  assert.equal((await other.listTables('inet'))[0].owner, undefined, 'ownerless, kept');
  const from = other.received.length;
  const next = harness(other, { holdTable: true, batchLimits: { objects: 4, elements: 4 } });
  const report = await started(next, (m) => void populate(m, 1, 5));
  assert.equal((await other.listTables('inet'))[0].owner, other.portId, 'adopted');
  assert.ok(report.batchKernelMs && report.batchKernelMs.length > 1, 'bounded');
  const sent = other.received.slice(from);
  assert.deepEqual(describeOp(sent[0].operations[0]), 'add table inet nfk', 'the adoption comes first');
  assert.ok(
    sent.slice(1).every((r) => r.genId === undefined),
    'a held table cannot change under the plan: its batches need no guard',
  );
  assert.equal(await drift(next), '');
});

/** An edit inserting a counter rule commented `name` at index `at` of `pol`. */
const insertInPol = (c: TestComponent, at: number, name: string) => (scope: ChangeScope) => {
  const pol = c.desired.chains.get('pol')!;
  const rules = [...pol.rules];
  rules.splice(at, 0, { ...rule('pol', [b.counter()]), comment: name });
  c.desired.chains.set('pol', { chain: pol.chain, rules });
  scope.chains.add('pol');
  return true;
};

test('a long chain is edited in place by handle, and a handle made stale by another writer is learned again after one refusal', async () => {
  const h = harness();
  await started(h, (m) => {
    populate(m);
    const pol = m.chains.get('pol')!;
    pol.rules.push(...Array.from({ length: 40 }, (_, i) => ({ ...rule('pol', [b.counter()]), comment: `k${i}` })));
  });
  // Written whole by the start: the chain is read back once for its handles, then edited.
  h.sync.offerEdit('insert x', insertInPol(h.component, 20, 'x'));
  await h.sync.idle();
  assert.deepEqual(h.store.received.at(-1)!.operations.map(describeOp), [`insert rule inet nfk pol position ${h.store.state.tables.get('inet nfk')!.chains.get('pol')!.rules[21].handle} counter packets 0 bytes 0 comment "x"`]);
  assert.equal(await drift(h), '');
  // Another writer writes the chain again: every handle changes.
  const held = h.store.state.tables.get('inet nfk')!.chains.get('pol')!;
  const tx = new Transaction().flushChain(held.chain);
  for (const r of held.rules) tx.addRule({ ...r, handle: undefined });
  await h.store.peer().commit(tx);
  const retried = h.next('incremental');
  h.sync.offerEdit('insert y', insertInPol(h.component, 10, 'y'));
  // The retry runs from an unreferenced backoff timer.
  const keepAlive = setInterval(() => undefined, 1000);
  await retried.finally(() => clearInterval(keepAlive));
  assert.equal(h.failures.length, 1, 'the stale position was refused once');
  const last = h.store.received.at(-1)!.operations.map(describeOp);
  assert.equal(last.length, 1);
  assert.match(last[0], /^insert rule inet nfk pol position \d+ counter packets 0 bytes 0 comment "y"$/);
  assert.equal(await drift(h), '');
});

/** Fills `m` with two sets of 65,536 addresses each (198.18.0.0/15). */
function populateLarge(m: RulesetModel): void {
  populate(m);
  for (const [name, third] of [['big0', 18], ['big1', 19]] as const) {
    const s = { set: set(name), elements: new Map() };
    for (let i = 0; i < 65536; i++) {
      const el = { key: ipv4(`198.${third}.${i >> 8}.${i & 255}`) };
      s.elements.set(elementKey(el), el);
    }
    m.sets.set(name, s);
  }
}

/** Heap in use after a full GC, in bytes. */
function liveHeap(): number {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
  return process.memoryUsage().heapUsed;
}

test('agent --once (shareDesired) plans from the desired model itself: the first sync keeps no second set of element maps', async () => {
  const grown = async (extra: Partial<TableSyncOptions>) => {
    const store = new FakeTableStore();
    const component = new TestComponent();
    populateLarge(component.desired);
    const before = liveHeap();
    const h = harness(store, extra, component);
    await started(h, () => undefined);
    assert.equal(await drift(h), '');
    const grew = liveHeap() - before;
    h.sync.stop();
    return grew;
  };
  const copied = await grown({});
  const shared = await grown({ shareDesired: true });
  // Two maps of 65,536 entries: their hash tables are ~3.8 MB (measured); a copy either way
  // differs by under 0.3 MB.
  assert.ok(copied - shared > 2 * 1024 * 1024, `copied ${copied} B, shared ${shared} B`);
});

test('agent --once (shareDesired): changes applied during and after the first sync are still committed, against a copy made before the first of them', async () => {
  const h = harness(undefined, { shareDesired: true });
  populate(h.component.desired);
  h.sync.load({} as Parameters<Component['start']>[0]);
  const resume = h.store.pause();
  const first = h.sync.start();
  await new Promise((r) => setImmediate(r));
  h.sync.offerEdit('peer 1', addPeer(h.component, 1));
  resume();
  await first;
  await h.sync.idle();
  assert.equal(await drift(h), '', 'the edit made while the first sync was in flight is committed');
  h.sync.offerEdit('peer 2', addPeer(h.component, 2));
  h.sync.offerEdit('pol', growPol(h.component));
  await h.sync.idle();
  assert.equal(await drift(h), '');
  const last = opsOf(h.store.received.slice(-1));
  assert.deepEqual(
    last.flatMap((op) => (op.kind === 'element' ? op.elements.map(elementKey) : [])),
    [elementKey({ key: ipv4('198.18.200.2') })],
    'only what changed since the previous commit',
  );
});
