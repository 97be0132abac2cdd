/** The ClusterNetworkPolicy conformance suite of kubernetes-sigs/network-policy-api
 * (conformance/tests, v0.2.x: the CNPAdminTier* and CNPBaselineTier* tests), ported as truth-table
 * cases: the upstream houses (namespaces network-policy-conformance-<house> labelled
 * conformance-house=<house>, two pods each, serving TCP 80 and 8080, UDP 53 and 5353, SCTP 9003
 * and 9005, with named ports web = TCP 80 and dns = UDP 53), each test's policies written out here,
 * and each subtest as a step: the change the subtest makes to the objects (changes stay for the
 * later subtests, as upstream patches them in place) and its pokes with the expected answer. */
import type { K8sObject } from './manifests';
import { clusterNetworkPolicy, type Action, type ClusterNetworkPolicy, type CnpPeer, type CnpProtocol, type CnpRule, type Tier } from '../helpers/cnp-spec';
import { NODE, type Protocol } from '../helpers/prober';

export const HOUSES = ['gryffindor', 'slytherin', 'hufflepuff', 'ravenclaw'] as const;
export type House = (typeof HOUSES)[number];
export const HOUSE_PODS: Record<House, string> = { gryffindor: 'harry-potter', slytherin: 'draco-malfoy', hufflepuff: 'cedric-diggory', ravenclaw: 'luna-lovegood' };
export const houseNamespace = (h: string): string => `network-policy-conformance-${h}`;
export const CNP_PORTS = { tcp: [80, 8080], udp: [53, 5353], sctp: [9003, 9005] };

/** The objects a step works on; a step's change edits them in place. */
export interface CnpState {
  clusterPolicies: ClusterNetworkPolicy[];
  networkPolicies: K8sObject[];
  /** Labels replacing a namespace's own (beyond kubernetes.io/metadata.name). */
  namespaceLabels: Record<string, Record<string, string>>;
}

/** One upstream PokeServer: `FROM-POD -> TO-POD PROTO/PORT allow|deny` with upstream pod names. */
export type Poke = string;

export interface CnpStep {
  /** The upstream t.Run name. */
  name: string;
  change?(s: CnpState): void;
  pokes: Poke[];
}

export interface CnpCase {
  /** The upstream ShortName. */
  test: string;
  feature?: 'NamedPorts' | 'EgressNodePeers';
  policies: ClusterNetworkPolicy[];
  networkPolicies?: K8sObject[];
  steps: CnpStep[];
}

export interface ParsedPoke {
  from: string;
  to: string;
  protocol: Protocol;
  port: number;
  allowed: boolean;
}

/** `harry-potter-0` -> `network-policy-conformance-gryffindor/harry-potter-0`; the host-network
 * centaurs of forbidden-forrest live in the node, so `centaur-N` is the node's own target. */
export function podId(name: string): string {
  if (/^centaur-\d$/.test(name)) return NODE;
  const house = HOUSES.find((h) => name.startsWith(`${HOUSE_PODS[h]}-`));
  if (!house) throw new Error(`no house has pod ${name}`);
  return `${houseNamespace(house)}/${name}`;
}

export function parsePoke(p: Poke): ParsedPoke {
  const m = /^(\S+) -> (\S+) (tcp|udp|sctp)\/(\d+) (allow|deny)$/.exec(p);
  if (!m) throw new Error(`bad poke: ${p}`);
  return { from: podId(m[1]), to: podId(m[2]), protocol: m[3] as Protocol, port: Number(m[4]), allowed: m[5] === 'allow' };
}

// --- policy builders ----------------------------------------------------------------------------

const byName = (h: string) => ({ matchLabels: { 'kubernetes.io/metadata.name': houseNamespace(h) } });
const byHouse = (h: string) => ({ matchLabels: { 'conformance-house': h } });
const nsPeer = (h: string): CnpPeer => ({ namespaces: byName(h) });
const housePods = (h: string) => ({ namespaceSelector: byHouse(h), podSelector: byHouse(h) });
const port = (proto: Protocol, n: number): CnpProtocol => ({ [proto]: { destinationPort: { number: n } } });

function rule(dir: 'ingress' | 'egress', name: string, action: Action, peers: CnpPeer[], protocols?: CnpProtocol[]): CnpRule {
  return { name, action, ...(dir === 'ingress' ? { from: peers } : { to: peers }), ...(protocols ? { protocols } : {}) };
}

interface ProtocolLayout {
  subject: House;
  /** The house every Accept/Deny/Pass "everything" rule names. */
  everything: House;
  /** slytherin's port (Deny, Pass) and the last house's Accept port (then Deny the rest). */
  denied: CnpProtocol[];
  accepted: House;
  acceptedPorts: CnpProtocol[];
}

/** The upstream single-protocol and "gress" layout: Admin has 7 rules (Accept, Deny, Pass
 * everything from one house; Deny, Pass slytherin at a port; Accept the last house at a port, Deny
 * it the rest), Baseline the same without the Pass rules. */
