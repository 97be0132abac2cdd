/** An incremental sync's log line says which objects it committed: the count and the first few
 * by kind and name at info, every one of them at debug. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { withSandbox } from '../helpers/netns';
import { recordingLogger } from '../helpers/recording-logger';
import { baseCluster, pod } from './fixtures';
import { startAgent } from '../truth/harness';

for (const level of ['info', 'debug'] as const) {
  test(`incremental sync lines name the changed objects (${level})`, async () => {
    await withSandbox(async (sb) => {
      const cluster = baseCluster();
      const { logger, lines } = recordingLogger(level);
      const agent = await startAgent(sb, cluster, logger);
      try {
        // Eight pods joining one selector while nothing is committing: one coalesced commit or a few.
        for (let i = 0; i < 8; i++) cluster.apply(pod('x', `n${i}`, `198.18.1.${i + 10}`, { app: 'client' }));
        await agent.idle();
        const syncs = lines.filter((l) => l.msg === 'sync committed' && l.kind === 'incremental');
        assert.ok(syncs.length >= 1);
        const named = syncs.flatMap((l) => l.objects as string[]);
        assert.equal(syncs.reduce((n, l) => n + (l.events as number), 0), 8, 'every event counted');
        for (const l of syncs) assert.ok((l.objects as string[]).length <= (level === 'info' ? 5 : 8));
        if (level === 'debug') assert.deepEqual(named.sort(), Array.from({ length: 8 }, (_, i) => `Pod x/n${i}`).sort());
        else for (const o of named) assert.match(o, /^Pod x\/n\d$/);
      } finally {
        await agent.stop();
      }
    });
  });
}

test('a full sync reports where its time went, stage by stage, in its report and its log line', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const { logger, lines } = recordingLogger('info');
    const agent = await startAgent(sb, cluster, logger);
    try {
      const full = lines.find((l) => l.msg === 'sync committed' && l.kind === 'full');
      assert.ok(full, 'the first full sync logs its commit');
      const stages = full.stages as Record<string, number>;
      assert.deepEqual(Object.keys(stages), ['engine', 'render', 'read', 'plan', 'check', 'encode', 'kernel'], 'in the order they run');
      for (const [k, v] of Object.entries(stages)) assert.ok(Number.isFinite(v) && v >= 0, `${k}: ${v}`);
      assert.ok(stages.kernel > 0, 'the commit reached the kernel');
      const sum = Object.values(stages).reduce((a, b) => a + b, 0);
      // The stages are parts of the sync (the load runs before the report's own clock starts).
      assert.ok(sum - stages.engine - stages.render <= (full.durationMs as number) + 0.1, `${sum} within ${full.durationMs as number} ms`);

      // A resync carries its own stages, without the load; an unchanged table writes nothing.
      const resync = await agent.resync();
      assert.equal(resync.messages, 0);
      assert.deepEqual(Object.keys(resync.stages ?? {}), ['read', 'plan', 'check', 'encode', 'kernel']);
      assert.ok(resync.stages!.read > 0, 'the table was read back');
      assert.equal(resync.stages!.kernel, 0, 'nothing committed');

      // Incremental syncs have no stages: their log line stays as it was.
      cluster.apply(pod('x', 'late', '198.18.1.99', { app: 'client' }));
      await agent.idle();
      const inc = lines.find((l) => l.msg === 'sync committed' && l.kind === 'incremental');
      assert.ok(inc);
      assert.equal(inc.stages, undefined);
    } finally {
      await agent.stop();
    }
  });
});
