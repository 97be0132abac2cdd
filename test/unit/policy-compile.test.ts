import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NamespaceInfo, NetworkPolicyInfo, PodInfo } from '../../src/k8s/model';
import { compileFull } from '../../src/policy/engine/compile';
import type { CompiledRule, PolicyIR } from '../../src/policy/engine/ir';

const NODE = 'node-1';

function pod(ns: string, name: string, labels: Record<string, string>, ips: string | string[], extra: Partial<PodInfo> = {}): PodInfo {
  return { namespace: ns, name, labels, nodeName: NODE, phase: 'Running', ips: Array.isArray(ips) ? ips : [ips], hostNetwork: false, ports: [], ...extra };
}

/** Namespaces x (team=red), y (team=blue), z (no labels); pods a, b, c in each, on this node
 * in x and elsewhere in y and z. */
function cluster(): { pods: PodInfo[]; namespaces: NamespaceInfo[] } {
  const namespaces: NamespaceInfo[] = [
    { name: 'x', labels: { team: 'red' } },
    { name: 'y', labels: { team: 'blue' } },
    { name: 'z', labels: {} },
  ];
  const pods: PodInfo[] = [];
  namespaces.forEach((ns, i) => {
    ['a', 'b', 'c'].forEach((p, j) => {
      pods.push(pod(ns.name, p, { pod: p }, `198.18.${i}.${j + 1}`, { nodeName: ns.name === 'x' ? NODE : 'node-2' }));
    });
  });
  return { pods, namespaces };
}

function compile(policies: NetworkPolicyInfo[], c = cluster()): PolicyIR {
  return compileFull({ ...c, policies }, NODE);
}

function policyOf(ir: PolicyIR, name: string) {
  const p = [...ir.policies.values()].find((x) => x.name === name);
  assert.ok(p, `policy ${name}`);
  return p;
}

/** The IPv4 addresses a rule's pod peers cover (union of its peer sets). */
function peerIps(ir: PolicyIR, rule: CompiledRule): string[] | 'any' {
  if (rule.peers === 'any') return 'any';
  const out = new Set<string>();
  for (const ref of rule.peers) {
    if (ref.kind === 'pods') ir.peerSets.get(ref.set)!.v4.forEach((ip) => out.add(ip));
  }
  return [...out].sort();
}

const np = (name: string, spec: Partial<NetworkPolicyInfo>): NetworkPolicyInfo => ({ namespace: 'x', name, podSelector: {}, ...spec });

test('empty podSelector selects every pod of the policy namespace on this node', () => {
  const ir = compile([np('all', { ingress: [] })]);
  assert.deepStrictEqual([...ir.targets.keys()].sort(), ['x/a', 'x/b', 'x/c']);
});

test('podSelector selects only matching pods', () => {
  const ir = compile([np('only-a', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [] })]);
  assert.deepStrictEqual([...ir.targets.keys()], ['x/a']);
  const t = ir.targets.get('x/a')!;
  assert.deepStrictEqual(t.v4, ['198.18.0.1']);
  assert.deepStrictEqual(t.ingress, [policyOf(ir, 'only-a').id]);
  assert.equal(t.egress, null);
});

test('policy applies to pods on this node only; peers match cluster-wide', () => {
  const ir = compileFull({ ...cluster(), policies: [np('p', { namespace: 'y', ingress: [{ peers: [{ podSelector: {} }] }] })] }, NODE);
  assert.equal(ir.targets.size, 0, 'pods of y run on node-2');
  const ir2 = compile([np('p', { ingress: [{ peers: [{ namespaceSelector: {} }] }] })]);
  assert.equal((peerIps(ir2, policyOf(ir2, 'p').ingress![0]) as string[]).length, 9);
});

test('peer podSelector alone selects pods in the policy namespace', () => {
  const ir = compile([np('p', { ingress: [{ peers: [{ podSelector: { matchLabels: { pod: 'b' } } }] }] })]);
  assert.deepStrictEqual(peerIps(ir, policyOf(ir, 'p').ingress![0]), ['198.18.0.2']);
});