function layoutRules(tier: Tier, dir: 'ingress' | 'egress', l: ProtocolLayout, portsName: (verb: string, which: 'denied' | 'accepted') => string): CnpRule[] {
  const to = dir === 'ingress' ? 'from' : 'to';
  const all: CnpRule[] = [
    rule(dir, `allow-${to}-${l.everything}-everything`, 'Accept', [nsPeer(l.everything)]),
    rule(dir, `deny-${to}-${l.everything}-everything`, 'Deny', [nsPeer(l.everything)]),
    rule(dir, `pass-${to}-${l.everything}-everything`, 'Pass', [nsPeer(l.everything)]),
    rule(dir, portsName(`deny-${to}-slytherin`, 'denied'), 'Deny', [nsPeer('slytherin')], l.denied),
    rule(dir, portsName(`pass-${to}-slytherin`, 'denied'), 'Pass', [nsPeer('slytherin')], l.denied),
    rule(dir, portsName(`allow-${to}-${l.accepted}`, 'accepted'), 'Accept', [nsPeer(l.accepted)], l.acceptedPorts),
    rule(dir, `deny-${to}-${l.accepted}-everything-else`, 'Deny', [nsPeer(l.accepted)]),
  ];
  return tier === 'Admin' ? all : all.filter((r) => r.action !== 'Pass');
}

const LAYOUTS: Record<'ingress' | 'egress', Record<Protocol, ProtocolLayout & { priority: number }>> = {
  ingress: {
    tcp: { priority: 3, subject: 'gryffindor', everything: 'ravenclaw', denied: [port('tcp', 80)], accepted: 'hufflepuff', acceptedPorts: [port('tcp', 80)] },
    udp: { priority: 4, subject: 'hufflepuff', everything: 'ravenclaw', denied: [port('udp', 5353)], accepted: 'gryffindor', acceptedPorts: [port('udp', 53)] },
    sctp: { priority: 5, subject: 'ravenclaw', everything: 'gryffindor', denied: [port('sctp', 9003)], accepted: 'hufflepuff', acceptedPorts: [port('sctp', 9003)] },
  },
  egress: {
    tcp: { priority: 6, subject: 'gryffindor', everything: 'ravenclaw', denied: [port('tcp', 80)], accepted: 'hufflepuff', acceptedPorts: [port('tcp', 8080)] },
    udp: { priority: 7, subject: 'hufflepuff', everything: 'ravenclaw', denied: [port('udp', 5353)], accepted: 'gryffindor', acceptedPorts: [port('udp', 53)] },
    sctp: { priority: 8, subject: 'ravenclaw', everything: 'gryffindor', denied: [port('sctp', 9003)], accepted: 'hufflepuff', acceptedPorts: [port('sctp', 9003)] },
  },
};

const portOf = (p: CnpProtocol): number => (p.tcp ?? p.udp ?? p.sctp)!.destinationPort!.number!;

function protocolPolicy(tier: Tier, dir: 'ingress' | 'egress', proto: Protocol): ClusterNetworkPolicy {
  const l = LAYOUTS[dir][proto];
  const named = (verb: string, which: 'denied' | 'accepted') => `${verb}-at-port-${portOf((which === 'denied' ? l.denied : l.acceptedPorts)[0])}`;
  return clusterNetworkPolicy(tier === 'Admin' ? `${dir}-${proto}` : 'default', {
    tier,
    priority: tier === 'Admin' ? l.priority : 10,
    subject: { namespaces: byName(l.subject) },
    [dir]: layoutRules(tier, dir, l, named),
  });
}

function gressPolicy(tier: Tier): ClusterNetworkPolicy {
  const denied = [port('tcp', 80), port('udp', 53), port('sctp', 9003)];
  const base = { subject: 'gryffindor' as const, everything: 'ravenclaw' as const, denied, accepted: 'hufflepuff' as const };
  const named = (verb: string) => `${verb}-at-ports`;
  return clusterNetworkPolicy(tier === 'Admin' ? 'gress-rules' : 'default', {
    tier,
    priority: tier === 'Admin' ? 15 : 10,
    subject: { namespaces: byName('gryffindor') },
    ingress: layoutRules(tier, 'ingress', { ...base, acceptedPorts: [port('tcp', 80), port('udp', 5353), port('sctp', 9003)] }, named),
    egress: layoutRules(tier, 'egress', { ...base, acceptedPorts: [port('tcp', 8080), port('udp', 5353), port('sctp', 9003)] }, named),
  });
}

function inlineCidrPolicy(tier: Tier): ClusterNetworkPolicy {
  return clusterNetworkPolicy(tier === 'Admin' ? 'inline-cidr-as-peers-example' : 'default', {
    tier,
    priority: tier === 'Admin' ? 85 : 10,
    subject: tier === 'Admin' ? { pods: housePods('gryffindor') } : { namespaces: byName('gryffindor') },
    egress: [
      rule('egress', 'allow-egress-to-slytherin', 'Accept', [{ pods: housePods('slytherin') }]),
      rule('egress', 'deny-egress-to-internet', 'Deny', [{ networks: ['0.0.0.0/0', '::/0'] }]),
    ],
  });
}

