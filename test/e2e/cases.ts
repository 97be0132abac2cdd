/** The NetworkPolicy conformance cases: each one's policies, any change to the standard cluster
 * (namespaces x, y, z labelled ns=<name>; pods a, b, c labelled pod=<name>; x at 198.18.0.10-12
 * and 2001:db8::10-12, y at .20-22 and ::20-22, z at .30-32 and ::30-32) and its full expected
 * reachability, written from the networking.k8s.io/v1 semantics, never from running the agent. */
import assert from 'node:assert/strict';
import { cellKey, cellName, NODE, type Cell } from '../helpers/prober';
import type { Topology } from '../helpers/topology';
import type { CaseRun } from './harness';
import { netpol, pod, type ClusterTweaks, type K8sObject } from './manifests';
import type { Reachability } from './reachability';

export interface PolicyCase {
  name: string;
  /** Also run on the bridged topology. */
  core?: boolean;
  policies: K8sObject[];
  tweaks?: ClusterTweaks | ((t: Topology) => ClusterTweaks);
  agentArgs?: string[];
  expect(r: Reachability): void;
  /** Extra checks on how probes failed or passed; `reprobe` probes cells again into run.result
   * with a longer timeout. */
  check?(run: CaseRun, reprobe: (cells: Cell[]) => Promise<void>): Promise<void>;
}

const ns = (name: string): K8sObject => ({ namespaceSelector: { matchLabels: { ns: name } } });
const podSel = (name: string): K8sObject => ({ podSelector: { matchLabels: { pod: name } } });
const podIn = (nsName: string, name: string): K8sObject => ({ ...ns(nsName), ...podSel(name) });
const onlyPod = (name: string): K8sObject => ({ matchLabels: { pod: name } });
const ALL = {};

/** Blocked cells between two different pods (the node and loopback are never blocked). */
function blockedCells(run: CaseRun): Cell[] {
  return [...run.result.matrix.allCells()].filter((c) => c.from !== NODE && c.from !== c.to && !run.result.matrix.get(c));
}

function timedOut(run: CaseRun, cells: Cell[]): Cell[] {
  return cells.filter((c) => {
    const outcome = run.result.outcomes.get(cellKey(c));
    return outcome !== undefined && 'error' in outcome && outcome.error === 'timeout';
  });
}

const DENY_ALL_IN_X: PolicyCase = {
  name: 'deny all ingress and egress in a namespace',
  policies: [netpol('x', 'deny-all', { podSelector: ALL, policyTypes: ['Ingress', 'Egress'] })],
  expect: (r) => {
    r.ingress.isolate('x/*');
    r.egress.isolate('x/*');
  },
};

const ONE_PEER_AND: PolicyCase = {
  name: 'podSelector and namespaceSelector in one peer (AND)',
  core: true,
  policies: [netpol('x', 'from-y-b', { podSelector: onlyPod('a'), ingress: [{ from: [podIn('y', 'b')] }] })],
  expect: (r) => r.ingress.isolate('x/a').allow('y/b', 'x/a'),
};

/** Two cases applied one after the other with no cleanup between: the second agent run must
 * replace what the first one left (a restart over changed cluster state). */
export const RESTART_SEQUENCE: [PolicyCase, PolicyCase] = [DENY_ALL_IN_X, ONE_PEER_AND];

