/** Objects that used to block every sync or drift forever (issue 11, defects 2 and 9), against a
 * real kernel in a sandbox: a policy named with 150 CJK characters (a comment over the kernel's
 * limit once counted in bytes), names with NUL and 4-byte UTF-8 (the kernel cuts a comment at
 * NUL), and a policy that fails closed, counted by the metrics. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { Agent } from '../../src/pipeline/agent';
import { PolicyComponent } from '../../src/policy/component';
import { LABEL_MAX_BYTES } from '../../src/policy/render/labels';
import { metricsObserver, policyCounterReader } from '../../src/policy/metrics-bridge';
import { normalizers } from '../../src/k8s/normalizers';
import { listTable } from '../../src/nft/readback';
import { ipv4 } from '../../src/net/ip-bytes';
import { AgentMetrics } from '../../src/observe/metrics';
import { diffRulesets, isEmptyDiff } from '../../src/ruleset/diff';
import { modelFromKernel, RulesetModel } from '../../src/ruleset/model';
import { withSandbox } from '../helpers/netns';
import { Cluster, namespace, NODE, pod, policy } from './fixtures';

const silent = pino({ level: 'silent' });

function isolated(m: RulesetModel, dir: 'ingress' | 'egress', ip: string): boolean {
  return [...(m.sets.get(`${dir}_v4`)?.elements.values() ?? [])].some((e) => e.key.equals(ipv4(ip)));
}

test('a policy named with 150 CJK characters blocks nothing: later pods under valid policies are isolated', async () => {
  await withSandbox(async (sb) => {
    const cluster = new Cluster();
    cluster.apply(namespace('x'));
    cluster.apply(pod('x', 'a', '198.18.0.2', { app: 'cjk' }));
    cluster.apply(policy('x', '日'.repeat(150), { podSelector: { matchLabels: { app: 'cjk' } }, ingress: [{ from: [{ podSelector: {} }] }] }));
    cluster.apply(policy('x', 'web', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }] }] }));
    const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent });
    const agent = new Agent({ socket: sb.socket, logger: silent, components: [component] });
    try {
      await agent.start(cluster.snapshot());
      cluster.agent = agent;
      cluster.apply(pod('x', 'b', '198.18.0.3', { app: 'web' }));
      await agent.idle();
      const kernel = modelFromKernel((await listTable(sb.socket, 'inet', 'nfkube'))!);
      assert.ok(isolated(kernel, 'ingress', '198.18.0.2'), 'the CJK-named policy is enforced');
      assert.ok(isolated(kernel, 'ingress', '198.18.0.3'), 'a pod added afterwards under a valid policy is isolated');
      for (const c of kernel.chains.values()) for (const r of c.rules) if (r.comment) assert.ok(Buffer.byteLength(r.comment) <= LABEL_MAX_BYTES, r.comment);
      assert.ok(isEmptyDiff(diffRulesets(kernel, agent.desiredModel!)), 'read back equals desired');
      assert.equal((await agent.resync()).drift, '', 'and stays so: no drift');
      // The metrics still attribute its counters: the cut label parses, with its hash.
      const rows = await policyCounterReader(sb.socket, 'nfkube', (a, d) => component.podAt(a, d))();
      assert.ok(rows.some((r) => /^x\/日+…[0-9a-f]{8}$/.test(r.policy ?? '') && r.direction === 'ingress' && r.verdict === 'accept'), JSON.stringify(rows.map((r) => r.policy)));
      assert.ok(rows.some((r) => r.policy === 'x/web' && r.verdict === 'accept'));
    } finally {
      await agent.stop();
    }
  });
});

test('NUL, quotes and 4-byte UTF-8 in names: what is read back equals what was written, no drift', async () => {
  await withSandbox(async (sb) => {
    const cluster = new Cluster();
    cluster.apply(namespace('x'));
    cluster.apply(pod('x', 'p\0"𝔘\\', '198.18.0.2', { app: 'web' }));
    cluster.apply(policy('x', 'nul\0name 𝔘"', { podSelector: { matchLabels: { app: 'web' } }, policyTypes: ['Ingress', 'Egress'], ingress: [{}] }));
    const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent });
    const agent = new Agent({ socket: sb.socket, logger: silent, components: [component] });
    try {
      await agent.start(cluster.snapshot());
      const kernel = modelFromKernel((await listTable(sb.socket, 'inet', 'nfkube'))!);
      assert.ok(isolated(kernel, 'ingress', '198.18.0.2') && isolated(kernel, 'egress', '198.18.0.2'));
      assert.ok(isEmptyDiff(diffRulesets(kernel, agent.desiredModel!)), 'read back equals desired');
      assert.equal((await agent.resync()).drift, '', 'no permanent drift');
      const comments = [...kernel.chains.values()].flatMap((c) => c.rules.map((r) => r.comment ?? ''));
      assert.ok(comments.includes('x/nul?name?𝔘? ingress[0]'), JSON.stringify(comments));
      // The pod's default deny is counted by its address; the metrics rows name it exactly.
      const rows = await policyCounterReader(sb.socket, 'nfkube', (a, d) => component.podAt(a, d))();
      assert.ok(rows.some((r) => r.namespace === 'x' && r.pod === 'p\0"𝔘\\' && r.direction === 'egress' && r.verdict === 'drop'), JSON.stringify(rows, (_k, v: unknown) => (typeof v === 'bigint' ? String(v) : v)));
    } finally {
      await agent.stop();
    }
  });
});

test('a policy that cannot be understood fails closed on its own and is counted in nfkube_objects_failed_closed', async () => {
  await withSandbox(async (sb) => {
    const metrics = new AgentMetrics({ processMetrics: false });
    const agent = new Agent({ socket: sb.socket, logger: silent, components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent })], observer: metricsObserver(metrics) });
    const problems: string[] = [];
    const np = (raw: unknown) => normalizers.NetworkPolicy(raw, { onProblem: (e) => problems.push(e.message) });
    const cluster = new Cluster();
    cluster.apply(namespace('x'));
    cluster.apply(pod('x', 'a', '198.18.0.2', { app: 'a' }));
    cluster.apply(pod('x', 'b', '198.18.0.3', { app: 'b' }));
    cluster.apply(policy('x', 'good', { podSelector: { matchLabels: { app: 'a' } }, ingress: [{}] }));
    const snap = cluster.snapshot();
    const broken = np({ ...policy('x', 'broken', {}), spec: [{ podSelector: { matchLabels: { app: 'b' } } }] });
    (snap.policies as Map<string, unknown>).set('x/broken', broken);
    try {
      await agent.start(snap);
      const kernel = modelFromKernel((await listTable(sb.socket, 'inet', 'nfkube'))!);
      assert.ok(isolated(kernel, 'ingress', '198.18.0.3') && isolated(kernel, 'egress', '198.18.0.3'), 'every pod of its namespace, both ways');
      assert.ok(isolated(kernel, 'ingress', '198.18.0.2'), 'the valid policy is enforced');
      assert.match(problems.join('\n'), /NetworkPolicy x\/broken: spec: expected an object, got a list; failing closed/);
      assert.match((await metrics.expose()).body, /nfkube_objects_failed_closed 1/);
    } finally {
      await agent.stop();
    }
  });
});