// --- changes a subtest makes ----------------------------------------------------------------------

function policy(s: CnpState, name: string): ClusterNetworkPolicy {
  const p = s.clusterPolicies.find((c) => c.metadata.name === name);
  if (!p) throw new Error(`no ClusterNetworkPolicy ${name}`);
  return p;
}

const swap = (name: string, dir: 'ingress' | 'egress', i: number, j: number) => (s: CnpState): void => {
  const rules = policy(s, name).spec[dir]!;
  [rules[i], rules[j]] = [rules[j], rules[i]];
};

const namedPort = (name: string, dir: 'ingress' | 'egress', i: number, portName: string) => (s: CnpState): void => {
  policy(s, name).spec[dir]![i].protocols = [{ destinationNamedPort: portName }];
};

// --- the pokes of the single-protocol tests ----------------------------------------------------------

/** The Admin-tier single-protocol test: six subtests (allow, allow at port, deny by swapping rules
 * 0 and 1, deny at port, pass by swapping 0 and 2, pass at port by swapping 3 and 4). */
function adminProtocolCase(dir: 'ingress' | 'egress', proto: Protocol, pokes: Poke[][]): CnpCase {
  const name = `${dir}-${proto}`;
  const label = `${dir}`;
  const P = proto.toUpperCase();
  return {
    test: `CNPAdminTier${dir === 'ingress' ? 'Ingress' : 'Egress'}${P}`,
    policies: [protocolPolicy('Admin', dir, proto)],
    steps: [
      { name: `Should support an 'allow-${label}' policy for ${P} protocol; ensure rule ordering is respected`, pokes: pokes[0] },
      { name: `Should support an 'allow-${label}' policy for ${P} protocol at the specified port`, pokes: pokes[1] },
      { name: `Should support an 'deny-${label}' policy for ${P} protocol; ensure rule ordering is respected`, change: swap(name, dir, 0, 1), pokes: pokes[2] },
      { name: `Should support a 'deny-${label}' policy for ${P} protocol at the specified port`, pokes: pokes[3] },
      { name: `Should support an 'pass-${label}' policy for ${P} protocol; ensure rule ordering is respected`, change: swap(name, dir, 0, 2), pokes: pokes[4] },
      { name: `Should support a 'pass-${label}' policy for ${P} protocol at the specified port`, change: swap(name, dir, 3, 4), pokes: pokes[5] },
    ],
  };
}

/** The Baseline-tier single-protocol test: the first four subtests of the Admin one. */
function baselineProtocolCase(dir: 'ingress' | 'egress', proto: Protocol, pokes: Poke[][]): CnpCase {
  const admin = adminProtocolCase(dir, proto, [...pokes, [], []]);
  return {
    test: admin.test.replace('AdminTier', 'BaselineTier'),
    policies: [protocolPolicy('Baseline', dir, proto)],
    steps: admin.steps.slice(0, 4).map((s, i) => (i === 2 ? { ...s, change: swap('default', dir, 0, 1) } : s)),
  };
}