test('peer namespaceSelector alone selects every pod in matching namespaces', () => {
  const ir = compile([np('p', { ingress: [{ peers: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }] }] })]);
  assert.deepStrictEqual(peerIps(ir, policyOf(ir, 'p').ingress![0]), ['198.18.1.1', '198.18.1.2', '198.18.1.3']);
});

test('namespaceSelector and podSelector in one peer intersect; in two peers they unite', () => {
  const one = compile([np('p', { ingress: [{ peers: [{ namespaceSelector: { matchLabels: { team: 'blue' } }, podSelector: { matchLabels: { pod: 'c' } } }] }] })]);
  assert.deepStrictEqual(peerIps(one, policyOf(one, 'p').ingress![0]), ['198.18.1.3']);
  const two = compile([np('p', { ingress: [{ peers: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }, { podSelector: { matchLabels: { pod: 'c' } } }] }] })]);
  assert.deepStrictEqual(peerIps(two, policyOf(two, 'p').ingress![0]), ['198.18.0.3', '198.18.1.1', '198.18.1.2', '198.18.1.3']);
});

test('namespaces carry the implicit kubernetes.io/metadata.name label', () => {
  const ir = compile([np('p', { ingress: [{ peers: [{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'z' } } }] }] })]);
  assert.deepStrictEqual(peerIps(ir, policyOf(ir, 'p').ingress![0]), ['198.18.2.1', '198.18.2.2', '198.18.2.3']);
});

test('matchExpressions in peers: NotIn and DoesNotExist', () => {
  const ir = compile([
    np('p', {
      ingress: [
        { peers: [{ namespaceSelector: { matchExpressions: [{ key: 'team', operator: 'DoesNotExist' }] } }] },
        { peers: [{ podSelector: { matchExpressions: [{ key: 'pod', operator: 'NotIn', values: ['a', 'b'] }] } }] },
      ],
    }),
  ]);
  const rules = policyOf(ir, 'p').ingress!;
  assert.deepStrictEqual(peerIps(ir, rules[0]), ['198.18.2.1', '198.18.2.2', '198.18.2.3']);
  assert.deepStrictEqual(peerIps(ir, rules[1]), ['198.18.0.3']);
});

test('ipBlock with except compiles to interval ranges', () => {
  const ir = compile([np('p', { egress: [{ peers: [{ ipBlock: { cidr: '198.18.0.0/16', except: ['198.18.1.0/24', '198.18.0.0/24'] } }] }] })]);
  const rule = policyOf(ir, 'p').egress![0];
  assert.ok(rule.peers !== 'any' && rule.peers[0].kind === 'ipBlock');
  const set = ir.ipBlockSets.get((rule.peers as Array<{ set: string }>)[0].set)!;
  assert.equal(set.family, 'v4');
  assert.deepStrictEqual(set.except, ['198.18.0.0/24', '198.18.1.0/24']);
  assert.deepStrictEqual(set.ranges, [['198.18.2.0', '198.18.255.255']]);
  const v6 = compile([np('p', { egress: [{ peers: [{ ipBlock: { cidr: '2001:db8::/32' } }] }] })]);
  assert.deepStrictEqual([...v6.ipBlockSets.values()][0].ranges, [['2001:db8::', '2001:db8:ffff:ffff:ffff:ffff:ffff:ffff']]);
});

test('ports: by number, protocol defaulting to TCP, UDP, SCTP, endPort, protocol-only', () => {
  const ir = compile([
    np('p', {
      ingress: [{ ports: [{ port: 80 }, { protocol: 'UDP', port: 53 }, { protocol: 'SCTP', port: 9 }, { port: 8000, endPort: 8100 }, { protocol: 'UDP' }] }],
    }),
  ]);
  assert.deepStrictEqual(policyOf(ir, 'p').ingress![0], {
    peers: 'any',
    ports: [
      { protocol: 'TCP', port: 80 },
      { protocol: 'UDP', port: 53 },
      { protocol: 'SCTP', port: 9 },
      { protocol: 'TCP', port: 8000, endPort: 8100 },
      { protocol: 'UDP' },
    ],
  });
});

