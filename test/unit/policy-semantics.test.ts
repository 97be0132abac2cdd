/** The compiled intent against NetworkPolicy's rules read straight from the API reference: for
 * random clusters, the naive evaluator written from the spec (test/helpers/policy-spec.ts)
 * decides every (source, destination, protocol, port) between pod addresses, and the IR the
 * compiler builds must decide the same for every pod this node enforces. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { NetworkPolicyInfo, PodInfo } from '../../src/k8s/model';
import { compileFull } from '../../src/policy/engine/compile';
import { parseIp } from '../../src/net/ip';
import type { CompiledRule, Direction, PolicyIR, Protocol } from '../../src/policy/engine/ir';
import { live, networkPolicyAllows, type Flow } from '../helpers/policy-spec';
import { mulberry32 as rng } from '../helpers/prng';
import { NODE, randomChange, World } from '../helpers/random-cluster';

// --- the same question asked of the IR --------------------------------------------------------

function irAllows(ir: PolicyIR, dir: Direction, selfKey: string, selfIp: string, f: Flow): boolean | undefined {
  const t = ir.targets.get(selfKey);
  if (!t || !t[dir]) return undefined;
  const fam = selfIp.includes(':') ? 'v6' : 'v4';
  const dstIp = dir === 'ingress' ? selfIp : f.peerIp;
  const ruleAllows = (r: CompiledRule) => {
    const peerOk =
      r.peers === 'any' ||
      r.peers.some((ref) => {
        if (ref.kind === 'pods') return ir.peerSets.get(ref.set)![fam].includes(f.peerIp);
        const b = ir.ipBlockSets.get(ref.set)!;
        const ip = parseIp(f.peerIp)!;
        return b.family === fam && b.ranges.some(([lo, hi]) => ip.value >= parseIp(lo)!.value && ip.value <= parseIp(hi)!.value);
      });
    if (!peerOk) return false;
    if (r.ports === 'any') return true;
    if (r.ports.some((p) => p.protocol === f.protocol && (p.port === undefined || (f.port >= p.port && f.port <= (p.endPort ?? p.port))))) return true;
    return !!r.namedPorts && ir.namedPortSets.get(r.namedPorts)![fam].some((x) => x.ip === dstIp && x.protocol === f.protocol && x.port === f.port);
  };
  return t[dir]!.some((pid) => (ir.policies.get(pid)![dir] ?? []).some(ruleAllows));
}

test('the compiled intent decides every flow as the spec does (random clusters)', () => {
  const protocols: Protocol[] = ['TCP', 'UDP', 'SCTP'];
  const ports = [22, 53, 80, 443, 8000, 8050, 8080, 8100, 8101, 9090];
  let checked = 0;
  for (let seed = 1; seed <= 30; seed++) {
    const w = new World(rng(seed));
    for (let step = 0; step < 80; step++) {
      randomChange(w);
      if (step % 8 !== 7) continue;
      // One address per pod (the generator lets pods share them, which the kernel cannot tell
      // apart and the desired-table tests cover): pod i gets 198.18.0.(i+1) and 2001:db8::(i+1).
      const unique = [...w.pods.values()].map((p, i) => ({ ...p, ips: p.ips.map((ip) => (ip.includes(':') ? `2001:db8::${(i + 1).toString(16)}` : `198.18.0.${i + 1}`)) }));
      const world: World = Object.assign(Object.create(World.prototype), w, { pods: new Map(unique.map((p) => [`${p.namespace}/${p.name}`, p])) });
      const ir = compileFull(world.inputs(), NODE);
      // Invalid fields make a rule entry allow nothing (the policy still isolates); invalid
      // selectors or policy types have rules of their own (fail closed), left to the unit tests.
      const errs = [...ir.policies.values()].flatMap((p) => p.errors);
      if (errs.some((e) => !/^spec\.(ingress|egress)\[\d+\]/.test(e.field))) continue;
      const valid = (np: NetworkPolicyInfo, dir: Direction, i: number): boolean => !errs.some((e) => e.policy === `${np.namespace}/${np.name}` && e.field.startsWith(`spec.${dir}[${i}]`));
      const pods = [...world.pods.values()].filter(live);
      for (const self of pods.filter((p) => p.nodeName === NODE)) {
        for (const selfIp of self.ips) {
          const fam = selfIp.includes(':');
          const others: { ip: string; pod?: PodInfo }[] = [
            ...pods.flatMap((p) => p.ips.filter((ip) => ip.includes(':') === fam).map((ip) => ({ ip, pod: p }))),
            { ip: fam ? '2001:db8::ff00' : '198.18.0.200' },
            { ip: fam ? '2001:db8:1::1' : '198.19.0.1' },
          ];
          for (const o of others) {
            for (const protocol of protocols) {
              for (const port of ports) {
                for (const dir of ['ingress', 'egress'] as const) {
                  const f: Flow = { self, peerIp: o.ip, peerPod: o.pod, protocol, port, dst: dir === 'ingress' ? self : o.pod };
                  const spec = networkPolicyAllows(world, dir, f, valid);
                  const got = irAllows(ir, dir, `${self.namespace}/${self.name}`, selfIp, f);
                  assert.equal(got, spec, `seed ${seed} step ${step}: ${dir} ${self.namespace}/${self.name} (${selfIp}) ${dir === 'ingress' ? '<-' : '->'} ${o.pod ? `${o.pod.namespace}/${o.pod.name} ` : ''}${o.ip} ${protocol}/${port}`);
                  checked++;
                }
              }
            }
          }
        }
      }
    }
  }
  assert.ok(checked > 50_000, `${checked} flows checked`);
});