const INGRESS_TCP: Poke[][] = [
  ['luna-lovegood-0 -> harry-potter-0 tcp/80 allow', 'luna-lovegood-1 -> harry-potter-0 tcp/8080 allow'],
  ['cedric-diggory-0 -> harry-potter-1 tcp/80 allow', 'cedric-diggory-1 -> harry-potter-1 tcp/8080 deny'],
  ['luna-lovegood-0 -> harry-potter-1 tcp/80 deny', 'luna-lovegood-1 -> harry-potter-1 tcp/8080 deny'],
  ['draco-malfoy-0 -> harry-potter-0 tcp/80 deny', 'draco-malfoy-1 -> harry-potter-0 tcp/8080 allow'],
  ['luna-lovegood-0 -> harry-potter-0 tcp/80 allow', 'luna-lovegood-1 -> harry-potter-0 tcp/8080 allow'],
  ['draco-malfoy-0 -> harry-potter-0 tcp/80 allow', 'draco-malfoy-1 -> harry-potter-0 tcp/8080 allow'],
];
const INGRESS_UDP: Poke[][] = [
  ['luna-lovegood-0 -> cedric-diggory-0 udp/53 allow', 'luna-lovegood-1 -> cedric-diggory-0 udp/5353 allow'],
  ['harry-potter-0 -> cedric-diggory-1 udp/53 allow', 'harry-potter-1 -> cedric-diggory-1 udp/5353 deny'],
  ['luna-lovegood-0 -> cedric-diggory-1 udp/53 deny', 'luna-lovegood-1 -> cedric-diggory-1 udp/5353 deny'],
  ['draco-malfoy-0 -> cedric-diggory-0 udp/5353 deny', 'draco-malfoy-1 -> cedric-diggory-0 udp/53 allow'],
  ['luna-lovegood-0 -> cedric-diggory-1 udp/5353 allow', 'luna-lovegood-1 -> cedric-diggory-1 udp/53 allow'],
  ['draco-malfoy-0 -> cedric-diggory-0 udp/5353 allow', 'draco-malfoy-1 -> cedric-diggory-0 udp/53 allow'],
];
const INGRESS_SCTP: Poke[][] = [
  ['harry-potter-0 -> luna-lovegood-0 sctp/9003 allow', 'harry-potter-1 -> luna-lovegood-0 sctp/9005 allow'],
  ['cedric-diggory-0 -> luna-lovegood-1 sctp/9003 allow', 'cedric-diggory-1 -> luna-lovegood-1 sctp/9005 deny'],
  ['harry-potter-0 -> luna-lovegood-1 sctp/9003 deny', 'harry-potter-1 -> luna-lovegood-1 sctp/9005 deny'],
  ['draco-malfoy-0 -> luna-lovegood-0 sctp/9003 deny', 'draco-malfoy-1 -> luna-lovegood-0 sctp/9005 allow'],
  ['harry-potter-0 -> luna-lovegood-1 sctp/9003 allow', 'harry-potter-1 -> luna-lovegood-1 sctp/9005 allow'],
  ['draco-malfoy-0 -> luna-lovegood-0 sctp/9003 allow', 'draco-malfoy-1 -> luna-lovegood-0 sctp/9005 allow'],
];
const EGRESS_TCP: Poke[][] = [
  ['harry-potter-0 -> luna-lovegood-0 tcp/80 allow', 'harry-potter-1 -> luna-lovegood-0 tcp/8080 allow'],
  ['harry-potter-0 -> cedric-diggory-1 tcp/8080 allow', 'harry-potter-1 -> cedric-diggory-1 tcp/80 deny'],
  ['harry-potter-0 -> luna-lovegood-1 tcp/80 deny', 'harry-potter-1 -> luna-lovegood-1 tcp/8080 deny'],
  ['harry-potter-0 -> draco-malfoy-0 tcp/80 deny', 'harry-potter-1 -> draco-malfoy-0 tcp/8080 allow'],
  ['harry-potter-0 -> luna-lovegood-0 tcp/80 allow', 'harry-potter-1 -> luna-lovegood-0 tcp/8080 allow'],
  ['harry-potter-0 -> draco-malfoy-0 tcp/80 allow', 'harry-potter-1 -> draco-malfoy-0 tcp/8080 allow'],
];
const EGRESS_UDP: Poke[][] = [
  ['cedric-diggory-0 -> luna-lovegood-0 udp/53 allow', 'cedric-diggory-1 -> luna-lovegood-0 udp/5353 allow'],
  ['cedric-diggory-0 -> harry-potter-1 udp/53 allow', 'cedric-diggory-1 -> harry-potter-1 udp/5353 deny'],
  ['cedric-diggory-0 -> luna-lovegood-1 udp/53 deny', 'cedric-diggory-1 -> luna-lovegood-1 udp/5353 deny'],
  ['cedric-diggory-0 -> draco-malfoy-0 udp/5353 deny', 'cedric-diggory-1 -> draco-malfoy-0 udp/53 allow'],
  ['cedric-diggory-0 -> luna-lovegood-1 udp/5353 allow', 'cedric-diggory-1 -> luna-lovegood-1 udp/53 allow'],
  ['cedric-diggory-0 -> draco-malfoy-0 udp/5353 allow', 'cedric-diggory-1 -> draco-malfoy-0 udp/53 allow'],
];
const EGRESS_SCTP: Poke[][] = [
  ['luna-lovegood-0 -> harry-potter-0 sctp/9003 allow', 'luna-lovegood-1 -> harry-potter-0 sctp/9005 allow'],
  ['luna-lovegood-0 -> cedric-diggory-1 sctp/9003 allow', 'luna-lovegood-1 -> cedric-diggory-1 sctp/9005 deny'],
  ['luna-lovegood-0 -> harry-potter-1 sctp/9003 deny', 'luna-lovegood-1 -> harry-potter-1 sctp/9005 deny'],
  ['luna-lovegood-0 -> draco-malfoy-0 sctp/9003 deny', 'luna-lovegood-1 -> draco-malfoy-0 sctp/9005 allow'],
  ['luna-lovegood-0 -> harry-potter-1 sctp/9003 allow', 'luna-lovegood-1 -> harry-potter-1 sctp/9005 allow'],
  ['luna-lovegood-0 -> draco-malfoy-0 sctp/9003 allow', 'luna-lovegood-1 -> draco-malfoy-0 sctp/9005 allow'],
];

/** Every port of the three protocols from one client pod to one server, with one verdict. */
const allProtocols = (from: string, to: string, verdict: 'allow' | 'deny'): Poke[] =>
  ['tcp/80', 'udp/53', 'sctp/9003'].map((p) => `${from} -> ${to} ${p} ${verdict}`);

