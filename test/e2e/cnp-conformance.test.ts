/** The upstream ClusterNetworkPolicy conformance suite (test/e2e/cnp-cases.ts) with real packets
 * on the routed topology of the upstream houses, dual-stack, SCTP by crafted INIT and INIT ACK
 * packets (this kernel may have no SCTP sockets). Each step's objects go to `nfkube agent --once`
 * in the node's namespace, then the whole matrix (every source, every pod, TCP 80/8080, UDP
 * 53/5353, SCTP 9003/9005, IPv4 and IPv6) is probed and compared with the reference evaluator's
 * matrix, which must itself answer the step's upstream pokes as upstream expects. */
import { after, before, describe, test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { NODE, type Cell, type ServedPorts } from '../helpers/prober';
import { podAddress } from '../helpers/topology';
import { cnpCases, nodePeerCases, NODE_PEER_PORTS, podId, type CnpCase } from './cnp-cases';
import { addressesOf, clusterNetworkPolicyUnavailable, CNP_SERVED, evaluatorMatrix, HOUSE_PLACEMENTS, initialState, pokeDisagreements, stateClusterObjects, statePolicies, stateWorld } from './cnp-run';
import { Harness, NODE_NAME, TABLE } from './harness';
import { writeManifests } from './manifests';

const LUNA_0 = { v4: '198.18.0.30', v6: '2001:db8::30' };

describe('ClusterNetworkPolicy conformance (upstream houses, routed pods)', () => {
  const skip = clusterNetworkPolicyUnavailable();
  let h: Harness;
  before(async () => {
    h = await Harness.open('routed', HOUSE_PLACEMENTS, CNP_SERVED);
  });
  after(async () => {
    await h?.close();
  });

  test('the probes see SCTP: a stateful hand-written ruleset dropping new SCTP 9003 to one pod blocks exactly those cells', async () => {
    const luna0 = podId('luna-lovegood-0');
    assert.equal(h.topology.pods.find((p) => p.id === luna0)?.ipv4, LUNA_0.v4);
    const open = evaluatorMatrix(h.topology, stateWorld(h.topology, NODE_NAME, { clusterPolicies: [], networkPolicies: [], namespaceLabels: {} })).matrix;
    for (const c of open.allCells()) if (c.to === luna0 && c.protocol === 'sctp' && c.port === 9003 && c.from !== NODE && c.from !== luna0) open.set(c, false);
    let run;
    try {
      await h.nft([
        'table inet nfk_selfcheck {',
        '  chain forward {',
        '    type filter hook forward priority 0; policy accept;',
        '    ct state established,related accept',
        `    ip daddr ${LUNA_0.v4} sctp dport 9003 drop`,
        `    ip6 daddr ${LUNA_0.v6} sctp dport 9003 drop`,
        '  }',
        '}',
      ].join('\n'));
      run = await h.probeAndCompareMatrix(open);
    } finally {
      await h.resetTables();
    }
    assert.equal(run.comparison.mismatches.length, 0, run.comparison.report);
    // 7 other pods, both families; every other SCTP cell (replies included) went through.
    assert.equal(run.result.matrix.count(false), 14);
    const sctpOpen = [...run.result.matrix.allCells()].filter((c: Cell) => c.protocol === 'sctp' && run.result.matrix.get(c));
    assert.equal(sctpOpen.length, 9 * 8 * 4 - 14);
  });

  // The cases need the pod addresses before the topology exists: placement i gets podAddress(i).
  for (const c of cnpCases(addressesOf({ pods: HOUSE_PLACEMENTS.map((p, i) => ({ ...p, id: `${p.namespace}/${p.name}`, ...podAddress(i), netnsPath: '' })) }))) {
    test(`${c.test}${c.feature ? ` (experimental: ${c.feature})` : ''}`, { skip }, (t) => runSteps(h, c, t));
  }
});

describe('ClusterNetworkPolicy conformance, node peers (the node serves as the host-network centaurs)', () => {
  const skip = clusterNetworkPolicyUnavailable();
  let h: Harness;
  before(async () => {
    h = await Harness.open('routed', HOUSE_PLACEMENTS, NODE_PEER_PORTS, { nodeServes: true });
  });
  after(async () => {
    await h?.close();
  });
  for (const c of nodePeerCases()) {
    test(`${c.test} (experimental: ${c.feature})`, { skip }, (t) => runSteps(h, c, t, NODE_PEER_PORTS, true));
  }
});

/** Runs a case's steps in order: each step's objects enforced by `agent --once`, the whole matrix
 * probed and compared with the evaluator's, which must answer the upstream pokes as upstream. */
async function runSteps(h: Harness, c: CnpCase, t: TestContext, ports: ServedPorts = CNP_SERVED, nodeTarget = false): Promise<void> {
  const state = initialState(c);
  try {
    for (const step of c.steps) {
      step.change?.(state);
      const { matrix, why } = evaluatorMatrix(h.topology, stateWorld(h.topology, NODE_NAME, state), ports, { nodeTarget });
      assert.deepEqual(pokeDisagreements(step, matrix), [], `${step.name}: the reference evaluator disagrees with upstream`);
      writeManifests(h.manifestsDir, stateClusterObjects(h.topology, NODE_NAME, state), statePolicies(state));
      await h.runAgent();
      assert.deepEqual(await h.tables(), [`inet ${TABLE}`], 'the agent programs its own table and nothing else');
      const run = await h.probeAndCompareMatrix(matrix);
      if (run.reprobedCells > 0) t.diagnostic(`${step.name}: ${run.reprobedCells} expected-open cells were probed again`);
      const explained = run.comparison.mismatches.slice(0, 8).map((m) => `  ${m.from} -> ${m.to} ${m.protocol}/${m.port} IPv${m.family}: ${why(m)}`);
      assert.equal(run.comparison.mismatches.length, 0, `${c.test} / ${step.name}:\n${run.comparison.report}\nthe evaluator's reasons:\n${explained.join('\n')}`);
    }
  } finally {
    await h.resetTables();
  }
}
