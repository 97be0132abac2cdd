/** The read-back of the chains an incremental commit wrote runs once no change is pending: a
 * change that arrives before it (here: in the next turn of the event loop) is committed first,
 * and one read-back then covers the chains of both commits. Verification is deferred, not
 * dropped. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { Agent } from '../../src/pipeline/agent';
import { Sandbox, withSandbox } from '../helpers/netns';
import { baseCluster, NODE, policy } from './fixtures';

const silent = pino({ level: 'silent' });

/** Records, in order, each commit (transact) and each read (dumpAll) on the agent's socket. */
function recordCalls(sb: Sandbox): string[] {
  const calls: string[] = [];
  const socket = sb.socket as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const method of ['transact', 'dumpAll']) {
    const original = socket[method].bind(sb.socket);
    socket[method] = (...args: unknown[]) => {
      calls.push(method === 'transact' ? 'commit' : `read ${(args[0] as unknown[]).length}`);
      return original(...args);
    };
  }
  return calls;
}

const webPolicy = (port: number) => policy('x', 'web', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port }] }] });
const clientPolicy = (port: number) => policy('y', 'to-client', { podSelector: { matchLabels: { app: 'client' } }, ingress: [{ ports: [{ port }] }] });

test('a change arriving before the read-back is committed first; one read-back then checks both commits', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    cluster.apply(clientPolicy(53));
    const agent = new Agent({ socket: sb.socket, logger: silent, components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent })] });
    await agent.start(cluster.snapshot());
    cluster.agent = agent;
    const calls = recordCalls(sb);
    cluster.apply(webPolicy(8080));
    await new Promise<void>((resolve) =>
      setImmediate(() => {
        cluster.apply(clientPolicy(54));
        resolve();
      }),
    );
    await agent.idle();
    // Each change rewrites its policy's chain; both chains are read back in one exchange.
    assert.deepEqual(calls, ['commit', 'commit', 'read 2']);
    assert.equal(agent.failing(), undefined);

    // Alone, a change is verified right after its commit, as before.
    calls.length = 0;
    cluster.apply(webPolicy(8081));
    await agent.idle();
    assert.deepEqual(calls, ['commit', 'read 1']);
    await agent.stop();
  });
});