function gressCase(tier: Tier): CnpCase {
  const name = tier === 'Admin' ? 'gress-rules' : 'default';
  const steps: CnpStep[] = [
    {
      name: "Should support an 'allow-gress' policy across different protocols",
      pokes: [
        'harry-potter-0 -> luna-lovegood-0 tcp/80 allow', 'harry-potter-1 -> luna-lovegood-0 udp/53 allow', 'harry-potter-0 -> luna-lovegood-0 sctp/9003 allow',
        'luna-lovegood-0 -> harry-potter-0 tcp/80 allow', 'luna-lovegood-1 -> harry-potter-0 udp/53 allow', 'luna-lovegood-1 -> harry-potter-0 sctp/9003 allow',
      ],
    },
    {
      name: "Should support an 'allow-gress' policy across different protocols at the specified ports",
      pokes: [
        'harry-potter-0 -> cedric-diggory-1 tcp/8080 allow', 'harry-potter-1 -> cedric-diggory-1 tcp/80 deny',
        'harry-potter-0 -> cedric-diggory-1 udp/5353 allow', 'harry-potter-1 -> cedric-diggory-1 udp/53 deny',
        'harry-potter-0 -> cedric-diggory-1 sctp/9003 allow', 'harry-potter-1 -> cedric-diggory-1 sctp/9005 deny',
        'cedric-diggory-0 -> harry-potter-1 tcp/80 allow', 'cedric-diggory-1 -> harry-potter-1 tcp/8080 deny',
        'cedric-diggory-0 -> harry-potter-1 udp/5353 allow', 'cedric-diggory-1 -> harry-potter-1 udp/53 deny',
        'cedric-diggory-0 -> harry-potter-1 sctp/9003 allow', 'cedric-diggory-1 -> harry-potter-1 sctp/9005 deny',
      ],
    },
    {
      name: "Should support an 'deny-gress' policy across different protocols",
      change: (s) => {
        swap(name, 'egress', 0, 1)(s);
        swap(name, 'ingress', 0, 1)(s);
      },
      pokes: [
        'harry-potter-0 -> luna-lovegood-1 tcp/80 deny', 'harry-potter-1 -> luna-lovegood-1 udp/53 deny', 'harry-potter-0 -> luna-lovegood-1 sctp/9003 deny',
        'luna-lovegood-0 -> harry-potter-1 tcp/80 deny', 'luna-lovegood-1 -> harry-potter-1 udp/53 deny', 'luna-lovegood-1 -> harry-potter-1 sctp/9003 deny',
      ],
    },
    {
      name: "Should support a 'deny-gress' policy across different protocols at the specified ports",
      pokes: [
        'harry-potter-0 -> draco-malfoy-0 tcp/80 deny', 'harry-potter-1 -> draco-malfoy-0 tcp/8080 allow',
        'harry-potter-0 -> draco-malfoy-0 udp/53 deny', 'harry-potter-1 -> draco-malfoy-0 udp/5353 allow',
        'harry-potter-0 -> draco-malfoy-0 sctp/9003 deny', 'harry-potter-1 -> draco-malfoy-0 sctp/9005 allow',
        'draco-malfoy-0 -> harry-potter-0 tcp/80 deny', 'draco-malfoy-1 -> harry-potter-0 tcp/8080 allow',
        'draco-malfoy-0 -> harry-potter-0 udp/53 deny', 'draco-malfoy-1 -> harry-potter-0 udp/5353 allow',
        'draco-malfoy-0 -> harry-potter-0 sctp/9003 deny', 'draco-malfoy-1 -> harry-potter-0 sctp/9005 allow',
      ],
    },
  ];
  if (tier === 'Admin') {
    steps.push(
      {
        name: "Should support an 'pass-gress' policy across different protocols",
        change: (s) => {
          swap(name, 'egress', 0, 2)(s);
          swap(name, 'ingress', 0, 2)(s);
        },
        pokes: [
          'harry-potter-0 -> luna-lovegood-0 tcp/80 allow', 'harry-potter-0 -> luna-lovegood-0 udp/5353 allow', 'harry-potter-0 -> luna-lovegood-0 sctp/9003 allow',
          'luna-lovegood-0 -> harry-potter-0 tcp/80 allow', 'luna-lovegood-1 -> harry-potter-0 udp/53 allow', 'luna-lovegood-1 -> harry-potter-0 sctp/9003 allow',
        ],
      },
      {
        name: "Should support a 'pass-gress' policy across different protocols at the specified ports",
        change: (s) => {
          swap(name, 'egress', 3, 4)(s);
          swap(name, 'ingress', 3, 4)(s);
        },
        pokes: [
          'harry-potter-0 -> draco-malfoy-0 tcp/80 allow', 'harry-potter-1 -> draco-malfoy-0 tcp/8080 allow',
          'harry-potter-0 -> draco-malfoy-0 udp/53 allow', 'harry-potter-1 -> draco-malfoy-0 udp/5353 allow',
          'harry-potter-0 -> draco-malfoy-0 sctp/9003 allow', 'harry-potter-1 -> draco-malfoy-0 sctp/9005 allow',
          'draco-malfoy-0 -> harry-potter-0 tcp/80 allow', 'draco-malfoy-1 -> harry-potter-0 tcp/8080 allow',
          'draco-malfoy-0 -> harry-potter-0 udp/53 allow', 'draco-malfoy-1 -> harry-potter-0 udp/5353 allow',
          'draco-malfoy-0 -> harry-potter-0 sctp/9003 allow', 'draco-malfoy-1 -> harry-potter-0 sctp/9005 allow',
        ],
      },
    );
  }
  return { test: `CNP${tier}TierGress`, policies: [gressPolicy(tier)], steps };
}

