/** Pod churn for the long-running tests: every event changes nfkube's table (a local pod joining
 * or leaving the egress-isolated namespace y, or a peer pod of x/web coming and going). */
import assert from 'node:assert/strict';
import { Agent } from '../../src/pipeline/agent';
import { Cluster, pod } from './harness';

const SLOTS = 40;

/** Applies one churn event; events with the same n toggle the same pod. */
export function churnEvent(cluster: Cluster, n: number): void {
  const slot = n % SLOTS;
  const local = slot % 3 !== 0;
  const ns = local ? 'y' : 'x';
  const name = `churn-${slot}`;
  if (cluster.raw.has(`Pod ${ns}/${name}`)) {
    cluster.remove('Pod', `${ns}/${name}`);
    return;
  }
  const opts = local ? { ip6: `2001:db8::2:${slot.toString(16)}` } : { node: 'node-2' };
  cluster.apply(pod(ns, name, `198.18.2.${slot + 10}`, { app: 'client' }, opts));
}

/** Drives events one at a time, each awaited, until the agent has committed `syncs` times. */
export async function churnSyncs(cluster: Cluster, agent: Agent, syncs: number, first = 0): Promise<number> {
  const start = agent.totals.commits;
  let n = first;
  while (agent.totals.commits - start < syncs) {
    assert.ok(n - first < syncs * 2, `only ${agent.totals.commits - start} commits after ${n - first} events`);
    churnEvent(cluster, n++);
    await agent.idle();
  }
  return n;
}