export const CASES: PolicyCase[] = [
  // --- isolation -------------------------------------------------------------------------
  {
    name: 'deny all ingress in a namespace (dropped: blocked probes time out)',
    core: true,
    policies: [netpol('x', 'deny-ingress', { podSelector: ALL, policyTypes: ['Ingress'] })],
    expect: (r) => r.ingress.isolate('x/*'),
    check: async (run) => {
      const blocked = blockedCells(run);
      assert.ok(blocked.length > 0);
      assert.deepEqual(timedOut(run, blocked), blocked, 'denied packets are dropped: every blocked probe times out');
    },
  },
  {
    name: 'deny all ingress with --deny-action reject (blocked probes fail fast)',
    policies: [netpol('x', 'deny-ingress', { podSelector: ALL, policyTypes: ['Ingress'] })],
    agentArgs: ['--deny-action', 'reject'],
    expect: (r) => r.ingress.isolate('x/*'),
    check: async (run, reprobe) => {
      const blocked = blockedCells(run);
      assert.ok(blocked.length > 0);
      // A rejection can still be late on a loaded machine: such cells get a longer second look.
      const late = timedOut(run, blocked);
      if (late.length > 0) await reprobe(late);
      const stillSilent = timedOut(run, blocked);
      assert.deepEqual(stillSilent.map(cellName), [], 'denied packets are rejected: blocked probes fail with an error, not a timeout');
    },
  },
  {
    name: 'deny all egress in a namespace',
    core: true,
    policies: [netpol('x', 'deny-egress', { podSelector: ALL, policyTypes: ['Egress'] })],
    expect: (r) => r.egress.isolate('x/*'),
  },
  DENY_ALL_IN_X,
  {
    name: 'a policy only selects pods of its own namespace',
    policies: [netpol('y', 'deny-a', { podSelector: onlyPod('a'), policyTypes: ['Ingress'] })],
    expect: (r) => r.ingress.isolate('y/a'),
  },
  {
    name: 'a policy whose podSelector matches no pod changes nothing',
    policies: [netpol('x', 'nobody', { podSelector: onlyPod('nope'), policyTypes: ['Ingress', 'Egress'] })],
    expect: () => undefined,
  },
  {
    name: 'empty ingress and egress rule lists deny everything',
    policies: [netpol('y', 'empty-lists', { podSelector: ALL, policyTypes: ['Ingress', 'Egress'], ingress: [], egress: [] })],
    expect: (r) => {
      r.ingress.isolate('y/*');
      r.egress.isolate('y/*');
    },
  },
  {
    name: 'an empty rule (no from/to, no ports) allows everything',
    policies: [netpol('x', 'allow-all', { podSelector: ALL, policyTypes: ['Ingress', 'Egress'], ingress: [{}], egress: [{}] })],
    expect: () => undefined,
  },
  // --- policyTypes defaulting ------------------------------------------------------------
  {
    name: 'policyTypes defaults to Ingress when the policy has no egress rules',
    policies: [netpol('x', 'default-types', { podSelector: ALL })],
    expect: (r) => r.ingress.isolate('x/*'),
  },
  {
    name: 'policyTypes defaults to Ingress and Egress when egress rules are present',
    policies: [netpol('x', 'default-types-egress', { podSelector: onlyPod('a'), egress: [{ to: [ns('y')] }] })],
    expect: (r) => {
      r.ingress.isolate('x/a');
      r.egress.isolate('x/a').allow('x/a', 'y/*');
    },
  },
  {
    name: 'egress-only policy leaves ingress open',
    policies: [netpol('x', 'egress-to-b', { podSelector: onlyPod('a'), policyTypes: ['Egress'], egress: [{ to: [podSel('b')] }] })],
    expect: (r) => r.egress.isolate('x/a').allow('x/a', 'x/b'),
  },
  // --- peers: pod and namespace selectors -------------------------------------------------
  {
    name: 'allow from the same namespace (empty podSelector peer)',
    core: true,
    policies: [netpol('x', 'same-ns', { podSelector: ALL, ingress: [{ from: [{ podSelector: ALL }] }] })],
    expect: (r) => r.ingress.isolate('x/*').allow('x/*', 'x/*'),
  },
  {
    name: 'podSelector target and podSelector peer',
    policies: [netpol('x', 'b-to-a', { podSelector: onlyPod('a'), ingress: [{ from: [podSel('b')] }] })],
    expect: (r) => r.ingress.isolate('x/a').allow('x/b', 'x/a'),
  },
  {
    name: 'namespaceSelector peer',
    core: true,
    policies: [netpol('x', 'from-y', { podSelector: onlyPod('a'), ingress: [{ from: [ns('y')] }] })],
    expect: (r) => r.ingress.isolate('x/a').allow('y/*', 'x/a'),
  },
  ONE_PEER_AND,
  {
    name: 'podSelector and namespaceSelector as separate peers (OR)',
    policies: [netpol('x', 'from-y-or-b', { podSelector: onlyPod('a'), ingress: [{ from: [ns('y'), podSel('b')] }] })],
    expect: (r) => r.ingress.isolate('x/a').allow(['y/*', 'x/b'], 'x/a'),
  },
  {
    name: 'empty namespaceSelector with a podSelector: that pod in every namespace',
    policies: [netpol('x', 'from-any-c', { podSelector: onlyPod('a'), ingress: [{ from: [{ namespaceSelector: ALL, ...podSel('c') }] }] })],
    expect: (r) => r.ingress.isolate('x/a').allow('*/c', 'x/a'),
  },
  {
    name: 'matchExpressions In (peer pods)',
    policies: [netpol('x', 'in', {
      podSelector: onlyPod('a'),
      ingress: [{ from: [{ podSelector: { matchExpressions: [{ key: 'pod', operator: 'In', values: ['b', 'c'] }] } }] }],
    })],
    expect: (r) => r.ingress.isolate('x/a').allow(['x/b', 'x/c'], 'x/a'),
  },
  {
    name: 'matchExpressions NotIn (peer namespaces)',
    policies: [netpol('x', 'notin', {
      podSelector: onlyPod('a'),
      ingress: [{ from: [{ namespaceSelector: { matchExpressions: [{ key: 'ns', operator: 'NotIn', values: ['x'] }] } }] }],
    })],
    expect: (r) => r.ingress.isolate('x/a').allow(['y/*', 'z/*'], 'x/a'),
  },
  {
    name: 'matchExpressions Exists (peer namespaces)',
    tweaks: { namespaceLabels: { z: { team: 'blue' } } },
    policies: [netpol('x', 'exists', {
      podSelector: onlyPod('a'),
      ingress: [{ from: [{ namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'Exists' }] } }] }],
    })],
    expect: (r) => r.ingress.isolate('x/a').allow('z/*', 'x/a'),
  },
  {
    name: 'matchExpressions DoesNotExist (target pods)',
    tweaks: { pods: { 'x/a': { labels: { role: 'web' } } } },
    policies: [netpol('x', 'unlabelled', {
      podSelector: { matchExpressions: [{ key: 'role', operator: 'DoesNotExist' }] },
      policyTypes: ['Ingress'],
    })],
    expect: (r) => r.ingress.isolate(['x/b', 'x/c']),
  },
  {
    name: 'matchLabels and matchExpressions of one selector are ANDed',
    tweaks: { namespaceLabels: { y: { team: 'blue' }, z: { team: 'blue' } } },
    policies: [netpol('x', 'and', {
      podSelector: onlyPod('a'),
      ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'blue' }, matchExpressions: [{ key: 'ns', operator: 'NotIn', values: ['z'] }] } }] }],
    })],
    expect: (r) => r.ingress.isolate('x/a').allow('y/*', 'x/a'),
  },
  // --- ipBlock -----------------------------------------------------------------------------
  {
    name: 'ipBlock (IPv4): IPv6 traffic from the same pods stays blocked',
    policies: [netpol('x', 'cidr', { podSelector: onlyPod('a'), ingress: [{ from: [{ ipBlock: { cidr: '198.18.0.16/28' } }] }] })],
    expect: (r) => r.ingress.isolate('x/a').allow(['y/*', 'z/a', 'z/b'], 'x/a', { family: 4 }),
  },
  {
    name: 'ipBlock with except (IPv4)',
    policies: [netpol('x', 'cidr-except', {
      podSelector: onlyPod('a'),
      ingress: [{ from: [{ ipBlock: { cidr: '198.18.0.0/26', except: ['198.18.0.20/30', '198.18.0.31/32'] } }] }],
    })],
    expect: (r) => r.ingress.isolate('x/a').allow(['x/b', 'x/c', 'z/a', 'z/c'], 'x/a', { family: 4 }),
  },
  {
    name: 'ipBlock (IPv6)',
    policies: [netpol('x', 'cidr6', { podSelector: onlyPod('a'), ingress: [{ from: [{ ipBlock: { cidr: '2001:db8::20/124' } }] }] })],
    expect: (r) => r.ingress.isolate('x/a').allow('y/*', 'x/a', { family: 6 }),
  },
  {
    name: 'ipBlock with except (IPv6)',
    policies: [netpol('x', 'cidr6-except', {
      podSelector: onlyPod('a'),
      ingress: [{ from: [{ ipBlock: { cidr: '2001:db8::/64', except: ['2001:db8::30/124'] } }] }],
    })],
    expect: (r) => r.ingress.isolate('x/a').allow(['x/*', 'y/*'], 'x/a', { family: 6 }),
  },
  {
    name: 'egress to an ipBlock',
    policies: [netpol('x', 'egress-cidr', {
      podSelector: onlyPod('a'), policyTypes: ['Egress'], egress: [{ to: [{ ipBlock: { cidr: '198.18.0.30/31' } }] }],
    })],
    expect: (r) => r.egress.isolate('x/a').allow('x/a', ['z/a', 'z/b'], { family: 4 }),
  },
  // --- ports -------------------------------------------------------------------------------
  {
    name: 'port by number (protocol defaults to TCP), from missing = all peers',
    core: true,
    policies: [netpol('x', 'tcp-80', { podSelector: onlyPod('a'), ingress: [{ ports: [{ port: 80 }] }] })],
    expect: (r) => r.ingress.isolate('x/a').allow('*', 'x/a', { protocol: 'tcp', ports: [80] }),
  },
  {
    name: 'UDP port',
    core: true,
    policies: [netpol('x', 'udp-81', { podSelector: onlyPod('a'), ingress: [{ ports: [{ protocol: 'UDP', port: 81 }] }] })],
    expect: (r) => r.ingress.isolate('x/a').allow('*', 'x/a', { protocol: 'udp', ports: [81] }),
  },
  {
    name: 'SCTP port is accepted and allows no TCP or UDP',
    policies: [netpol('x', 'sctp', {
      podSelector: onlyPod('a'), ingress: [{ ports: [{ protocol: 'SCTP', port: 80 }, { protocol: 'UDP', port: 80 }] }],
    })],
    expect: (r) => r.ingress.isolate('x/a').allow('*', 'x/a', { protocol: 'udp', ports: [80] }),
  },
  {
    name: 'named port',
    policies: [netpol('x', 'named', { podSelector: onlyPod('a'), ingress: [{ ports: [{ port: 'serve-81-tcp' }] }] })],
    expect: (r) => r.ingress.isolate('x/a').allow('*', 'x/a', { protocol: 'tcp', ports: [81] }),
  },
  {
    name: 'named port whose protocol does not match allows nothing',
    policies: [netpol('x', 'named-mismatch', { podSelector: onlyPod('a'), ingress: [{ ports: [{ protocol: 'TCP', port: 'serve-80-udp' }] }] })],
    expect: (r) => r.ingress.isolate('x/a'),
  },
  {
    name: 'named port resolves per target pod (pods without the name do not match)',
    tweaks: {
      pods: {
        'x/a': { extraPorts: [{ name: 'web', containerPort: 80, protocol: 'TCP' }] },
        'x/b': { extraPorts: [{ name: 'web', containerPort: 81, protocol: 'TCP' }] },
      },
    },
    policies: [netpol('x', 'web', { podSelector: ALL, ingress: [{ ports: [{ port: 'web' }] }] })],
    expect: (r) => {
      r.ingress.isolate('x/*');
      r.ingress.allow('*', 'x/a', { protocol: 'tcp', ports: [80] });
      r.ingress.allow('*', 'x/b', { protocol: 'tcp', ports: [81] });
    },
  },
  {
    name: 'named port in an egress rule resolves per destination pod',
    tweaks: {
      pods: {
        'y/a': { extraPorts: [{ name: 'web', containerPort: 81, protocol: 'TCP' }] },
        'z/b': { extraPorts: [{ name: 'web', containerPort: 80, protocol: 'TCP' }] },
      },
    },
    policies: [netpol('x', 'egress-web', { podSelector: onlyPod('a'), policyTypes: ['Egress'], egress: [{ ports: [{ port: 'web' }] }] })],
    expect: (r) => {
      r.egress.isolate('x/a');
      r.egress.allow('x/a', 'y/a', { protocol: 'tcp', ports: [81] });
      r.egress.allow('x/a', 'z/b', { protocol: 'tcp', ports: [80] });
    },
  },
  {
    name: 'endPort ranges',
    policies: [netpol('x', 'ranges', {
      podSelector: onlyPod('a'),
      ingress: [{ ports: [{ protocol: 'TCP', port: 79, endPort: 80 }, { protocol: 'UDP', port: 81, endPort: 90 }] }],
    })],
    expect: (r) => {
      r.ingress.isolate('x/a');
      r.ingress.allow('*', 'x/a', { protocol: 'tcp', ports: [80] });
      r.ingress.allow('*', 'x/a', { protocol: 'udp', ports: [81] });
    },
  },
  {
    name: 'egress ports with missing to = any destination',
    policies: [netpol('x', 'egress-80', { podSelector: ALL, policyTypes: ['Egress'], egress: [{ ports: [{ protocol: 'TCP', port: 80 }] }] })],
    expect: (r) => r.egress.isolate('x/*').allow('x/*', '*', { protocol: 'tcp', ports: [80] }),
  },
  {
    name: 'egress to a pod in another namespace on one UDP port',
    policies: [netpol('x', 'egress-z-c', {
      podSelector: ALL, policyTypes: ['Egress'], egress: [{ to: [podIn('z', 'c')], ports: [{ protocol: 'UDP', port: 80 }] }],
    })],
    expect: (r) => r.egress.isolate('x/*').allow('x/*', 'z/c', { protocol: 'udp', ports: [80] }),
  },
  // --- combinations ------------------------------------------------------------------------
  {
    name: 'ingress and egress policies on both ends must both allow',
    core: true,
    policies: [
      netpol('x', 'a-egress-to-y', { podSelector: onlyPod('a'), policyTypes: ['Egress'], egress: [{ to: [ns('y')] }] }),
      netpol('y', 'b-ingress-from-z', { podSelector: onlyPod('b'), ingress: [{ from: [ns('z')] }] }),
    ],
    expect: (r) => {
      r.egress.isolate('x/a').allow('x/a', 'y/*');
      r.ingress.isolate('y/b').allow('z/*', 'y/b');
    },
  },
  {
    name: 'several policies selecting one pod allow the union',
    core: true,
    policies: [
      netpol('x', 'from-y-80', { podSelector: onlyPod('a'), ingress: [{ from: [ns('y')], ports: [{ port: 80 }] }] }),
      netpol('x', 'from-z-b', { podSelector: onlyPod('a'), ingress: [{ from: [podIn('z', 'b')] }] }),
      netpol('x', 'deny-rest', { podSelector: ALL, policyTypes: ['Ingress'], ingress: [] }),
    ],
    expect: (r) => {
      r.ingress.isolate('x/*');
      r.ingress.allow('y/*', 'x/a', { protocol: 'tcp', ports: [80] });
      r.ingress.allow('z/b', 'x/a');
    },
  },
  {
    name: 'replies to allowed connections pass both ways (conntrack)',
    core: true,
    policies: [netpol('x', 'narrow', {
      podSelector: onlyPod('a'),
      policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [podIn('z', 'c')], ports: [{ protocol: 'UDP', port: 81 }] }],
      egress: [{ to: [podIn('y', 'b')], ports: [{ protocol: 'TCP', port: 80 }] }],
    })],
    expect: (r) => {
      r.ingress.isolate('x/a').allow('z/c', 'x/a', { protocol: 'udp', ports: [81] });
      r.egress.isolate('x/a').allow('x/a', 'y/b', { protocol: 'tcp', ports: [80] });
    },
  },
  {
    name: 'traffic from the node to its pods passes every isolation',
    core: true,
    policies: ['x', 'y', 'z'].map((n) => netpol(n, 'deny-all', { podSelector: ALL, policyTypes: ['Ingress', 'Egress'] })),
    expect: (r) => {
      r.ingress.isolate('*');
      r.egress.isolate('*');
    },
  },
  // --- the cluster around the node ---------------------------------------------------------
  {
    name: 'a policy in a namespace with no pods; peers from a namespace with no pods',
    tweaks: { extraNamespaces: ['w'] },
    policies: [
      netpol('w', 'deny-all', { podSelector: ALL, policyTypes: ['Ingress', 'Egress'] }),
      netpol('x', 'from-w', { podSelector: ALL, ingress: [{ from: [ns('w')] }] }),
    ],
    expect: (r) => r.ingress.isolate('x/*'),
  },
  {
    name: 'pods on another node are peers, not targets',
    tweaks: { pods: { 'z/a': { nodeName: 'nfk-node-2' }, 'z/b': { nodeName: 'nfk-node-2' }, 'z/c': { nodeName: 'nfk-node-2' } } },
    policies: [
      netpol('z', 'deny-all', { podSelector: ALL, policyTypes: ['Ingress', 'Egress'] }),
      netpol('x', 'from-z-a', { podSelector: ALL, ingress: [{ from: [podIn('z', 'a')] }] }),
    ],
    expect: (r) => r.ingress.isolate('x/*').allow('z/a', 'x/*'),
  },
  {
    name: 'hostNetwork pods and pods without an IP are never targets',
    tweaks: (t) => ({
      extraObjects: [
        pod({ namespace: 'y', name: 'h', ips: [t.nodeIPv4, t.nodeIPv6] }, { nodeName: 'nfk-node-1', hostNetwork: true }),
        pod({ namespace: 'y', name: 'p', ips: [] }, { nodeName: 'nfk-node-1', phase: 'Pending' }),
      ],
    }),
    policies: [
      netpol('y', 'same-ns', { podSelector: ALL, ingress: [{ from: [{ podSelector: ALL }] }] }),
      netpol('x', 'from-y', { podSelector: ALL, ingress: [{ from: [ns('y')] }] }),
    ],
    expect: (r) => {
      r.ingress.isolate('y/*').allow('y/*', 'y/*');
      r.ingress.isolate('x/*').allow('y/*', 'x/*');
    },
  },
];
