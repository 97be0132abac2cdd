/** The agent edits long chains in place: a ClusterNetworkPolicy priority change moves the policy's
 * jump and Pass rules within its tier's entry chain, and one rule of a long NetworkPolicy is
 * replaced, each in a few kernel messages (a rewrite sent the whole chain), with the table read
 * back equal to the desired one after every change. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Agent } from '../../src/pipeline/agent';
import { PolicyComponent } from '../../src/policy/component';
import type { ClusterChange } from '../../src/k8s/source';
import { normalizeClusterNetworkPolicy } from '../../src/k8s/normalize-cluster-policy';
import { normalizeNetworkPolicy } from '../../src/k8s/normalize';
import { listTable } from '../../src/nft/readback';
import { diffRulesets, formatDiff, isEmptyDiff } from '../../src/ruleset/diff';
import { modelFromKernel } from '../../src/ruleset/model';
import { withSandbox } from '../helpers/netns';
import { baseCluster, NODE, policy } from './fixtures';

const ADMIN = 40;

function cnp(i: number, priority: number) {
  const rules: object[] = [{ action: 'Deny', from: [{ namespaces: {} }], protocols: [{ tcp: { destinationPort: { number: 1000 + i } } }] }];
  // A Pass rule is copied into the entry chain after the policy's jump.
  if (i % 4 === 0) rules.unshift({ action: 'Pass', from: [{ namespaces: {} }], protocols: [{ tcp: { destinationPort: { number: 3000 + i } } }] });
  return normalizeClusterNetworkPolicy({ apiVersion: 'policy.networking.k8s.io/v1alpha2', kind: 'ClusterNetworkPolicy', metadata: { name: `admin-${i}` }, spec: { tier: 'Admin', priority, subject: { namespaces: {} }, ingress: rules } });
}

/** A NetworkPolicy of `rules` ingress rules; rule 30's port is `edited`. */
function longPolicy(rules: number, edited: number) {
  const ingress = Array.from({ length: rules }, (_, i) => ({ from: [{ ipBlock: { cidr: `198.18.9.${i}/32` } }], ports: [{ protocol: 'TCP', port: i === 30 ? 20000 + edited : 1000 + i }] }));
  return normalizeNetworkPolicy(policy('x', 'long', { podSelector: {}, policyTypes: ['Ingress'], ingress }));
}

test('a priority change and a rule edit in long chains cost a few messages, and the table reads back as desired', async () => {
  await withSandbox(async (sb) => {
    const silent = pino({ level: 'silent' });
    const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent });
    const agent = new Agent({ socket: sb.socket, logger: silent, components: [component] });
    const snapshot = baseCluster().snapshot();
    const cnps = Array.from({ length: ADMIN }, (_, i) => cnp(i, i * 10));
    await agent.start({ ...snapshot, nodes: new Map(), clusterPolicies: new Map(cnps.map((c) => [c.name, c])) });
    const matches = async (what: string) => {
      const kernel = modelFromKernel((await listTable(sb.socket, 'inet', 'nfkube'))!);
      const d = diffRulesets(kernel, component.desired);
      assert.ok(isEmptyDiff(d), `${what}: ${formatDiff(kernel, component.desired, d)}`);
    };
    const change = async (c: ClusterChange) => {
      const before = agent.totals.messages;
      agent.onChange(c);
      await agent.idle();
      return agent.totals.messages - before;
    };
    const entry = [...component.desired.chains.values()].reduce((a, c) => (c.rules.length > a.rules.length ? c : a));
    assert.ok(entry.rules.length >= ADMIN, `the tier's entry chain holds ${entry.rules.length} rules`);
    for (const [k, i] of [0, 4, 13, 20, 39].entries()) {
      const moved = cnp(i, k % 2 ? 1 : 1000);
      const messages = await change({ kind: 'ClusterNetworkPolicy', type: 'upsert', key: moved.name, object: moved } as ClusterChange);
      assert.ok(messages > 0 && messages <= 8, `moving admin-${i}: ${messages} messages (a rewrite of the entry chain is ${entry.rules.length + 1})`);
      await matches(`after moving admin-${i}`);
    }
    const long = longPolicy(60, 0);
    await change({ kind: 'NetworkPolicy', type: 'upsert', key: 'x/long', object: long } as ClusterChange);
    for (let k = 1; k <= 3; k++) {
      const messages = await change({ kind: 'NetworkPolicy', type: 'upsert', key: 'x/long', object: longPolicy(60, k) } as ClusterChange);
      assert.equal(messages, 2, `edit ${k} of one rule of 60: one DELRULE and one NEWRULE`);
      await matches(`after edit ${k}`);
    }
    await agent.stop();
  });
});
