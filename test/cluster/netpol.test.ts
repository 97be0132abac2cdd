/** NetworkPolicy conformance through the real API: the e2e cases (test/e2e/cases.ts) written to
 * kube-apiserver case after case (policies, pods and namespace labels created, updated and
 * deleted), enforced by one running `nfkube agent` in the node's namespace as the DaemonSet's
 * ServiceAccount, and checked with real packets. The shipped RBAC must allow every request the
 * agent makes: the apiserver's audit log is read for refusals. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { CASES, type PolicyCase } from '../e2e/cases';
import { Harness, NODE_NAME, TABLE } from '../e2e/harness';
import { clusterObjects } from '../e2e/manifests';
import { AgentProcess } from './agent-process';
import { waitFor, type KObject } from './api';
import { ControlPlane } from './control-plane';
import { accountUsername, applyObjects, daemonSetAccount, deployObjects } from './deploy';
import { DesiredObjects } from './desired-objects';
import { joinNode, kernelMatchesApi, type JoinedNode } from './node';

describe('NetworkPolicy conformance against kube-apiserver (routed pods, one running agent)', () => {
  let cp: ControlPlane;
  let h: Harness;
  let node: JoinedNode;
  let agent: AgentProcess | undefined;
  let agentArgs: string[] = [];
  let desired: DesiredObjects;
  let deployed: KObject[];
  const convergence: number[] = [];

  before(async () => {
    cp = await ControlPlane.start();
    deployed = deployObjects('kubernetes');
    await applyObjects(cp.admin, deployed);
    h = await Harness.open('routed');
    node = await joinNode(cp, deployed, { name: NODE_NAME, netnsPath: h.topology.nodeNetnsPath });
    await cp.admin.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: 'nfk-node-2', labels: { 'kubernetes.io/os': 'linux' } } });
    desired = new DesiredObjects(cp.admin);
  });

  after(async () => {
    await agent?.stop();
    await h?.close();
    await cp?.close();
    if (convergence.length) {
      const sorted = [...convergence].sort((a, b) => a - b);
      process.stdout.write(`# API write -> verified in the kernel, per case: p50 ${sorted[Math.floor(sorted.length / 2)]} ms, max ${sorted[sorted.length - 1]} ms (${sorted.length} cases)\n`);
    }
  });

  async function ensureAgent(args: string[]): Promise<void> {
    if (agent && JSON.stringify(args) === JSON.stringify(agentArgs)) return;
    await agent?.stop();
    agentArgs = args;
    agent = AgentProcess.start(node.netnsPath, node.name, node.agentKubeconfig, ['--table', TABLE, ...args]);
    await agent.waitForFirstSync();
  }

  async function runCase(c: PolicyCase): Promise<number> {
    const tweaks = typeof c.tweaks === 'function' ? c.tweaks(h.topology) : c.tweaks;
    await ensureAgent(c.agentArgs ?? []);
    const written = Date.now();
    await desired.set([...clusterObjects(h.topology.pods, NODE_NAME, tweaks), ...c.policies]);
    const wroteAll = Date.now();
    await waitFor(`the kernel to match the API after "${c.name}"`, async () => (await kernelMatchesApi(node, ['--table', TABLE, ...agentArgs])) || undefined, 60_000, 200);
    // The agent's last commit after the writes: its own timestamp, not the poll's.
    const commits = agent!.lines.filter((l) => l.msg === 'sync committed' && l.time >= written);
    return commits.length ? Math.max(0, commits[commits.length - 1].time - wroteAll) : 0;
  }

  for (const c of CASES) {
    test(c.name, async (t) => {
      const expected = h.reachability();
      c.expect(expected);
      const ms = await runCase(c);
      convergence.push(ms);
      t.diagnostic(`converged ${ms} ms after the last write`);
      assert.deepEqual(await h.tables(), [`inet ${TABLE}`], 'the agent programs its own table and nothing else');
      const run = await h.probeAndCompare(expected);
      assert.equal(run.comparison.mismatches.length, 0, `${c.name}:\n${run.comparison.report}`);
      await c.check?.(run, (cells) => h.reprobe(run.result, cells));
    });
  }

  test('every request of the agent was allowed by the shipped ClusterRole, and it read (WatchList) and watched what it needs', () => {
    const events = cp.auditEvents(accountUsername(daemonSetAccount(deployed)));
    assert.deepEqual(cp.refusedRequests(accountUsername(daemonSetAccount(deployed))), []);
    for (const resource of ['/api/v1/pods', '/api/v1/namespaces', '/apis/networking.k8s.io/v1/networkpolicies']) {
      // The initial state comes from a WatchList (this apiserver has the gate on), not a LIST.
      assert.ok(events.some((e) => e.verb === 'watch' && e.requestURI.startsWith(`${resource}?`) && e.requestURI.includes('sendInitialEvents=true')), `WatchList of ${resource}`);
      assert.ok(events.some((e) => e.verb === 'watch' && e.requestURI.startsWith(`${resource}?`) && e.requestURI.includes('allowWatchBookmarks=true')), `watch ${resource} with bookmarks`);
    }
    assert.deepEqual(agent!.problems().filter((m) => /forbidden|unauthorized|401|403/i.test(m)), []);
  });
});
