/** The start-up coexistence check: other base chains on nfkube's hooks (forward, input) that can
 * override it are found and logged, read-only. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { findOverridingChains, logCoexistence } from '../../src/policy/coexist';
import { getGeneration } from '../../src/nft/generation';
import { withSandbox } from '../helpers/netns';
import { baseCluster, foreignState, nfkube, NODE } from './harness';
import { recordingLogger } from '../helpers/recording-logger';

const FOREIGN = `
add table ip late_drop
add chain ip late_drop c_fwd { type filter hook forward priority 10; policy drop; }
add table inet early
add chain inet early c_in { type filter hook input priority -10; policy accept; }
add table ip6 tied
add chain ip6 tied c_fwd { type filter hook forward priority 0; policy accept; }
add table inet harmless
add chain inet harmless c_fwd { type filter hook forward priority 100; policy accept; }
add chain inet harmless helper
add table ip other_hook
add chain ip other_hook c_out { type filter hook output priority -300; policy drop; }
add table bridge br
add chain bridge br c_fwd { type filter hook forward priority -200; policy drop; }
add table arp arpfw
add chain arp arpfw c_in { type filter hook input priority 0; policy drop; }
add table netdev edge
add chain netdev edge ing { type filter hook ingress device "lo" priority -500; policy drop; }
`;

test('foreign base chains that can override nfkube are found with the reason, and nothing is written', async () => {
  await withSandbox(async (sb) => {
    sb.run('nft', ['-f', '-'], FOREIGN);
    // iptables-nft: kube-proxy-style filter table with a drop policy on FORWARD.
    sb.run('iptables', ['-P', 'FORWARD', 'DROP']);
    // nfkube's own chains are never reported.
    sb.run('nft', ['add table inet nfkube; add chain inet nfkube forward_egress { type filter hook forward priority -50; policy drop; }']);
    const gen = await getGeneration(sb.socket);
    const state = foreignState(sb);

    const { logger, lines } = recordingLogger();
    const found = await logCoexistence(sb.socket, 'nfkube', logger);
    const summary = found.map((f) => `${f.family} ${f.table} ${f.chain} ${f.hook} ${f.priority} ${f.policy}: ${f.reasons.join(' | ')}`).sort();
    assert.deepEqual(summary, [
      'inet early c_in input -10 accept: priority -10 runs before input_egress: a drop, reject or queue there ends the packet before nfkube decides',
      'ip filter FORWARD forward 0 drop: policy drop: packets its rules do not accept are dropped even when nfkube accepts them | priority 0 runs before forward_ingress: a drop, reject or queue there ends the packet before nfkube decides | priority 0 equals forward_egress: the kernel runs equal priorities in registration order, so it may run first',
      'ip late_drop c_fwd forward 10 drop: policy drop: packets its rules do not accept are dropped even when nfkube accepts them',
      'ip6 tied c_fwd forward 0 accept: priority 0 runs before forward_ingress: a drop, reject or queue there ends the packet before nfkube decides | priority 0 equals forward_egress: the kernel runs equal priorities in registration order, so it may run first',
    ]);
    // iptables-nft created only the built-in chain it was given a policy for.
    assert.equal(found.filter((f) => f.table === 'filter').map((f) => f.chain).sort().join(','), 'FORWARD');

    assert.equal(lines.length, found.length);
    for (const f of found) {
      const line = lines.find((l) => l.chain === f.chain && l.table === `${f.family} ${f.table}`);
      assert.ok(line, `logged ${f.table} ${f.chain}`);
      assert.equal(line.level, 40, 'warn');
      assert.equal(line.hook, f.hook);
      assert.equal(line.priority, f.priority);
      assert.match(line.msg, new RegExp(`^base chain ${f.family} ${f.table} ${f.chain} \\(hook ${f.hook} priority ${f.priority} policy ${f.policy}\\) can override nfkube: `));
    }
    assert.equal(await getGeneration(sb.socket), gen, 'read-only: the ruleset generation did not move');
    assert.deepEqual(foreignState(sb), state);
  });
});

test('an iptables-nft INPUT chain at the filter priority is reported as possibly running first', async () => {
  await withSandbox(async (sb) => {
    sb.run('iptables', ['-A', 'INPUT', '-s', '198.18.5.5', '-j', 'DROP']);
    const found = await findOverridingChains(sb.socket, 'nfkube');
    assert.deepEqual(
      found.map((f) => [f.table, f.chain, f.hook, f.priority, f.reasons.length]),
      [['filter', 'INPUT', 'input', 0, 1]],
    );
    assert.match(found[0].reasons[0], /^priority 0 equals input_egress/);
  });
});

test('`nfkube agent --once` logs the check at start-up and leaves foreign state alone', async () => {
  await withSandbox(async (sb) => {
    sb.run('nft', ['add table ip late_drop; add chain ip late_drop c_fwd { type filter hook forward priority 10; policy drop; }']);
    const before = foreignState(sb);
    const dir = baseCluster().writeManifests();
    const r = nfkube(sb, ['agent', '--once', '--manifests', dir, '--node-name', NODE]);
    assert.equal(r.status, 0, r.stderr);
    const warnings = r.stderr.split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((l) => l.level === 'warn');
    assert.deepEqual(
      warnings.map((w) => w.msg),
      ['base chain ip late_drop c_fwd (hook forward priority 10 policy drop) can override nfkube: policy drop: packets its rules do not accept are dropped even when nfkube accepts them'],
    );
    assert.deepEqual(foreignState(sb), before);
    assert.match(sb.run('nft', ['list', 'tables']), /table inet nfkube/);
  });
});
