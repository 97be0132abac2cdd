/** Drop logs and audit mode with real packets: pods in network namespaces, the agent enforcing
 * in the node's namespace with --log-drops, and the drop log read over nfnetlink_log. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Registry } from 'prom-client';
import { Agent } from '../../src/pipeline/agent';
import { PolicyComponent } from '../../src/policy/component';
import { PolicyModes } from '../../src/policy/modes';
import { DropLogOptions } from '../../src/policy/render/tail';
import { ClusterChange } from '../../src/k8s/source';
import { NetlinkSocket } from '../../src/netlink/socket';
import { DropRecord, startDropLogging } from '../../src/policy/droplog';
import { policyCounters, readCounterRows } from '../../src/explain/counters';
import { compileFull } from '../../src/policy/engine/compile';
import { Cluster, namespace, pod, policy } from '../agent/fixtures';
import { Prober } from '../helpers/prober';
import { recordingLogger } from '../helpers/recording-logger';
import { sendPackets } from '../helpers/send';
import { createTopology, PodEndpoint, Topology } from '../helpers/topology';

const NODE = 'node-1';
const LOG: DropLogOptions = { group: 7, rate: 10, burst: 5 };

interface Env {
  topo: Topology;
  cluster: Cluster;
  agent: Agent;
  lines: Record<string, any>[];
  registry: Registry;
  pods: Record<'a' | 'b' | 'c', PodEndpoint>;
  close(): Promise<void>;
}

/** x/a and x/b, y/c; x/b isolated for ingress (nothing allowed), every pod of y for egress. */
async function start(global: 'enforce' | 'audit' = 'enforce'): Promise<Env> {
  const topo = createTopology('routed', [
    { namespace: 'x', name: 'a' },
    { namespace: 'x', name: 'b' },
    { namespace: 'y', name: 'c' },
  ]);
  const [a, b, c] = topo.pods;
  const { logger, lines } = recordingLogger('info');
  const socket = NetlinkSocket.open({ netns: topo.nodeNetnsPath });
  const modes = new PolicyModes(global);
  const registry = new Registry();
  const cluster = new Cluster();
  cluster.apply(namespace('x'));
  cluster.apply(namespace('y'));
  cluster.apply(pod('x', 'a', a.ipv4, { app: 'a' }, { ip6: a.ipv6 }));
  cluster.apply(pod('x', 'b', b.ipv4, { app: 'b' }, { ip6: b.ipv6 }));
  cluster.apply(pod('y', 'c', c.ipv4, { app: 'c' }, { ip6: c.ipv6 }));
  cluster.apply(policy('x', 'deny-b', { podSelector: { matchLabels: { app: 'b' } }, policyTypes: ['Ingress'] }));
  cluster.apply(policy('y', 'deny-egress', { podSelector: {}, policyTypes: ['Egress'] }));
  const drops = await startDropLogging({ log: LOG, nodeName: NODE, modes, denyAction: 'drop', logger, registry, netns: topo.nodeNetnsPath });
  const agent = new Agent({ socket, logger, components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', log: LOG, modes, logger })] });
  const snapshot = cluster.snapshot();
  drops.load(snapshot);
  await agent.start(snapshot);
  cluster.agent = { onChange: (ch: ClusterChange) => (drops.apply(ch), agent.onChange(ch)) } as unknown as Agent;
  return {
    topo,
    cluster,
    agent,
    lines,
    registry,
    pods: { a, b, c },
    async close() {
      await drops.close();
      await agent.stop();
      await socket.close();
      topo.close();
    },
  };
}

const dropLines = (lines: Record<string, any>[]): DropRecord[] => lines.filter((l) => l.drop).map((l) => l.drop as DropRecord);
const settle = () => new Promise((r) => setTimeout(r, 400));

test('each denied TCP and UDP flow, ingress and egress, IPv4 and IPv6, is one log line naming pods and policies', { timeout: 120_000 }, async () => {
  const env = await start();
  try {
    const { a, b, c } = env.pods;
    const flows = [
      { from: a, to: b, direction: 'ingress', pod: 'x/b', policies: ['x/deny-b'] },
      { from: c, to: a, direction: 'egress', pod: 'y/c', policies: ['y/deny-egress'] },
    ] as const;
    for (const family of [4, 6] as const) {
      for (const f of flows) {
        for (const protocol of ['tcp', 'udp'] as const) {
          env.lines.length = 0;
          const dst = family === 4 ? f.to.ipv4 : f.to.ipv6;
          await sendPackets(f.from.netnsPath, protocol, dst, 80, family);
          await settle();
          const got = dropLines(env.lines);
          const what = `${protocol} IPv${family} ${f.from.id} -> ${f.to.id}`;
          assert.equal(got.length, 1, `${what}: ${JSON.stringify(env.lines)}`);
          const r = got[0];
          assert.deepEqual(
            { verdict: r.verdict, direction: r.direction, pod: r.pod, src: r.src, dst: r.dst, dstAddr: r.dstAddr, protocol: r.protocol, dport: r.dport, policies: r.policies },
            { verdict: 'drop', direction: f.direction, pod: f.pod, src: f.from.id, dst: f.to.id, dstAddr: dst, protocol, dport: 80, policies: [...f.policies] },
            what,
          );
          assert.match(env.lines.find((l) => l.drop)!.msg, /^denied: /);
        }
      }
    }
    const metrics = await env.registry.getSingleMetricAsString('nfkube_drop_log_packets_total');
    assert.match(metrics, /nfkube_drop_log_packets_total\{namespace="x",pod="b",direction="ingress",verdict="drop"\} 4/);
    assert.match(metrics, /nfkube_drop_log_packets_total\{namespace="y",pod="c",direction="egress",verdict="drop"\} 4/);
  } finally {
    await env.close();
  }
});

test('a 10,000-datagram flood: no packet passes, log lines stay within the kernel-side rate limit', { timeout: 120_000 }, async () => {
  const env = await start();
  try {
    const { a, b } = env.pods;
    for (const family of [4, 6] as const) {
      env.lines.length = 0;
      const before = await denyCounter(env, 'x/b');
      const cpu0 = process.cpuUsage();
      const ms = await sendPackets(a.netnsPath, 'udp', family === 4 ? b.ipv4 : b.ipv6, 80, family, 10_000);
      await settle();
      const cpu = process.cpuUsage(cpu0);
      const dropped = (await denyCounter(env, 'x/b')) - before;
      const lines = dropLines(env.lines).length;
      // The flood lasted `ms`: the token bucket allows burst + rate * seconds (+1 for rounding).
      const bound = LOG.burst + Math.ceil((LOG.rate * (ms + 400)) / 1000) + 1;
      assert.equal(dropped, 10_000n, `IPv${family}: every datagram hit the default deny`);
      assert.ok(lines >= 1 && lines <= bound, `IPv${family}: ${lines} lines, bound ${bound} (flood ${ms.toFixed(0)} ms)`);
      process.stdout.write(`# IPv${family} flood: 10000 dropped in ${ms.toFixed(0)} ms, ${lines} lines logged, agent CPU ${((cpu.user + cpu.system) / 1000).toFixed(1)} ms\n`);
    }
    // verify --counters' table: the flooded pod's policy first, with every drop.
    const counters = await policyTable(env);
    assert.equal(counters[0].policy, 'x/deny-b');
    assert.ok(counters[0].droppedPackets >= 20_000n, String(counters[0].droppedPackets));
  } finally {
    await env.close();
  }
});

test('audit mode per namespace: denied flows go through and are logged; other namespaces keep enforcing; switching back enforces', { timeout: 180_000 }, async () => {
  const env = await start();
  const prober = await Prober.start(env.topo);
  try {
    const tcp4 = { protocol: 'tcp', port: 80, family: 4 } as const;
    const udp6 = { protocol: 'udp', port: 80, family: 6 } as const;
    assert.equal((await prober.probe('x/a', 'x/b', tcp4, 700)).ok, false, 'enforced before');

    const messagesBefore = new Map(env.agent.totals.byType);
    env.cluster.apply({ ...namespace('x'), metadata: { name: 'x', labels: { ns: 'x' }, annotations: { 'nfkube.io/policy-mode': 'audit' } } });
    await env.agent.idle();
    // The switch is set elements only: no chain or rule is written again.
    for (const [kind, n] of env.agent.totals.byType) if (n !== (messagesBefore.get(kind) ?? 0)) assert.match(kind, /SETELEM|BATCH/, `switching wrote ${kind}`);

    env.lines.length = 0;
    for (const slice of [tcp4, udp6]) assert.equal((await prober.probe('x/a', 'x/b', slice, 2000)).ok, true, `audit: x/a -> x/b ${slice.protocol} IPv${slice.family} goes through`);
    await settle();
    const audited = dropLines(env.lines);
    assert.ok(audited.some((r) => r.verdict === 'audit' && r.pod === 'x/b' && r.protocol === 'tcp' && r.dstAddr === env.pods.b.ipv4), JSON.stringify(env.lines));
    assert.ok(audited.some((r) => r.verdict === 'audit' && r.pod === 'x/b' && r.protocol === 'udp' && r.dstAddr === env.pods.b.ipv6), JSON.stringify(env.lines));
    assert.match(env.lines.find((l) => l.drop?.verdict === 'audit')!.msg, /^audit: .* would be denied; allowed$/);

    const row = (await policyTable(env)).find((r) => r.policy === 'x/deny-b')!;
    assert.ok(row.auditedPackets >= 2n, `verify --counters counts what audit mode let through: ${row.auditedPackets}`);

    // Namespace y still enforces its egress.
    assert.equal((await prober.probe('y/c', 'x/a', tcp4, 700)).ok, false, 'y is not in audit mode');

    env.cluster.apply(namespace('x'));
    await env.agent.idle();
    assert.equal((await prober.probe('x/a', 'x/b', tcp4, 700)).ok, false, 'enforced again');
  } finally {
    await prober.close();
    await env.close();
  }
});

test('global audit mode: every namespace lets denied flows through and logs them', { timeout: 120_000 }, async () => {
  const env = await start('audit');
  const prober = await Prober.start(env.topo);
  try {
    const tcp6 = { protocol: 'tcp', port: 80, family: 6 } as const;
    const udp4 = { protocol: 'udp', port: 80, family: 4 } as const;
    assert.equal((await prober.probe('x/a', 'x/b', tcp6, 2000)).ok, true, 'x/b ingress');
    assert.equal((await prober.probe('y/c', 'x/a', udp4, 2000)).ok, true, 'y/c egress');
    await settle();
    const audited = dropLines(env.lines);
    assert.ok(audited.some((r) => r.verdict === 'audit' && r.pod === 'x/b' && r.direction === 'ingress' && r.protocol === 'tcp'), JSON.stringify(audited));
    assert.ok(audited.some((r) => r.verdict === 'audit' && r.pod === 'y/c' && r.direction === 'egress' && r.protocol === 'udp' && r.policies.includes('y/deny-egress')), JSON.stringify(audited));
  } finally {
    await prober.close();
    await env.close();
  }
});

async function policyTable(env: Env) {
  const socket = NetlinkSocket.open({ netns: env.topo.nodeNetnsPath });
  try {
    const snap = env.cluster.snapshot();
    const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, NODE);
    return policyCounters(await readCounterRows(socket, 'nfkube', ir), ir);
  } finally {
    await socket.close();
  }
}

async function denyCounter(env: Env, podKey: string): Promise<bigint> {
  const socket = NetlinkSocket.open({ netns: env.topo.nodeNetnsPath });
  try {
    // The pod's default deny, counted by its address, as `verify --counters` reads it.
    const snap = env.cluster.snapshot();
    const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, NODE);
    let n = 0n;
    for (const r of await readCounterRows(socket, 'nfkube', ir)) if (r.verdict === 'drop' && r.direction === 'ingress' && `${r.namespace}/${r.pod}` === podKey) n += BigInt(r.packets);
    return n;
  } finally {
    await socket.close();
  }
}
