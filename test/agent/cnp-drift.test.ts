/** The tiers' chains and sets are covered by the read-back like the rest of the table: drift in a
 * ClusterNetworkPolicy chain or subject set is found at resync and repaired, and the kernel then
 * equals a from-scratch render of the cluster (NetworkPolicy and tiers). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { Agent } from '../../src/pipeline/agent';
import { Renderer } from '../../src/policy/render/render';
import { listTable } from '../../src/nft/readback';
import { compileFull } from '../../src/policy/engine/compile';
import { fullPolicyTable } from '../../src/policy/cluster/tiers';
import { diffRulesets, isEmptyDiff } from '../../src/ruleset/diff';
import { modelFromKernel } from '../../src/ruleset/model';
import { normalizers } from '../../src/k8s/normalizers';
import type { ClusterNetworkPolicyInfo } from '../../src/k8s/cluster-policy-model';
import type { ClusterSnapshot } from '../../src/k8s/source';
import { Sandbox, withSandbox } from '../helpers/netns';
import { baseCluster, NODE } from './fixtures';

const silent = pino({ level: 'silent' });

const GUARD = normalizers.ClusterNetworkPolicy({
  metadata: { name: 'guard' },
  spec: {
    tier: 'Admin',
    priority: 1,
    subject: { namespaces: { matchLabels: { ns: 'x' } } },
    egress: [{ name: 'no-imds', action: 'Deny', to: [{ networks: ['169.254.169.254/32'] }] }, { action: 'Pass', to: [{ namespaces: {} }] }],
  },
}) as ClusterNetworkPolicyInfo;

async function assertEnforced(sb: Sandbox, snap: ClusterSnapshot): Promise<void> {
  const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, NODE);
  const { model } = fullPolicyTable(new Renderer({ table: 'nfkube', denyAction: 'drop' }), ir, snap, silent);
  const back = await listTable(sb.socket, 'inet', 'nfkube');
  assert.ok(back, 'table exists');
  const d = diffRulesets(modelFromKernel(back), model);
  assert.ok(isEmptyDiff(d), `kernel differs from desired: ${JSON.stringify(d, (_k, v) => (v instanceof Map ? [...v.keys()] : v))}`);
}

test('drift in a ClusterNetworkPolicy chain and subject set is found by read-back and repaired', async () => {
  await withSandbox(async (sb) => {
    const snap: ClusterSnapshot = { ...baseCluster().snapshot(), nodes: new Map(), clusterPolicies: new Map([['guard', GUARD]]) };
    const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent });
    const agent = new Agent({ socket: sb.socket, logger: silent, components: [component] });
    await agent.start(snap);
    await assertEnforced(sb, snap);
    assert.equal((await agent.resync()).drift, '');

    const chain = [...component.desired.chains.keys()].find((n) => /^cnp_c[0-9a-f]{12}_out$/.test(n))!;
    const subject = [...component.desired.sets.keys()].find((n) => n.endsWith('_subj_v4'))!;
    assert.match(sb.run('nft', ['list', 'chain', 'inet', 'nfkube', chain]), /clusternetworkpolicy\/guard egress\[0\]/);
    sb.run('nft', ['flush', 'chain', 'inet', 'nfkube', chain]);
    sb.run('nft', ['flush', 'set', 'inet', 'nfkube', subject]);
    const handle = /jump cnp_admin_out # handle (\d+)/.exec(sb.run('nft', ['-a', 'list', 'chain', 'inet', 'nfkube', 'forward_egress']))![1];
    sb.run('nft', ['delete', 'rule', 'inet', 'nfkube', 'forward_egress', 'handle', handle]);
    const repaired = await agent.resync();
    assert.match(repaired.drift ?? '', new RegExp(`~ chain ${chain}`));
    assert.match(repaired.drift ?? '', new RegExp(`\\+ element ${subject}`));
    assert.match(repaired.drift ?? '', /~ chain forward_egress/);
    await assertEnforced(sb, snap);
    assert.equal((await agent.resync()).drift, '');
    await agent.stop();
  });
});
