/** A running agent whose syncs keep failing turns /healthz red within the failing limit, says
 * which table and why, and turns green again after the next successful sync. The kernel is real;
 * the agent's socket refuses every batch with EPERM while `broken` is set. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { NetlinkError } from '../../src/netlink/errors';
import { NetlinkSocket } from '../../src/netlink/socket';
import { startObserveServer } from '../../src/observe/server';
import { Agent } from '../../src/pipeline/agent';
import { withSandbox } from '../helpers/netns';
import { baseCluster, NODE, pod } from './fixtures';

const silent = pino({ level: 'silent' });
const LIMIT_MS = 500;

/** The socket, except that transact refuses every batch while broken() holds. */
function breakable(socket: NetlinkSocket, broken: () => boolean): NetlinkSocket {
  return new Proxy(socket, {
    get(target, key) {
      if (key === 'transact' && broken()) {
        return async () => {
          throw new NetlinkError({ code: 'EPERM', errno: 1, op: 'NFNL_MSG_BATCH_BEGIN', object: 'batch' });
        };
      }
      const v = Reflect.get(target, key, target);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
}

async function until(what: string, check: () => Promise<boolean>, limitMs = 20_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await check())) {
    if (Date.now() > end) assert.fail(`${what}: not within ${limitMs} ms`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('syncs failing for the limit turn /healthz red with the table and the error; a success turns it green', async () => {
  await withSandbox(async (sb) => {
    let broken = false;
    const cluster = baseCluster();
    const agent = new Agent({ socket: breakable(sb.socket, () => broken), logger: silent, components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent })] });
    await agent.start(cluster.snapshot());
    cluster.agent = agent;
    const server = await startObserveServer({
      address: { host: '127.0.0.1', port: 0 },
      metrics: async () => ({ contentType: 'text/plain', body: '' }),
      lastSuccessfulSync: () => Date.now(),
      resyncPeriodMs: 60_000,
      ready: () => true,
      notAlive: () => agent.unhealthy(LIMIT_MS),
    });
    const healthz = async () => {
      const res = await fetch(`http://127.0.0.1:${server.address.port}/healthz`);
      return { status: res.status, body: await res.text() };
    };
    try {
      assert.equal((await healthz()).status, 200);
      broken = true;
      cluster.apply(pod('x', 'd', '198.18.0.9', { app: 'client' }));
      await until('a failed sync is recorded', async () => agent.failing() !== undefined);
      const since = agent.failing()!.since;
      assert.equal((await healthz()).status, 200, 'a failure younger than the limit is not yet unhealthy');
      await until('/healthz red', async () => (await healthz()).status === 503);
      assert.ok(Date.now() - since >= LIMIT_MS);
      assert.match((await healthz()).body, /^not alive: syncs of table inet nfkube failing for \d+\.\ds \(limit 0\.5s\): NFNL_MSG_BATCH_BEGIN batch: EPERM/);
      broken = false;
      await until('/healthz green after the retry succeeds', async () => (await healthz()).status === 200);
      assert.equal(agent.failing(), undefined);
      assert.match(sb.run('nft', ['list', 'table', 'inet', 'nfkube']), /198\.18\.0\.9/, 'the change that failed is committed by the retry');
    } finally {
      await server.close();
      await agent.stop();
    }
  });
});
