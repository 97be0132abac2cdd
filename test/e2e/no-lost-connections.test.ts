/** Seed 000's failure made impossible: while the agent works through 1,000 pod add/delete events
 * that churn the very sets and verdict maps an allowed flow depends on, new connections between
 * two long-lived allowed pods never fail. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import pino from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { Agent } from '../../src/pipeline/agent';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { ClusterChange } from '../../src/k8s/source';
import { NetlinkSocket } from '../../src/netlink/socket';
import { namespace, pod, policy } from '../agent/fixtures';
import { Prober, Slice } from '../helpers/prober';
import { createTopology } from '../helpers/topology';

const NODE = 'nfk-node-1';
const EVENTS = 1000;

test('1,000 pod events while two allowed pods keep connecting: zero failed connections', { timeout: 240_000 }, async () => {
  const topo = createTopology('routed', [
    { namespace: 'x', name: 'a' },
    { namespace: 'x', name: 'b' },
  ]);
  const socket = NetlinkSocket.open({ netns: topo.nodeNetnsPath });
  const agent = new Agent({ socket, logger: pino({ level: 'silent' }), components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) })] });
  let prober: Prober | undefined;
  try {
    const [a, b] = topo.pods;
    const client = normalizePod(pod('x', 'a', a.ipv4, { app: 'client' }, { node: NODE, ip6: a.ipv6 }));
    const server = normalizePod(pod('x', 'b', b.ipv4, { app: 'server' }, { node: NODE, ip6: b.ipv6 }));
    // Both directions isolated: the client's egress and the server's ingress must both allow it.
    const policies = [
      policy('x', 'server-in', { podSelector: { matchLabels: { app: 'server' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port: 80 }] }] }),
      policy('x', 'client-out', { podSelector: { matchLabels: { app: 'client' } }, policyTypes: ['Egress'], egress: [{ to: [{ podSelector: { matchLabels: { app: 'server' } } }] }] }),
    ].map((p) => normalizeNetworkPolicy(p));
    await agent.start({
      namespaces: new Map([['x', normalizeNamespace(namespace('x'))]]),
      pods: new Map([['x/a', client], ['x/b', server]]),
      policies: new Map(policies.map((p) => [`x/${p.name}`, p])),
    });
    prober = await Prober.start(topo);

    let attempts = 0;
    const failures: string[] = [];
    const slices: Slice[] = [{ protocol: 'tcp', port: 80, family: 4 }, { protocol: 'tcp', port: 80, family: 6 }];
    const probeRound = async () => {
      const results = await Promise.all(slices.map((s) => prober!.probe('x/a', 'x/b', s, 2000)));
      results.forEach((r, i) => {
        attempts++;
        if (!r.ok) failures.push(`IPv${slices[i].family}: ${JSON.stringify(r.outcome)}`);
      });
    };

    // Other pods come and go: clients and servers (so the very peer sets of the flow change), on
    // this node (new vmap entries and combination chains) and elsewhere.
    const alive: ClusterChange[] = [];
    const commitsBefore = agent.totals.commits;
    // Every batch of 10 events is committed while a round of new connections is in flight.
    let round = probeRound();
    for (let i = 0; i < EVENTS; i++) {
      let change: ClusterChange;
      if (i % 3 !== 2 || alive.length === 0) {
        const labels = { app: i % 2 ? 'client' : 'server' };
        const p = normalizePod(pod('x', `churn-${i}`, `198.19.${(i >> 8) & 255}.${i & 255}`, labels, { node: i % 4 === 0 ? NODE : 'node-2' }));
        change = { kind: 'Pod', type: 'upsert', key: `x/${p.name}`, object: p };
        alive.push(change);
      } else {
        const gone = alive.splice(Math.floor(alive.length / 2), 1)[0];
        change = { ...gone, type: 'delete' } as ClusterChange;
      }
      agent.onChange(change);
      if (i % 10 === 9) {
        await agent.idle();
        await round;
        round = probeRound();
      }
    }
    await agent.idle();
    await round;
    assert.ok(agent.totals.commits - commitsBefore >= 100, `the events were committed in ${agent.totals.commits - commitsBefore} transactions`);
    assert.ok(attempts >= 200, `only ${attempts} connections were attempted`);
    assert.deepEqual(failures, [], `${failures.length} of ${attempts} connections failed`);
    // And the policy still bites: the server's ingress allows port 80 only.
    const denied = await prober.probe('x/a', 'x/b', { protocol: 'tcp', port: 81, family: 4 }, 1000);
    assert.equal(denied.ok, false);
  } finally {
    await prober?.close();
    await agent.stop();
    await socket.close();
    topo.close();
  }
});