test('missing or empty from/to means all peers; missing or empty ports means all ports', () => {
  const ir = compile([np('p', { ingress: [{}, { peers: [], ports: [] }] })]);
  assert.deepStrictEqual(policyOf(ir, 'p').ingress, [
    { peers: 'any', ports: 'any' },
    { peers: 'any', ports: 'any' },
  ]);
});

test('an empty rules list isolates and allows nothing', () => {
  const ir = compile([np('deny', { policyTypes: ['Ingress', 'Egress'] })]);
  const p = policyOf(ir, 'deny');
  assert.deepStrictEqual(p.ingress, []);
  assert.deepStrictEqual(p.egress, []);
  assert.deepStrictEqual(ir.targets.get('x/a')!.egress, [p.id]);
});

test('policyTypes defaulting: Ingress always, Egress only when egress rules exist', () => {
  const ir = compile([
    np('none', {}),
    np('with-egress', { egress: [{}] }),
    np('empty-egress', { egress: [] }),
    np('egress-only', { policyTypes: ['Egress'], ingress: [{}] }),
  ]);
  const dirs = (name: string) => {
    const p = policyOf(ir, name);
    return [p.ingress ? 'ingress' : '-', p.egress ? 'egress' : '-'];
  };
  assert.deepStrictEqual(dirs('none'), ['ingress', '-']);
  assert.deepStrictEqual(dirs('with-egress'), ['ingress', 'egress']);
  assert.deepStrictEqual(dirs('empty-egress'), ['ingress', '-']);
  assert.deepStrictEqual(dirs('egress-only'), ['-', 'egress'], 'ingress rules ignored when policyTypes omits Ingress');
});

test('ingress and egress isolation are independent', () => {
  const ir = compile([np('in', { podSelector: { matchLabels: { pod: 'a' } } }), np('out', { podSelector: { matchLabels: { pod: 'b' } }, policyTypes: ['Egress'] })]);
  assert.deepStrictEqual(ir.targets.get('x/a')!.egress, null);
  assert.deepStrictEqual(ir.targets.get('x/a')!.ingress, [policyOf(ir, 'in').id]);
  assert.deepStrictEqual(ir.targets.get('x/b')!.ingress, null);
  assert.deepStrictEqual(ir.targets.get('x/b')!.egress, [policyOf(ir, 'out').id]);
  assert.equal(ir.targets.has('x/c'), false, 'a pod no policy selects is not a target');
});

test('a pod is allowed the union of every policy selecting it', () => {
  const ir = compile([np('p1', { ingress: [{ ports: [{ port: 80 }] }] }), np('p2', { podSelector: { matchLabels: { pod: 'a' } }, ingress: [{ ports: [{ port: 81 }] }] })]);
  assert.deepStrictEqual(ir.targets.get('x/a')!.ingress, [policyOf(ir, 'p1').id, policyOf(ir, 'p2').id].sort());
  assert.deepStrictEqual(ir.targets.get('x/b')!.ingress, [policyOf(ir, 'p1').id]);
});

test('named ports, ingress: resolved on the target pods, protocol must match, pods without the name add nothing', () => {
  const c = cluster();
  c.pods[0].ports = [{ name: 'http', containerPort: 8080, protocol: 'TCP' }, { name: 'dns', containerPort: 53, protocol: 'UDP' }];
  c.pods[1].ports = [{ name: 'http', containerPort: 9090, protocol: 'TCP' }];
  const ir = compile([np('p', { ingress: [{ ports: [{ port: 'http' }, { port: 'dns' }, { port: 81 }] }] })], c);
  const rule = policyOf(ir, 'p').ingress![0];
  assert.deepStrictEqual(rule.ports, [{ protocol: 'TCP', port: 81 }]);
  const set = ir.namedPortSets.get(rule.namedPorts!)!;
  assert.equal(set.direction, 'ingress');
  assert.deepStrictEqual(set.v4, [
    { ip: '198.18.0.1', protocol: 'TCP', port: 8080 },
    { ip: '198.18.0.2', protocol: 'TCP', port: 9090 },
  ]);
});

