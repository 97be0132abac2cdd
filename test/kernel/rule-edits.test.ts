/** Positional rule edits against the kernel: random edit sequences committed as DELRULE by handle
 * and NEWRULE at a kept rule's position read back equal to the desired chain, the handles the
 * kernel echoes are the ones the next edit places by, and no packet ever sees a half-edited chain. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import * as b from '../../src/nft/build';
import { listTable } from '../../src/nft/readback';
import { commit, Transaction } from '../../src/nft/transaction';
import { Expr, Rule } from '../../src/nft/types';
import { applyDiff, cloneModel, diffRulesets, diffTransaction, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { emptyModel, modelFromKernel, RulesetModel } from '../../src/ruleset/model';
import { mulberry32 } from '../helpers/prng';
import { Sandbox, withSandbox } from '../helpers/netns';

const TABLE = { family: 'inet' as const, name: 'nfk' };
const rule = (comment: string, exprs: Expr[]): Rule => ({ family: 'inet', table: 'nfk', chain: 'c', exprs, comment });
/** A rule that matches no packet of these tests; its comment is its identity. */
const filler = (name: string): Rule => rule(name, [...b.matchPort('udp', 'th dport', 10), b.counter(), b.accept()]);

/** The output hook jumps to chain c, whose rules are `rules`. */
function model(rules: Rule[]): RulesetModel {
  const m = emptyModel(TABLE);
  m.chains.set('out', { chain: { family: 'inet', table: 'nfk', name: 'out', base: { hook: 'output', priority: 0, type: 'filter', policy: 'accept' } }, rules: [{ family: 'inet', table: 'nfk', chain: 'out', exprs: [b.jump('c')] }] });
  m.chains.set('c', { chain: { family: 'inet', table: 'nfk', name: 'c' }, rules });
  return m;
}

async function readBack(sb: Sandbox): Promise<RulesetModel> {
  return modelFromKernel((await listTable(sb.socket, 'inet', 'nfk'))!);
}

/** Commits the whole model into an empty table; returns the model with the kernel's handles. */
async function load(sb: Sandbox, m: RulesetModel): Promise<RulesetModel> {
  const empty = emptyModel(TABLE);
  await commit(sb.socket, diffTransaction(empty, m, diffRulesets(empty, m), new Transaction().addTable(TABLE)), { echo: false });
  return readBack(sb);
}

/** The comments of chain c in kernel order, as `nft` lists them. */
function nftOrder(sb: Sandbox): string[] {
  return [...sb.run('nft', ['list', 'chain', 'inet', 'nfk', 'c']).matchAll(/comment "([^"]+)"/g)].map((x) => x[1]);
}

test('random edit sequences, placed by the echoed handles of earlier edits, read back as desired', async () => {
  await withSandbox(async (sb) => {
    const rnd = mulberry32(2810);
    let n = 0;
    const fresh = () => `r${n++}`;
    let names = Array.from({ length: 30 }, fresh);
    // The committed model is kept from the echoes alone, as the agent keeps it; the kernel is
    // read only to check.
    let committed = await load(sb, model(names.map(filler)));
    let edits = 0;
    for (let step = 0; step < 60; step++) {
      const next = [...names];
      for (let k = 1 + Math.floor(rnd() * 3); k > 0; k--) {
        const at = Math.floor(rnd() * (next.length + 1));
        const pick = Math.floor(rnd() * next.length);
        const kind = Math.floor(rnd() * 6);
        if (kind === 0) next.unshift(fresh());
        else if (kind === 1) next.push(fresh());
        else if (kind === 2) next.splice(at, 0, fresh());
        else if (kind === 3 && next.length > 1) next.splice(pick, 1);
        else if (kind === 4) next.splice(at, 0, ...next.splice(pick, 1));
        else next.splice(at, 0, next[pick]);
      }
      const desired = model(next.map(filler));
      const d = diffRulesets(committed, desired);
      if (d.rewriteChains.length === 0) continue;
      const e = d.ruleEdits!.get('c');
      assert.ok(e, `step ${step}: every handle is known, so chain c is edited in place`);
      edits++;
      const res = await commit(sb.socket, diffTransaction(committed, desired, d), { echo: true });
      assert.equal(res.messages, e.removed.length + e.placed.length, `step ${step}: one message per rule that goes or comes`);
      assert.ok(res.messages < next.length + 1, `step ${step}: fewer than a flush and ${next.length} rules`);
      const after = cloneModel(committed);
      applyDiff(after, desired, d, res.ruleHandles);
      committed = after;
      const back = await readBack(sb);
      assert.ok(isEmptyDiff(diffRulesets(back, desired)), `step ${step}: ${formatDiff(back, desired, diffRulesets(back, desired))}`);
      assert.deepEqual(nftOrder(sb), next, `step ${step}: nft lists the desired order`);
      assert.deepEqual(
        committed.chains.get('c')!.rules.map((r) => r.handle),
        back.chains.get('c')!.rules.map((r) => r.handle),
        `step ${step}: the committed model knows every handle the kernel gave`,
      );
      names = next;
    }
    assert.ok(edits >= 50, `${edits} edits committed`);
  });
});