/** The pod addresses of the CIDR subtest (the topology's, filled in by the runner). */
export interface PodAddresses {
  ipv4(pod: string): string;
  ipv6(pod: string): string;
}

function inlineCidrCase(tier: Tier, addresses: PodAddresses): CnpCase {
  const name = tier === 'Admin' ? 'inline-cidr-as-peers-example' : 'default';
  const slytherinLabels = (house: string) => (s: CnpState): void => {
    s.namespaceLabels[houseNamespace('slytherin')] = { 'conformance-house': house };
  };
  return {
    test: `CNP${tier}TierEgressInlineCIDRPeers`,
    policies: [inlineCidrPolicy(tier)],
    steps: [
      {
        name: "Should support a 'deny-egress' rule policy for egress-cidr-peer",
        pokes: [...allProtocols('harry-potter-1', 'luna-lovegood-0', 'deny'), ...allProtocols('harry-potter-1', 'cedric-diggory-0', 'deny'),
          ...allProtocols('harry-potter-1', 'draco-malfoy-0', 'allow')],
      },
      // Upstream changes the label and pokes, then changes it back and pokes again, in one subtest.
      { name: "Should support a 'deny-egress' rule policy for egress-cidr-peer (slytherin relabelled)", change: slytherinLabels('denied-namespace-label'), pokes: allProtocols('harry-potter-1', 'draco-malfoy-0', 'deny') },
      { name: "Should support a 'deny-egress' rule policy for egress-cidr-peer (slytherin label restored)", change: slytherinLabels('slytherin'), pokes: allProtocols('harry-potter-1', 'draco-malfoy-0', 'allow') },
      {
        name: "Should support an 'allow-egress' rule policy for egress-cidr-peer",
        change: (s) => {
          const p = policy(s, name);
          // Upstream adds /32 or /128 of the IP family its cluster runs; the port runs both.
          const hosts = ['luna-lovegood-0', 'cedric-diggory-0'].map(podId);
          p.spec.egress!.unshift(rule('egress', 'allow-egress-to-specific-podIPs', 'Accept',
            [{ networks: [...hosts.map((h) => `${addresses.ipv4(h)}/32`), ...hosts.map((h) => `${addresses.ipv6(h)}/128`)] }]));
        },
        pokes: [...allProtocols('harry-potter-1', 'luna-lovegood-0', 'allow'), ...allProtocols('harry-potter-1', 'cedric-diggory-0', 'allow'),
          ...allProtocols('harry-potter-1', 'luna-lovegood-1', 'deny'), ...allProtocols('harry-potter-1', 'cedric-diggory-1', 'deny')],
      },
    ],
  };
}

const SLYTHERIN_PODS: CnpPeer = { pods: housePods('slytherin') };

function priorityCase(): CnpCase {
  const gryffindor = { pods: housePods('gryffindor') };
  const both = (name: string, action: Action, ingressName: string, egressName: string) => ({
    ingress: [rule('ingress', ingressName, action, [SLYTHERIN_PODS])],
    egress: [rule('egress', egressName, action, [SLYTHERIN_PODS])],
    subject: gryffindor,
    name,
  });
  const p = (tier: Tier, priority: number, x: ReturnType<typeof both>) => clusterNetworkPolicy(x.name, { tier, priority, subject: x.subject, ingress: x.ingress, egress: x.egress });
  return {
    test: 'CNPAdminTierPriorityField',
    policies: [
      p('Admin', 50, both('priority-50-example', 'Deny', 'deny-all-ingress-from-slytherin', 'deny-all-egress-to-slytherin')),
      p('Admin', 60, both('old-priority-60-new-priority-40-example', 'Pass', 'pass-all-ingress-from-slytherin', 'pass-all-egress-to-slytherin')),
      p('Baseline', 10, both('default', 'Accept', 'allow-all-ingress-from-slytherin', 'allow-all-egress-to-slytherin')),
    ],
    steps: [
      { name: 'Should Deny traffic from slytherin to gryffindor respecting admin CNP', pokes: ['draco-malfoy-0 -> harry-potter-0 tcp/80 deny', 'draco-malfoy-1 -> harry-potter-0 tcp/8080 deny'] },
      { name: 'Should Deny traffic to slytherin from gryffindor respecting admin CNP', pokes: ['harry-potter-0 -> draco-malfoy-0 tcp/80 deny', 'harry-potter-1 -> draco-malfoy-0 tcp/8080 deny'] },
      {
        name: 'Should respect admin CNP priority field; thus passing both ingress and egress traffic over to baseline CNP',
        change: (s) => void (policy(s, 'old-priority-60-new-priority-40-example').spec.priority = 40),
        pokes: ['draco-malfoy-0 -> harry-potter-0 tcp/80 allow', 'draco-malfoy-1 -> harry-potter-0 tcp/8080 allow',
          'harry-potter-0 -> draco-malfoy-0 tcp/80 allow', 'harry-potter-1 -> draco-malfoy-0 tcp/8080 allow'],
      },
    ],
  };
}

