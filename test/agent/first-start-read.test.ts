/** A first start (no table yet) reads the table list once, at one generation, on the calling
 * thread, and then commits: nothing else is read before the commit. A start over an existing
 * table still reads it whole. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { Agent } from '../../src/pipeline/agent';
import { Sandbox, withSandbox } from '../helpers/netns';
import { baseCluster, NODE } from './fixtures';

const silent = pino({ level: 'silent' });

/** Records, in order, each exchange on the socket: `transact`, `dump`, `dumpAll N`. */
function recordCalls(sb: Sandbox): string[] {
  const calls: string[] = [];
  const socket = sb.socket as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const method of ['transact', 'dump', 'dumpAll']) {
    const original = socket[method].bind(sb.socket);
    socket[method] = (...args: unknown[]) => {
      calls.push(method === 'dumpAll' ? `dumpAll ${(args[0] as unknown[]).length}` : method);
      return original(...args);
    };
  }
  return calls;
}

const agentOn = (sb: Sandbox) => new Agent({ socket: sb.socket, logger: silent, components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent })] });

test('a first start reads the table list at one generation, then commits', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const calls = recordCalls(sb);
    const agent = agentOn(sb);
    try {
      const r = await agent.start(cluster.snapshot());
      assert.ok(r.messages > 0);
      // Generation, table list, generation, the commit.
      assert.deepEqual(calls, ['transact', 'dumpAll 1', 'transact', 'transact']);
    } finally {
      await agent.stop();
    }
    // A restart over the table it left reads the table whole and writes nothing.
    calls.length = 0;
    const again = agentOn(sb);
    try {
      const r = await again.start(cluster.snapshot());
      assert.equal(r.messages, 0);
      assert.ok(calls.filter((c) => c === 'dump' || c.startsWith('dumpAll')).length > 2, calls.join(', '));
    } finally {
      await again.stop();
    }
  });
});