test('named ports, egress: resolved on destination pods cluster-wide', () => {
  const c = cluster();
  c.pods[4].ports = [{ name: 'http', containerPort: 8080, protocol: 'TCP' }];
  c.pods[0].ports = [{ name: 'http', containerPort: 80, protocol: 'UDP' }];
  const ir = compile([np('p', { egress: [{ peers: [{ namespaceSelector: {} }], ports: [{ port: 'http' }] }] })], c);
  const rule = policyOf(ir, 'p').egress![0];
  assert.deepStrictEqual(rule.ports, []);
  assert.deepStrictEqual(ir.namedPortSets.get(rule.namedPorts!)!.v4, [{ ip: '198.18.1.2', protocol: 'TCP', port: 8080 }]);
});

test('IPv6 and dual-stack pods: targets and peer sets carry both families', () => {
  const c = cluster();
  c.pods[0].ips = ['198.18.0.1', '2001:DB8::1'];
  c.pods[1].ips = ['2001:db8::2'];
  const ir = compile([np('p', { ingress: [{ peers: [{ podSelector: {} }] }] })], c);
  assert.deepStrictEqual(ir.targets.get('x/a')!.v6, ['2001:db8::1']);
  assert.deepStrictEqual(ir.targets.get('x/b')!.v4, []);
  const set = [...ir.peerSets.values()][0];
  assert.deepStrictEqual(set.v6, ['2001:db8::1', '2001:db8::2']);
  assert.deepStrictEqual(set.v4, ['198.18.0.1', '198.18.0.3']);
});

test('hostNetwork pods, pods without an IP and finished pods are neither targets nor peers', () => {
  const c = cluster();
  c.pods[0].hostNetwork = true;
  c.pods[1].ips = [];
  c.pods[2].phase = 'Succeeded';
  c.pods[3].phase = 'Failed';
  c.pods[4].hostNetwork = true;
  const ir = compile([np('p', { ingress: [{ peers: [{ namespaceSelector: {} }] }] })], c);
  assert.equal(ir.targets.size, 0);
  assert.deepStrictEqual(peerIps(ir, policyOf(ir, 'p').ingress![0]), ['198.18.1.3', '198.18.2.1', '198.18.2.2', '198.18.2.3']);
});

test('identical peers in different policies and namespaces share one set', () => {
  const ir = compile([
    np('p1', { ingress: [{ peers: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }] }] }),
    np('p2', { namespace: 'y', ingress: [{ peers: [{ namespaceSelector: { matchLabels: { team: 'blue' } } }] }] }),
    np('p3', { egress: [{ peers: [{ podSelector: { matchLabels: { pod: 'a' } } }] }] }),
    np('p4', { namespace: 'y', egress: [{ peers: [{ podSelector: { matchLabels: { pod: 'a' } } }] }] }),
  ]);
  assert.equal(ir.peerSets.size, 3, 'namespaceSelector peers shared across namespaces; podSelector-only peers are per namespace');
  assert.deepStrictEqual(policyOf(ir, 'p1').ingress, policyOf(ir, 'p2').ingress);
});

test('ids are short, nft-safe and stable', () => {
  const policies = [np('a-very-long-policy-name-'.repeat(10), { ingress: [{ peers: [{ podSelector: { matchLabels: { ['k'.repeat(60)]: 'v'.repeat(60) } } }] }] })];
  const one = compile(policies);
  const two = compile(policies);
  assert.deepStrictEqual(one, two);
  const ids = [...one.targets.values()].map((t) => t.id).concat([...one.policies.keys()], [...one.peerSets.keys()]);
  for (const id of ids) assert.match(id, /^[a-z][a-z0-9_]{1,19}$/);
});

