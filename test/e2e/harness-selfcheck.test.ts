/** The conformance harness checked against itself, with no agent involved: with no rules every
 * cell is open, and a hand-written ruleset in the node changes exactly the cells it should, on
 * the routed and on the bridged topology. Also that nothing made is left behind. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { bridgeNetfilterUnavailable, type TopologyKind } from '../helpers/topology';
import { NODE } from '../helpers/prober';
import { Harness } from './harness';

const X_A = { v4: '198.18.0.10', v6: '2001:db8::10' };
const Y_B = { v4: '198.18.0.21', v6: '2001:db8::21' };

for (const kind of ['routed', 'bridged'] as TopologyKind[]) {
  const skip = kind === 'bridged' ? bridgeNetfilterUnavailable() : undefined;

  describe(`conformance harness self-check (${kind})`, { skip }, () => {
    let h: Harness;
    before(async () => {
      h = await Harness.open(kind);
    });
    after(async () => {
      const paths = [h.topology.nodeNetnsPath, ...h.topology.pods.map((p) => p.netnsPath)];
      await h.close();
      assert.deepEqual(paths.filter(existsSync), [], 'every namespace of the topology is removed');
    });

    test('with no rules every cell is allowed', async () => {
      const run = await h.probeAndCompare(h.reachability());
      assert.equal(run.comparison.mismatches.length, 0, run.comparison.report);
      assert.equal(run.result.matrix.count(false), 0);
    });

    test('a hand-written forward ruleset blocks exactly its cells', async () => {
      const expected = h.reachability();
      // TCP 80 to x/a over IPv4 and UDP 81 from y/b over IPv6; node traffic is not forwarded.
      expected.ingress.isolate('x/a', { protocol: 'tcp', ports: [80], family: 4 });
      expected.egress.isolate('y/b', { protocol: 'udp', ports: [81], family: 6 });
      const run = await h.runCase(expected, () => h.nft([
        'table inet nfk_selfcheck {',
        '  chain forward {',
        '    type filter hook forward priority 0; policy accept;',
        `    ip daddr ${X_A.v4} tcp dport 80 drop`,
        `    ip6 saddr ${Y_B.v6} udp dport 81 drop`,
        '  }',
        '}',
      ].join('\n')));
      assert.equal(run.comparison.mismatches.length, 0, run.comparison.report);
      // 8 other pods to x/a, and y/b to 8 other pods: the two blocked groups.
      assert.equal(run.result.matrix.count(false), 16);
    });

    test('a stateful ruleset lets replies back into an isolated pod', async () => {
      const expected = h.reachability();
      expected.ingress.isolate('x/a');
      const run = await h.runCase(expected, () => h.nft([
        'table inet nfk_selfcheck {',
        '  chain forward {',
        '    type filter hook forward priority 0; policy accept;',
        '    ct state established,related accept',
        `    ip daddr ${X_A.v4} drop`,
        `    ip6 daddr ${X_A.v6} drop`,
        '  }',
        '}',
      ].join('\n')));
      assert.equal(run.comparison.mismatches.length, 0, run.comparison.report);
      assert.equal(run.result.matrix.get({ from: NODE, to: 'x/a', protocol: 'tcp', port: 80, family: 4 }), true);
    });

    test('the diff names the cells that differ', async () => {
      const expected = h.reachability();
      expected.ingress.isolate('z/c', { protocol: 'udp', ports: [80] });
      const run = await h.probeAndCompare(expected);
      assert.equal(run.comparison.mismatches.length, 16);
      assert.match(run.comparison.report, /udp\/80 IPv4 \(rows: from, columns: to\)/);
      assert.match(run.comparison.report, /x\/a -> z\/c udp\/80 IPv6: expected blocked, got allowed \(reply "z\/c"\)/);
    });
  });
}