/** Sends one datagram, says so, then sends `count` more. */
const SEND = (count: number) => `
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.sendto(b'x', ('127.0.0.1', 9))
print('go', flush=True)
for i in range(${count}):
    s.sendto(b'x', ('127.0.0.1', 9))
`;

test('no packet sees a half-edited chain: a rule moved and renamed in one batch is always matched once', async () => {
  await withSandbox(async (sb) => {
    sb.run('ip', ['link', 'set', 'lo', 'up']);
    const fillers = Array.from({ length: 20 }, (_, i) => filler(`f${i}`));
    // The rule that counts port 9 sits early as A, or late as B; a packet that finds neither (A
    // deleted, B not yet there) reaches `leak`.
    const hit = (name: string) => rule(name, [...b.matchPort('udp', 'th dport', 9), b.counter(), b.accept()]);
    const leak = rule('leak', [...b.matchPort('udp', 'th dport', 9), b.counter()]);
    const total = rule('total', [...b.matchPort('udp', 'th dport', 9), b.counter()]);
    const states = [model([total, ...fillers.slice(0, 5), hit('A'), ...fillers.slice(5), leak]), model([total, ...fillers.slice(0, 15), hit('B'), ...fillers.slice(15), leak])];
    let committed = await load(sb, states[0]);
    const count = (name: string) => Number(new RegExp(`counter packets (\\d+) bytes \\d+ (?:accept )?comment "${name}"`).exec(sb.run('nft', ['list', 'chain', 'inet', 'nfk', 'c']))![1]);
    const packets = 200_000;
    const sender = spawn('nsenter', [`--net=${sb.netns.path}`, 'python3', '-c', SEND(packets)], { stdio: ['ignore', 'pipe', 'inherit'] });
    let done = false;
    const exited = new Promise<number | null>((resolve) => sender.on('exit', (code) => resolve(code)));
    void exited.then(() => (done = true));
    await new Promise<void>((resolve) => sender.stdout.once('data', () => resolve()));
    const before = count('total');
    let flips = 0;
    // Bounded in count: at most 2,000 flips, and only while the sender runs.
    while (!done && flips < 2000) {
      const desired = states[(flips + 1) % 2];
      const d = diffRulesets(committed, desired);
      assert.ok(d.ruleEdits!.has('c'), `flip ${flips}: an edit, not a rewrite`);
      const res = await commit(sb.socket, diffTransaction(committed, desired, d), { echo: true });
      assert.equal(res.messages, 2, 'one DELRULE and one NEWRULE');
      const after = cloneModel(committed);
      applyDiff(after, desired, d, res.ruleHandles);
      committed = after;
      flips++;
    }
    const during = count('total') - before;
    assert.equal(await exited, 0, 'the sender finished');
    assert.ok(flips >= 2 && during > 0, `${flips} flips while ${during} packets went through the chain`);
    assert.equal(count('total'), packets + 1, 'every packet went through the chain');
    assert.equal(count('leak'), 0, `no packet found the chain with the port-9 rule missing, over ${flips} flips and ${during} packets`);
  });
});