test('bad input fails closed: errors name the policy and field; the policy still isolates; other policies work', () => {
  const ir = compile([
    np('broken', {
      podSelector: { matchLabels: { pod: 'a' } },
      ingress: [
        { peers: [{ podSelector: {} }, { ipBlock: { cidr: '198.18.0.0/33' } }] },
        { ports: [{ protocol: 'ICMP', port: 1 }] },
        { ports: [{ port: 70000 }] },
        { ports: [{ port: 90, endPort: 80 }] },
        { peers: [{ podSelector: { matchExpressions: [{ key: 'pod', operator: 'Like', values: ['a'] }] } }] },
        { ports: [{ port: 'http', endPort: 90 }] },
        { peers: [{ ipBlock: { cidr: '198.18.0.0/24', except: ['198.19.0.0/24'] } }] },
        { peers: [{ ipBlock: { cidr: '198.18.0.0/24' }, podSelector: {} }] },
        { peers: [{}] },
        { ports: [{ port: 'Not_A_Name' }] },
        { ports: [{ port: 443 }] },
      ],
    }),
    np('fine', { podSelector: { matchLabels: { pod: 'b' } }, ingress: [{ ports: [{ port: 80 }] }] }),
  ]);
  const broken = policyOf(ir, 'broken');
  assert.deepStrictEqual(
    broken.errors.map((e) => [e.policy, e.field]),
    [
      ['x/broken', 'spec.ingress[0].from[1].ipBlock.cidr'],
      ['x/broken', 'spec.ingress[1].ports[0].protocol'],
      ['x/broken', 'spec.ingress[2].ports[0].port'],
      ['x/broken', 'spec.ingress[3].ports[0].endPort'],
      ['x/broken', 'spec.ingress[4].from[0].podSelector.matchExpressions[0].operator'],
      ['x/broken', 'spec.ingress[5].ports[0].endPort'],
      ['x/broken', 'spec.ingress[6].from[0].ipBlock.except[0]'],
      ['x/broken', 'spec.ingress[7].from[0]'],
      ['x/broken', 'spec.ingress[8].from[0]'],
      ['x/broken', 'spec.ingress[9].ports[0].port'],
    ],
  );
  assert.match(broken.errors[0].message, /invalid CIDR "198\.18\.0\.0\/33"/);
  assert.match(broken.errors[1].message, /unknown protocol "ICMP"/);
  const rules = broken.ingress!;
  for (let i = 0; i < 10; i++) assert.deepStrictEqual(rules[i], { peers: [], ports: [] }, `rule ${i} allows nothing`);
  assert.deepStrictEqual(rules[10], { peers: 'any', ports: [{ protocol: 'TCP', port: 443 }] }, 'valid entries keep working');
  assert.deepStrictEqual(ir.targets.get('x/a')!.ingress, [broken.id], 'still isolates the pods it selects');
  assert.deepStrictEqual(policyOf(ir, 'fine').errors, []);
  assert.deepStrictEqual(ir.targets.get('x/b')!.ingress, [policyOf(ir, 'fine').id]);
  assert.equal(ir.peerSets.size, 0, 'a broken entry references no set');
});

test('a broken policy podSelector widens what it isolates; an unknown policyType isolates both directions', () => {
  const ir = compile([
    np('wide', { podSelector: { matchLabels: { pod: 'a' }, matchExpressions: [{ key: 'pod', operator: 'Bogus' }] }, ingress: [{}] }),
    np('types', { podSelector: { matchLabels: { pod: 'c' } }, policyTypes: ['Ingres'] }),
  ]);
  assert.deepStrictEqual(policyOf(ir, 'wide').errors.map((e) => e.field), ['spec.podSelector.matchExpressions[0].operator']);
  assert.deepStrictEqual([...ir.targets.keys()].sort(), ['x/a', 'x/c']);
  const types = policyOf(ir, 'types');
  assert.deepStrictEqual(types.errors.map((e) => e.field), ['spec.policyTypes[0]']);
  assert.deepStrictEqual([types.ingress, types.egress], [[], []]);
});
