/** NFKUBE_LATENCY_TRACE: one line of ordered stamps per commit, merged events keep the first
 * event's times, an event that needs no commit leaves nothing, the read-back is stamped on the
 * commit it verifies; without the variable nothing is written. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const MODULE = join(__dirname, '..', '..', 'src', 'observe', 'latency-trace.js');

const SCRIPT = `
const t = require(${JSON.stringify(MODULE)});
// An event that changes nothing: data and parse only.
t.stamp('data'); t.stamp('parsed');
// Two events merged into one commit.
t.stamp('data'); t.stamp('parsed'); t.stamp('offered'); t.stamp('applied');
t.stamp('data'); t.stamp('parsed'); t.stamp('offered'); t.stamp('applied');
for (const s of ['flush', 'diffed', 'send', 'acked', 'committed', 'readback', 'verified']) t.stamp(s);
// An applied change whose diff was empty.
t.stamp('data'); t.stamp('applied'); t.discard();
t.stamp('data'); t.stamp('applied'); t.stamp('committed');
`;

function run(env: NodeJS.ProcessEnv): void {
  execFileSync(process.execPath, ['-e', SCRIPT], { env: { ...process.env, ...env } });
}

test('one line per commit, stamps in path order, merged events keep the first times', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-trace-'));
  try {
    const file = join(dir, 'trace.jsonl');
    run({ NFKUBE_LATENCY_TRACE: file });
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, string>);
    const commits = lines.filter((l) => !('gc' in l));
    assert.equal(commits.length, 2);
    const [first, second] = commits;
    assert.deepEqual(Object.keys(first), ['data', 'parsed', 'offered', 'applied', 'flush', 'diffed', 'send', 'acked', 'committed', 'readback', 'verified']);
    const times = Object.values(first).map(BigInt);
    for (let i = 1; i < times.length; i++) assert.ok(times[i] >= times[i - 1], `stamp ${i} goes back in time`);
    assert.deepEqual(Object.keys(second), ['data', 'applied', 'committed']);
    assert.ok(BigInt(second.data) > BigInt(first.verified), 'the discarded change left its data stamp behind');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('without NFKUBE_LATENCY_TRACE nothing is recorded', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-trace-'));
  try {
    run({ NFKUBE_LATENCY_TRACE: '' });
    assert.equal(existsSync(join(dir, 'trace.jsonl')), false);
    const t = require(MODULE) as typeof import('../../src/observe/latency-trace');
    assert.equal(t.tracing, !!process.env.NFKUBE_LATENCY_TRACE);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
