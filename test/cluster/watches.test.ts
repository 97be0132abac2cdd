/** The agent's watches against the real apiserver and etcd: both killed and restarted under a
 * running agent; the initial state read by WatchList (sendInitialEvents), not LIST; a resume
 * point compacted away (410 Gone, then a new initial state); the ServiceAccount
 * token rotated in its file while the old one is revoked. After each, a write through the API
 * must reach the kernel (`nfkube verify` as the oracle). */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { NODE_NAME, TABLE } from '../e2e/harness';
import { clusterObjects, netpol, type K8sObject } from '../e2e/manifests';
import { createTopology, type Topology } from '../helpers/topology';
import { AgentProcess } from './agent-process';
import { waitFor, type KObject } from './api';
import { ControlPlane } from './control-plane';
import { accountUsername, applyObjects, daemonSetAccount, deployObjects } from './deploy';
import { DesiredObjects } from './desired-objects';
import { joinNode, kernelMatchesApi, type JoinedNode } from './node';

const policy = (name: string): K8sObject => netpol('x', name, { podSelector: { matchLabels: { pod: name } }, policyTypes: ['Ingress'] });

describe('watches against kube-apiserver and etcd under a running agent', () => {
  let cp: ControlPlane;
  let topology: Topology;
  let node: JoinedNode;
  let desired: DesiredObjects;
  let deployed: KObject[];
  let agent: AgentProcess | undefined;
  let base: K8sObject[];

  const verified = (): Promise<boolean> => kernelMatchesApi(node, ['--table', TABLE]);
  const enforced = async (what: string, policies: string[], deadlineMs = 60_000): Promise<void> => {
    await desired.set([...base, ...policies.map(policy)]);
    await waitFor(`the kernel to enforce ${what}`, async () => (await verified()) || undefined, deadlineMs, 250);
  };
  /** The agent's requests of `verb` on `resource` answered 200 since `since` (the audit log is
   * the apiserver's, restarted or not). */
  const requests = (verb: string, resource: string, since: Date): string[] =>
    cp.auditEvents(accountUsername(daemonSetAccount(deployed))).filter((e) => e.verb === verb && e.requestURI.startsWith(`${resource}?`)
      && (e.responseStatus?.code ?? 0) === 200 && new Date(e.requestReceivedTimestamp) >= since).map((e) => e.requestURI);
  const POLICIES = '/apis/networking.k8s.io/v1/networkpolicies';
  const watchLists = (since: Date): string[] => requests('watch', POLICIES, since).filter((uri) => uri.includes('sendInitialEvents=true'));

  before(async () => {
    cp = await ControlPlane.start();
    deployed = deployObjects('kubernetes');
    await applyObjects(cp.admin, deployed);
    topology = createTopology('routed');
    node = await joinNode(cp, deployed, { name: NODE_NAME, netnsPath: topology.nodeNetnsPath });
    desired = new DesiredObjects(cp.admin);
    base = clusterObjects(topology.pods, NODE_NAME);
    await desired.set(base);
  });

  after(async () => {
    await agent?.stop();
    topology?.close();
    await cp?.close();
  });

  test('kube-apiserver killed and restarted, then etcd stopped and restarted: the agent resumes and enforces later writes', async () => {
    const started = new Date();
    agent = AgentProcess.start(node.netnsPath, NODE_NAME, node.agentKubeconfig, ['--table', TABLE]);
    await agent.waitForFirstSync();
    await enforced('policy a', ['a']);
    // WatchList is on by default in 1.36: the initial state came from a watch, not a LIST.
    assert.ok(watchLists(started).length > 0, 'a NetworkPolicy watch with sendInitialEvents');
    assert.deepEqual(requests('list', POLICIES, started), [], 'no NetworkPolicy LIST');
    await cp.killApiserver();
    await cp.startApiserver();
    await enforced('policy b after the apiserver restart', ['a', 'b']);
    await cp.stopEtcd();
    await cp.startEtcd();
    await waitFor('the apiserver to be ready on the restarted etcd', async () => ((await cp.admin.raw('GET', '/readyz')).status === 200) || undefined);
    await enforced('policy c after the etcd restart', ['a', 'b', 'c']);
    assert.ok(agent.running);
  });

  test('history compacted while the agent was paused: after the resume, 410 Gone, a new initial state, and the kernel holds exactly the API\'s state', async () => {
    assert.ok(agent?.running, 'runs after the previous test');
    // The agent makes no request while stopped: every request from now on is its resume.
    const paused = new Date();
    const seen = agent!.lines.length;
    agent!.child.kill('SIGSTOP');
    try {
      await desired.set([...base, policy('b'), policy('c'), policy('d')]);
      await cp.compactEtcd();
      // A fresh watch cache starts at the current revision: the agent's resume point is older.
      await cp.stopApiserver();
      await cp.startApiserver();
    } finally {
      agent!.child.kill('SIGCONT');
    }
    await agent!.waitForLine('the agent to report the NetworkPolicy watch expired (410 Gone)',
      (l) => /^NetworkPolicy (watch expired|WatchList gave no initial state) \(410 Gone\)/.test(String(l.msg)), seen, 120_000);
    await waitFor('the kernel to match the API after the new initial state', async () => (await verified()) || undefined, 120_000, 250);
    const reread = watchLists(paused).length + requests('list', POLICIES, paused).length;
    assert.ok(reread > 0, 'the NetworkPolicy state was read again (WatchList or LIST) after the 410');
  });

  test('the ServiceAccount token rotated in its file while the old one is revoked: the agent keeps working', async () => {
    await agent?.stop();
    const account = daemonSetAccount(deployed);
    // Tokens bound to a pod, as a projected token is: deleting the pod revokes its token.
    const holder = async (name: string): Promise<KObject> => cp.admin.apply({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: account.namespace, name },
      spec: { nodeName: NODE_NAME, serviceAccountName: account.name, containers: [{ name: 'agent', image: 'nfkube' }] } });
    const first = await holder('nfkube-token-1');
    writeFileSync(node.tokenFile, await cp.admin.requestToken(account.namespace, account.name, { boundPod: first, expirationSeconds: 600 }));
    agent = AgentProcess.start(node.netnsPath, NODE_NAME, node.tokenFileKubeconfig, ['--table', TABLE]);
    await agent.waitForFirstSync();
    await enforced('policy e with the first token', ['e']);

    const second = await holder('nfkube-token-2');
    writeFileSync(node.tokenFile, await cp.admin.requestToken(account.namespace, account.name, { boundPod: second, expirationSeconds: 600 }));
    await cp.admin.delete(first, '?gracePeriodSeconds=0');
    // Every watch reconnects, and must authenticate with what the file holds now.
    await cp.stopApiserver();
    await cp.startApiserver();
    await enforced('policy f after the rotation', ['e', 'f'], 180_000);
    const events = cp.auditEvents(accountUsername(account));
    assert.ok(events.some((e) => e.verb === 'watch' && (e.responseStatus?.code ?? 0) === 200), 'the agent watches with the new token');
  });
});