function integrationCase(): CnpCase {
  const subject = { namespaces: byHouse('gryffindor') };
  const slytherinNs: CnpPeer = { namespaces: byHouse('slytherin') };
  const denyBoth = (name: string, tier: Tier) => clusterNetworkPolicy(name, {
    tier, priority: 10, subject,
    ingress: [rule('ingress', 'deny-all-ingress-from-slytherin', 'Deny', [slytherinNs])],
    egress: [rule('egress', 'deny-all-egress-to-slytherin', 'Deny', [slytherinNs])],
  });
  const np: K8sObject = {
    apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy',
    metadata: { name: 'allow-gress-from-to-slytherin-to-gryffindor', namespace: houseNamespace('gryffindor') },
    spec: {
      podSelector: {}, policyTypes: ['Ingress', 'Egress'],
      ingress: [{ from: [{ namespaceSelector: byHouse('slytherin') }] }],
      egress: [{ to: [{ namespaceSelector: byHouse('slytherin') }] }],
    },
  };
  const passRule = (dir: 'ingress' | 'egress') => (s: CnpState): void => void (policy(s, 'pass-example').spec[dir]![0].action = 'Pass');
  return {
    test: 'CNPAdminTierIntegration',
    policies: [denyBoth('pass-example', 'Admin'), denyBoth('default', 'Baseline')],
    networkPolicies: [np],
    steps: [
      { name: 'Should Deny traffic from slytherin to gryffindor respecting admin CNP', pokes: ['draco-malfoy-0 -> harry-potter-0 tcp/80 deny', 'draco-malfoy-1 -> harry-potter-0 tcp/8080 deny'] },
      { name: 'Should Deny traffic to slytherin from gryffindor respecting admin CNP', pokes: ['harry-potter-0 -> draco-malfoy-0 tcp/80 deny', 'harry-potter-1 -> draco-malfoy-0 tcp/8080 deny'] },
      { name: "Should support a 'pass-ingress' policy for admin CNP and respect the match for network policy", change: passRule('ingress'),
        pokes: ['draco-malfoy-0 -> harry-potter-0 tcp/80 allow', 'draco-malfoy-1 -> harry-potter-0 tcp/8080 allow'] },
      { name: "Should support a 'pass-egress' policy for admin CNP and respect the match for network policy", change: passRule('egress'),
        pokes: ['harry-potter-0 -> draco-malfoy-0 tcp/80 allow', 'harry-potter-1 -> draco-malfoy-0 tcp/8080 allow'] },
      { name: "Should support a 'pass-ingress' policy for admin CNP and respect the match for baseline cluster network policy",
        change: (s) => void (s.networkPolicies = []),
        pokes: ['draco-malfoy-0 -> harry-potter-0 tcp/80 deny', 'draco-malfoy-1 -> harry-potter-0 tcp/8080 deny'] },
      { name: "Should support a 'pass-egress' policy for admin CNP and respect the match for baseline cluster network policy",
        pokes: ['harry-potter-0 -> draco-malfoy-0 tcp/80 deny', 'harry-potter-1 -> draco-malfoy-0 tcp/8080 deny'] },
    ],
  };
}

function namedPortCases(): CnpCase[] {
  return [
    {
      test: 'CNPAdminTierEgressNamedPort', feature: 'NamedPorts', policies: [protocolPolicy('Admin', 'egress', 'tcp')],
      steps: [{ name: "Should support an 'allow-egress' policy for named port", change: namedPort('egress-tcp', 'egress', 5, 'web'),
        pokes: ['harry-potter-0 -> cedric-diggory-1 tcp/80 allow', 'harry-potter-1 -> cedric-diggory-1 tcp/8080 deny'] }],
    },
    {
      test: 'CNPAdminTierIngressNamedPort', feature: 'NamedPorts', policies: [protocolPolicy('Admin', 'ingress', 'udp')],
      steps: [{ name: "Should support an 'allow-ingress' policy for named port", change: namedPort('ingress-udp', 'ingress', 5, 'dns'),
        pokes: ['harry-potter-0 -> cedric-diggory-1 udp/53 allow', 'harry-potter-1 -> cedric-diggory-1 udp/5353 deny'] }],
    },
    {
      test: 'CNPBaselineTierEgressNamedPort', feature: 'NamedPorts', policies: [protocolPolicy('Baseline', 'egress', 'udp')],
      steps: [{ name: "Should support an 'allow-egress' policy for named port", change: namedPort('default', 'egress', 3, 'dns'),
        pokes: ['cedric-diggory-0 -> harry-potter-1 udp/53 allow', 'cedric-diggory-1 -> harry-potter-1 udp/5353 deny'] }],
    },
    {
      test: 'CNPBaselineTierIngressNamedPort', feature: 'NamedPorts', policies: [protocolPolicy('Baseline', 'ingress', 'tcp')],
      steps: [{ name: "Should support an 'allow-ingress' policy for named port", change: namedPort('default', 'ingress', 3, 'web'),
        pokes: ['cedric-diggory-0 -> harry-potter-1 tcp/80 allow', 'cedric-diggory-1 -> harry-potter-1 tcp/8080 deny'] }],
    },
  ];
}

