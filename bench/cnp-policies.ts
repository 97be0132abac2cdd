/** The ClusterNetworkPolicies of the benches (bench/cnp.bench.ts in-process, bench/e2e.bench.ts
 * over HTTP), for bench/cluster.ts's clusters (teams, apps, zones, prod frontends). */
import { clusterNetworkPolicy, type Action, type ClusterNetworkPolicy, type CnpPeer, type CnpProtocol, type CnpRule } from '../test/helpers/cnp-spec';

/** Rules per direction of each policy. */
export const RULES = 25;
const ACTIONS: Action[] = ['Accept', 'Deny', 'Pass'];

/** Policy i: Baseline one time in four, priorities spread over 0-1000 with every tenth tied to
 * its neighbour, 25 rules per direction cycling actions, peers and port forms. */
export function benchPolicy(i: number): ClusterNetworkPolicy {
  const team = (k: number) => ({ matchLabels: { team: `team-${k % 20}` } });
  const peer = (dir: 'ingress' | 'egress', k: number): CnpPeer => {
    switch (k % (dir === 'ingress' ? 2 : 4)) {
      case 0: return { namespaces: team(i + k) };
      case 1: return { pods: { namespaceSelector: team(i + 3 * k), podSelector: { matchLabels: { app: `app-${k % 10}` } } } };
      case 2: return { networks: [`198.19.${200 + (k % 50)}.0/24`, `2001:db8:${(k % 50).toString(16)}::/64`] };
      default: return { nodes: { matchLabels: { zone: `zone-${k % 3}` } } };
    }
  };
  const protocols = (k: number, peers: CnpPeer[]): CnpProtocol[] | undefined => {
    const offPods = peers.some((p) => p.networks || p.nodes);
    switch (k % 4) {
      case 0: return undefined;
      case 1: return [{ tcp: { destinationPort: { number: 8080 } } }, { udp: { destinationPort: { number: 53 } } }];
      case 2: return [{ tcp: { destinationPort: { range: { start: 9000, end: 9100 } } } }];
      default: return offPods ? [{ sctp: { destinationPort: { number: 9003 } } }] : [{ destinationNamedPort: 'metrics' }];
    }
  };
  const rules = (dir: 'ingress' | 'egress'): CnpRule[] => Array.from({ length: RULES }, (_, k) => {
    const peers = [peer(dir, k)];
    const p = protocols(k + i, peers);
    return { name: `${dir}-${k}`, action: ACTIONS[(k + i) % 3], ...(dir === 'ingress' ? { from: peers } : { to: peers }), ...(p ? { protocols: p } : {}) };
  });
  const subject = i % 2 === 0
    ? { namespaces: { matchLabels: { team: `team-${i % 20}` } } }
    : { pods: { namespaceSelector: { matchLabels: { env: 'prod' } }, podSelector: { matchLabels: { tier: 'frontend' } } } };
  return clusterNetworkPolicy(`cnp-${String(i).padStart(3, '0')}`, {
    tier: i % 4 === 3 ? 'Baseline' : 'Admin',
    priority: i % 10 === 9 ? ((i - 1) * 37) % 1001 : (i * 37) % 1001,
    subject,
    ingress: rules('ingress'),
    egress: rules('egress'),
  });
}
