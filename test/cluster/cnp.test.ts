/** ClusterNetworkPolicy against the real kube-apiserver: the agent starts where the CRD is not
 * installed yet (it enforces NetworkPolicy and waits for the kind), the shipped overlay installs
 * the CRD by strict server-side apply, the README's two example policies are accepted by it, and
 * the running agent enforces them as `nfkube verify` computes from the API; the shipped RBAC
 * allowed every request, and the agent watched ClusterNetworkPolicies and Nodes. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { NODE_NAME, TABLE } from '../e2e/harness';
import { clusterObjects } from '../e2e/manifests';
import { renderKustomization } from '../helpers/kustomize-render';
import { createTopology, type Topology } from '../helpers/topology';
import { AgentProcess } from './agent-process';
import { waitFor, type KObject } from './api';
import { ControlPlane, REPO_ROOT } from './control-plane';
import { accountUsername, applyObjects, daemonSetAccount, deployObjects } from './deploy';
import { DesiredObjects } from './desired-objects';
import { joinNode, kernelMatchesApi, type JoinedNode } from './node';

/** The README's ClusterNetworkPolicy example, as written there. */
function readmeExamples(): KObject[] {
  const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8');
  const block = /```yaml\n(apiVersion: policy\.networking\.k8s\.io\/v1alpha2[\s\S]*?)```/.exec(readme)?.[1];
  assert.ok(block, 'README has a ClusterNetworkPolicy example');
  return parseAllDocuments(block).map((d) => d.toJS() as KObject);
}

describe('ClusterNetworkPolicy against kube-apiserver (CRD installed under a running agent)', () => {
  let cp: ControlPlane;
  let topology: Topology;
  let node: JoinedNode;
  let deployed: KObject[];
  let agent: AgentProcess | undefined;

  before(async () => {
    cp = await ControlPlane.start();
    deployed = deployObjects('kubernetes');
    await applyObjects(cp.admin, deployed);
    topology = createTopology('routed');
    node = await joinNode(cp, deployed, { name: NODE_NAME, netnsPath: topology.nodeNetnsPath });
    await new DesiredObjects(cp.admin).set(clusterObjects(topology.pods, NODE_NAME));
  });

  after(async () => {
    await agent?.stop();
    topology?.close();
    await cp?.close();
  });

  test('without the CRD the agent enforces NetworkPolicy; once the overlay installs it, the README example is enforced', async () => {
    agent = AgentProcess.start(node.netnsPath, node.name, node.agentKubeconfig, ['--table', TABLE]);
    await agent.waitForFirstSync();
    assert.ok(await kernelMatchesApi(node, ['--table', TABLE]), 'NetworkPolicy state enforced without the CRD');
    assert.ok(agent.lines.some((l) => /ClusterNetworkPolicy/.test(String(l.msg)) && /not served/i.test(String(l.msg))), 'the agent says the kind is not served');

    const overlay = renderKustomization(join(REPO_ROOT, 'deploy', 'overlays', 'cluster-network-policy'));
    assert.deepEqual(overlay.filter((o) => o.kind === 'CustomResourceDefinition').map((o) => o.metadata.name), ['clusternetworkpolicies.policy.networking.k8s.io']);
    await applyObjects(cp.admin, overlay);
    const warnings = await applyObjects(cp.admin, readmeExamples());
    assert.deepEqual(warnings, [], 'the README example is valid under the strict schema');

    // The agent asks for the kind again every 30 s: then the tiers appear, as verify computes them.
    const ruleset = () => execFileSync('nsenter', [`--net=${node.netnsPath}`, 'nft', 'list', 'table', 'inet', TABLE], { encoding: 'utf8' });
    await waitFor('the tiers in the kernel, as the API says', async () => (/chain cnp_admin_out /.test(ruleset()) && (await kernelMatchesApi(node, ['--table', TABLE])) ? true : undefined), 90_000, 500);
    const text = ruleset();
    assert.match(text, /chain cnp_baseline_in /);
    assert.match(text, /169\.254\.169\.254/, 'the metadata-address deny is in the kernel');
  });

  test('every request of the agent was allowed by the shipped ClusterRole, and it watched ClusterNetworkPolicies and Nodes', () => {
    const user = accountUsername(daemonSetAccount(deployed));
    assert.deepEqual(cp.refusedRequests(user), []);
    const events = cp.auditEvents(user);
    for (const resource of ['/apis/policy.networking.k8s.io/v1alpha2/clusternetworkpolicies', '/api/v1/nodes']) {
      assert.ok(events.some((e) => e.verb === 'watch' && e.requestURI.startsWith(`${resource}?`) && (e.responseStatus?.code ?? 0) === 200), `watch ${resource}`);
    }
    assert.deepEqual(agent!.problems().filter((m) => /forbidden|unauthorized|401|403/i.test(m)), []);
  });
});
