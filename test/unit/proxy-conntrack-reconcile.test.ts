/** reconcileStale (conntrack-cleanup.ts) as kube-proxy's conntrack reconciler decides: UDP entries
 * to a service address and port, or to a node port, whose reply source is not a serving endpoint
 * are stale; a service port without serving endpoints, other protocols and other families are
 * left alone. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { CtEntry } from '../../src/conntrack/codec';
import { reconcileStale, UdpServicePort } from '../../src/proxy/conntrack-cleanup';
import { IPPROTO_TCP, IPPROTO_UDP } from '../../src/net/protocols';

function entry(dst: string, dport: number, replySrc: string, proto: number = IPPROTO_UDP, family: 'v4' | 'v6' = 'v4'): CtEntry {
  return {
    family,
    orig: { src: '198.18.100.2', dst, proto, srcPort: 40000, dstPort: dport },
    reply: { src: replySrc, dst: '198.18.100.2', proto, srcPort: 5353, dstPort: 40000 },
  };
}

const dns: UdpServicePort = { fam: 'v4', dsts: ['198.19.0.53 53', '198.18.200.1 53'], nodePort: 30053, endpoints: ['198.18.1.11 5353'], serving: ['198.18.1.11', '198.18.1.12'] };
const empty: UdpServicePort = { fam: 'v4', dsts: ['198.19.0.54 53'], endpoints: [], serving: [] };

test('reconcileStale: entries not answered by a serving endpoint are stale, whatever this process saw', () => {
  const live = entry('198.19.0.53', 53, '198.18.1.11');
  const servingElsewhere = entry('198.19.0.53', 53, '198.18.1.12');
  const gone = entry('198.19.0.53', 53, '198.18.1.10');
  const unNATed = entry('198.19.0.53', 53, '198.19.0.53');
  const external = entry('198.18.200.1', 53, '198.18.1.10');
  const nodePort = entry('198.18.100.1', 30053, '198.18.1.10');
  const otherPort = entry('198.19.0.53', 54, '198.18.1.10');
  const tcp = entry('198.19.0.53', 53, '198.18.1.10', IPPROTO_TCP);
  const noEndpoints = entry('198.19.0.54', 53, '198.19.0.54');
  const all = [live, servingElsewhere, gone, unNATed, external, nodePort, otherPort, tcp, noEndpoints];
  assert.deepEqual(reconcileStale(all, [dns, empty], 'v4'), [gone, unNATed, external, nodePort]);
  assert.deepEqual(reconcileStale(all, [dns, empty], 'v6'), [], 'another family is not looked at');
});
