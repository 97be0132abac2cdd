/** Runs conformance cases on one shared topology: a node:test suite per topology kind. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import type { TopologyKind } from '../helpers/topology';
import { RESTART_SEQUENCE, type PolicyCase } from './cases';
import { agentUnavailable, Harness, TABLE } from './harness';

export function conformanceSuite(title: string, kind: TopologyKind, cases: PolicyCase[], skip?: string): void {
  describe(title, { skip: skip ?? agentUnavailable() }, () => {
    let h: Harness;
    before(async () => {
      h = await Harness.open(kind);
    });
    after(async () => {
      await h?.close();
    });

    for (const c of cases) {
      test(c.name, async (t) => {
        const expected = h.reachability();
        c.expect(expected);
        h.writeCase(c.policies, typeof c.tweaks === 'function' ? c.tweaks(h.topology) : c.tweaks);
        try {
          await h.runAgent(c.agentArgs);
          assert.deepEqual(await h.tables(), [`inet ${TABLE}`], 'the agent programs its own table and nothing else');
          const run = await h.probeAndCompare(expected);
          if (run.reprobedCells > 0) t.diagnostic(`${run.reprobedCells} expected-open cells were probed again`);
          assert.equal(run.comparison.mismatches.length, 0, `${c.name} (${kind}):\n${run.comparison.report}`);
          await c.check?.(run, (cells) => h.reprobe(run.result, cells));
          await h.nfkube(['cleanup', '--table', TABLE]);
          assert.deepEqual(await h.tables(), [], '`nfkube cleanup` removes the table');
        } finally {
          await h.resetTables();
        }
      });
    }

    test('a second agent run over changed manifests replaces what the first one enforced', async () => {
      try {
        for (const c of RESTART_SEQUENCE) {
          const expected = h.reachability();
          c.expect(expected);
          h.writeCase(c.policies);
          await h.runAgent();
          const run = await h.probeAndCompare(expected);
          assert.equal(run.comparison.mismatches.length, 0, `after "${c.name}" (${kind}):\n${run.comparison.report}`);
        }
        assert.deepEqual(await h.tables(), [`inet ${TABLE}`]);
      } finally {
        await h.resetTables();
      }
    });
  });
}
