/** A ClusterNetworkPolicy Deny with real packets: its drop log lines name
 * `clusternetworkpolicy/NAME` and the rule, its per-rule counter counts what it denied (what
 * `verify --counters` prints), and in an audit namespace the same Deny logs and lets through. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from '../../src/pipeline/agent';
import { PolicyComponent } from '../../src/policy/component';
import { PolicyModes } from '../../src/policy/modes';
import type { DropLogOptions } from '../../src/policy/render/tail';
import { NetlinkSocket } from '../../src/netlink/socket';
import { startDropLogging, type DropRecord } from '../../src/policy/droplog';
import { listTable } from '../../src/nft/readback';
import { normalizers } from '../../src/k8s/normalizers';
import type { ClusterNetworkPolicyInfo } from '../../src/k8s/cluster-policy-model';
import type { ClusterSnapshot } from '../../src/k8s/source';
import { clusterRuleCounters } from '../../src/explain/cluster-counters';
import { Cluster, namespace, pod } from '../agent/fixtures';
import { recordingLogger } from '../helpers/recording-logger';
import { sendPackets } from '../helpers/send';
import { createTopology } from '../helpers/topology';

const NODE = 'node-1';
const LOG: DropLogOptions = { group: 11, rate: 0, burst: 0 };
const settle = () => new Promise((r) => setTimeout(r, 400));

const GUARD = normalizers.ClusterNetworkPolicy({
  metadata: { name: 'guard' },
  spec: {
    tier: 'Admin',
    priority: 3,
    subject: { namespaces: {} },
    egress: [
      { name: 'allow-dns', action: 'Accept', to: [{ namespaces: {} }], protocols: [{ udp: { destinationPort: { number: 53 } } }] },
      { name: 'no-udp-to-y', action: 'Deny', to: [{ namespaces: { matchLabels: { ns: 'y' } } }], protocols: [{ udp: { destinationPort: { range: { start: 80, end: 90 } } } }] },
    ],
  },
}) as ClusterNetworkPolicyInfo;

test('a ClusterNetworkPolicy Deny is logged and counted by policy and rule; audit mode lets it through', { timeout: 120_000 }, async () => {
  const topo = createTopology('routed', [
    { namespace: 'x', name: 'a' },
    { namespace: 'y', name: 'c' },
    { namespace: 'z', name: 'd' },
  ]);
  const [a, c, d] = topo.pods;
  const { logger, lines } = recordingLogger('info');
  const socket = NetlinkSocket.open({ netns: topo.nodeNetnsPath });
  const modes = new PolicyModes('enforce');
  const cluster = new Cluster();
  cluster.apply(namespace('x'));
  cluster.apply(namespace('y'));
  cluster.apply({ ...namespace('z'), metadata: { name: 'z', labels: { ns: 'z' }, annotations: { 'nfkube.io/policy-mode': 'audit' } } });
  cluster.apply(pod('x', 'a', a.ipv4, {}, { ip6: a.ipv6 }));
  cluster.apply(pod('y', 'c', c.ipv4, {}, { ip6: c.ipv6 }));
  cluster.apply(pod('z', 'd', d.ipv4, {}, { ip6: d.ipv6 }));
  const snapshot: ClusterSnapshot = { ...cluster.snapshot(), nodes: new Map(), clusterPolicies: new Map([['guard', GUARD]]) };
  for (const ns of snapshot.namespaces.values()) modes.setNamespace(ns);
  const drops = await startDropLogging({ log: LOG, nodeName: NODE, modes, denyAction: 'drop', logger, netns: topo.nodeNetnsPath });
  const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', log: LOG, modes, logger });
  const agent = new Agent({ socket, logger, components: [component] });
  try {
    drops.load(snapshot);
    await agent.start(snapshot);
    await sendPackets(a.netnsPath, 'udp', c.ipv4, 80, 4, 3);
    await sendPackets(a.netnsPath, 'udp', c.ipv6, 85, 6, 2);
    await sendPackets(d.netnsPath, 'udp', c.ipv4, 81, 4, 4);
    await settle();
    const records = lines.filter((l) => l.drop).map((l) => l.drop as DropRecord);
    const fromA = records.filter((r) => r.pod === 'x/a');
    assert.equal(fromA.length, 5, JSON.stringify(records));
    for (const r of fromA) {
      assert.deepEqual([r.verdict, r.direction, r.policies, r.rule, r.dst], ['drop', 'egress', ['clusternetworkpolicy/guard'], 'no-udp-to-y', 'y/c']);
    }
    assert.ok(lines.some((l) => l.drop?.pod === 'x/a' && /denied by clusternetworkpolicy\/guard rule no-udp-to-y/.test(l.msg)));
    const fromD = records.filter((r) => r.pod === 'z/d');
    // Audited packets pass: once one is through, the flow's next packets may be conntrack's
    // established ones, which the table accepts before any policy.
    assert.ok(fromD.length >= 1 && fromD.length <= 4, JSON.stringify(fromD));
    assert.ok(fromD.every((r) => r.verdict === 'audit' && r.rule === 'no-udp-to-y'));

    const back = await listTable(socket, 'inet', 'nfkube');
    const counters = clusterRuleCounters(back!.rules, [...component.tiers.engine.state().policies.values()]);
    const deny = counters.find((r) => r.rule === 'no-udp-to-y')!;
    assert.equal(deny.packets, BigInt(fromA.length + fromD.length), 'every packet the rule matched was logged (no rate limit)');
    assert.equal(counters.find((r) => r.rule === 'allow-dns')!.packets, 0n);
  } finally {
    await drops.close();
    await agent.stop();
    socket.close();
    topo.close();
  }
});
