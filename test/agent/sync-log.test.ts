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