/** The upstream HostNetworkPorts: ports the host-network centaurs serve (TCP [0] and [1], UDP
 * [2] and [4], SCTP [6]); any free ports do. */
export const HOST_NETWORK_PORTS = [34000, 34001, 34002, 34003, 34004, 34005, 34006, 34007];
const HNP = HOST_NETWORK_PORTS;
export const NODE_PEER_PORTS = { tcp: [HNP[0], HNP[1]], udp: [HNP[2], HNP[4]], sctp: [HNP[6]] };

/** The experimental node-peer tests: egress to the host-network centaur on a node. */
export function nodePeerCases(): CnpCase[] {
  const linux = { nodes: { matchLabels: { 'kubernetes.io/os': 'linux' } } };
  const internet: CnpPeer = { networks: ['0.0.0.0/0', '::/0'] };
  return [
    {
      test: 'CNPAdminTierEgressNodePeers', feature: 'EgressNodePeers',
      policies: [clusterNetworkPolicy('node-and-cidr-as-peers-example', {
        tier: 'Admin', priority: 75, subject: { pods: housePods('gryffindor') },
        egress: [
          rule('egress', `allow-egress-to-${HNP[0]}-on-nodes`, 'Accept', [linux], [port('tcp', HNP[0])]),
          rule('egress', `pass-egress-to-${HNP[2]}-on-nodes`, 'Pass', [linux], [port('udp', HNP[2])]),
          rule('egress', 'deny-egress-to-slytherin-and-nodes-and-internet', 'Deny', [{ pods: housePods('slytherin') }, linux, internet]),
        ],
      })],
      steps: [
        { name: "Should support an 'allow-egress' rule policy for egress-node-peer", pokes: [`harry-potter-1 -> centaur-1 tcp/${HNP[0]} allow`] },
        { name: "Should support a 'pass-egress' rule policy for egress-node-peer", pokes: [`harry-potter-1 -> centaur-1 udp/${HNP[2]} allow`] },
        { name: "Should support a 'deny-egress' rule policy for egress-node-peer",
          pokes: [`harry-potter-1 -> centaur-1 tcp/${HNP[1]} deny`, `harry-potter-1 -> centaur-1 udp/${HNP[4]} deny`, `harry-potter-1 -> centaur-1 sctp/${HNP[6]} deny`] },
      ],
    },
    {
      test: 'CNPBaselineTierEgressNodePeers', feature: 'EgressNodePeers',
      policies: [clusterNetworkPolicy('default', {
        tier: 'Baseline', priority: 10, subject: { namespaces: byName('gryffindor') },
        egress: [
          rule('egress', `allow-egress-to-${HNP[0]}-on-nodes`, 'Accept', [linux], [{ tcp: { destinationPort: { range: { start: HNP[0], end: HNP[1] } } } }]),
          rule('egress', 'deny-egress-to-nodes-and-internet', 'Deny', [linux, internet]),
        ],
      })],
      steps: [
        { name: "Should support an 'allow-egress' rule policy for egress-node-peer", pokes: [`harry-potter-0 -> centaur-1 tcp/${HNP[0]} allow`, `harry-potter-1 -> centaur-1 tcp/${HNP[1]} allow`] },
        { name: "Should support a 'deny-egress' rule policy for egress-node-peer", pokes: [`harry-potter-1 -> centaur-1 udp/${HNP[4]} deny`, `harry-potter-1 -> centaur-1 sctp/${HNP[6]} deny`] },
      ],
    },
  ];
}

/** Every ported test except the node-peer ones (nodePeerCases: they need the node to serve). */
export function cnpCases(addresses: PodAddresses): CnpCase[] {
  return [
    adminProtocolCase('ingress', 'tcp', INGRESS_TCP),
    adminProtocolCase('ingress', 'udp', INGRESS_UDP),
    adminProtocolCase('ingress', 'sctp', INGRESS_SCTP),
    adminProtocolCase('egress', 'tcp', EGRESS_TCP),
    adminProtocolCase('egress', 'udp', EGRESS_UDP),
    adminProtocolCase('egress', 'sctp', EGRESS_SCTP),
    gressCase('Admin'),
    inlineCidrCase('Admin', addresses),
    priorityCase(),
    integrationCase(),
    baselineProtocolCase('ingress', 'tcp', INGRESS_TCP),
    baselineProtocolCase('ingress', 'udp', INGRESS_UDP),
    baselineProtocolCase('ingress', 'sctp', INGRESS_SCTP),
    baselineProtocolCase('egress', 'tcp', EGRESS_TCP),
    baselineProtocolCase('egress', 'udp', EGRESS_UDP),
    baselineProtocolCase('egress', 'sctp', EGRESS_SCTP),
    gressCase('Baseline'),
    inlineCidrCase('Baseline', addresses),
    ...namedPortCases(),
  ];
}
