/** `nfkube explain` agrees with real packets: for conformance cases enforced by the agent, every
 * pod-to-pod cell of the probed matrix (TCP and UDP, ports 80 and 81, IPv4 and IPv6) gets the
 * same verdict from the model and from the table read back from the kernel as the probe got. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { PolicyModes } from '../../src/policy/modes';
import { explainFlow } from '../../src/explain/explain';
import { FlowPacket } from '../../src/explain/flow';
import { ManifestSource } from '../../src/k8s/manifest-source';
import { NetlinkSocket } from '../../src/netlink/socket';
import { listTable } from '../../src/nft/readback';
import { compileFull } from '../../src/policy/engine/compile';
import { cellName, NODE } from '../helpers/prober';
import { CASES } from './cases';
import { agentUnavailable, Harness, NODE_NAME, TABLE } from './harness';

/** A matrix that covers each kind of match the table has: isolation both ways, selectors,
 * ipBlocks with excepts in both families, numeric, named and ranged ports, UDP and SCTP, both
 * ends isolated, unions, and pods on another node. */
const CHOSEN = [
  'deny all ingress in a namespace (dropped: blocked probes time out)',
  'deny all egress in a namespace',
  'namespaceSelector peer',
  'podSelector and namespaceSelector as separate peers (OR)',
  'ipBlock with except (IPv4)',
  'ipBlock with except (IPv6)',
  'egress to an ipBlock',
  'UDP port',
  'SCTP port is accepted and allows no TCP or UDP',
  'named port resolves per target pod (pods without the name do not match)',
  'named port in an egress rule resolves per destination pod',
  'endPort ranges',
  'ingress and egress policies on both ends must both allow',
  'several policies selecting one pod allow the union',
];

describe('explain agrees with real probes on a conformance matrix', { skip: agentUnavailable() }, () => {
  let h: Harness;
  before(async () => {
    h = await Harness.open('routed');
  });
  after(async () => {
    await h?.close();
  });

  const cases = CASES.filter((c) => CHOSEN.includes(c.name));
  test('every chosen case exists', () => assert.equal(cases.length, CHOSEN.length));

  for (const c of cases) {
    test(c.name, async () => {
      h.writeCase(c.policies, typeof c.tweaks === 'function' ? c.tweaks(h.topology) : c.tweaks);
      try {
        await h.runAgent(c.agentArgs);
        const expected = h.reachability();
        c.expect(expected);
        const run = await h.probeAndCompare(expected);
        // The probes are the truth here; a loaded machine that starved one shows in the conformance suite.
        const source = new ManifestSource({ dir: h.manifestsDir, onChange: () => undefined, onError: (e) => assert.fail(e.message) });
        const snap = await source.start();
        await source.stop();
        const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, NODE_NAME);
        const socket = NetlinkSocket.open({ netns: h.topology.nodeNetnsPath });
        let table;
        try {
          table = await listTable(socket, 'inet', TABLE);
        } finally {
          await socket.close();
        }
        assert.ok(table);
        const pods = new Map(h.topology.pods.map((p) => [p.id, p]));
        const wrong: string[] = [];
        let cells = 0;
        for (const cell of run.result.matrix.allCells()) {
          if (cell.from === NODE || cell.from === cell.to) continue;
          const from = pods.get(cell.from)!;
          const to = pods.get(cell.to)!;
          const packet: FlowPacket = {
            family: cell.family === 4 ? 'ipv4' : 'ipv6',
            src: cell.family === 4 ? from.ipv4 : from.ipv6,
            dst: cell.family === 4 ? to.ipv4 : to.ipv6,
            protocol: cell.protocol,
            dport: cell.port,
            sport: 40000,
          };
          const e = explainFlow(ir, new PolicyModes(), table, packet);
          const probed = run.result.matrix.get(cell);
          cells++;
          if (e.model.allowed !== probed || e.kernel?.allowed !== probed) {
            wrong.push(`${cellName(cell)}: probe ${probed ? 'allowed' : 'denied'}, model ${e.model.allowed}, kernel ${e.kernel?.allowed ?? e.kernelError}`);
          }
        }
        assert.equal(cells, 9 * 8 * 8);
        assert.deepEqual(wrong, [], `${c.name}:\n${wrong.join('\n')}\n${run.comparison.report}`);
      } finally {
        await h.resetTables();
      }
    });
  }
});
