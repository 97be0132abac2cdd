/** Why the demo's blocked cells are blocked: evaluates a TCP connection against the compiled
 * intent (the same PolicyIR the agent renders) and names the side that isolates it (the target's
 * ingress, the source's egress) with the NetworkPolicies that select it, none of which allows it. */
import { canonicalIp, parseIp } from '../net/ip';
import type { CompiledRule, Direction, PolicyIR, Target } from '../policy/engine/ir';

export interface Denial {
  direction: Direction;
  /** The isolated pod (`namespace/name`): the target for ingress, the source for egress. */
  pod: string;
  /** `namespace/name` of each policy isolating it in that direction. */
  policies: string[];
}

function inRange(addr: string, [first, last]: [string, string]): boolean {
  const a = parseIp(addr)?.value;
  const f = parseIp(first)?.value;
  const l = parseIp(last)?.value;
  return a !== undefined && f !== undefined && l !== undefined && a >= f && a <= l;
}

/** Whether one rule entry admits the peer address on (destination address, TCP port). */
function admits(ir: PolicyIR, rule: CompiledRule, peer: string, dst: string, port: number): boolean {
  const family = parseIp(peer)?.family;
  if (!family) return false;
  const peerOk =
    rule.peers === 'any' ||
    rule.peers.some((ref) => {
      if (ref.kind === 'pods') return ir.peerSets.get(ref.set)?.[family].includes(peer) ?? false;
      const block = ir.ipBlockSets.get(ref.set);
      return block !== undefined && block.family === family && block.ranges.some((r) => inRange(peer, r));
    });
  if (!peerOk) return false;
  if (rule.ports === 'any') return true;
  if (rule.ports.some((p) => p.protocol === 'TCP' && (p.port === undefined || (port >= p.port && port <= (p.endPort ?? p.port))))) return true;
  const named = rule.namedPorts === undefined ? undefined : ir.namedPortSets.get(rule.namedPorts);
  return named?.[parseIp(dst)!.family].some((t) => t.ip === dst && t.protocol === 'TCP' && t.port === port) ?? false;
}

function isolatedWithout(ir: PolicyIR, target: Target | undefined, direction: Direction, peer: string, dst: string, port: number): Denial | undefined {
  const ids = target?.[direction];
  if (!target || !ids) return undefined;
  const policies = ids.map((id) => ir.policies.get(id)).filter((p) => p !== undefined);
  if (policies.some((p) => (p[direction] ?? []).some((r) => admits(ir, r, peer, dst, port)))) return undefined;
  return { direction, pod: target.key, policies: policies.map((p) => `${p.namespace}/${p.name}`).sort() };
}

/** The reasons a TCP connection from `source` (a pod key, or undefined for the node itself) at
 * `sourceAddr` to `target`:`port` at `targetAddr` is not allowed; [] when policy allows it. */
export function explainDenial(ir: PolicyIR, c: { source?: string; sourceAddr: string; target: string; targetAddr: string; port: number }): Denial[] {
  const src = canonicalIp(c.sourceAddr)?.text ?? c.sourceAddr;
  const dst = canonicalIp(c.targetAddr)?.text ?? c.targetAddr;
  // Traffic from the node to its pods is never matched: the node row is always allowed.
  if (c.source === undefined) return [];
  const out: Denial[] = [];
  const egress = isolatedWithout(ir, ir.targets.get(c.source), 'egress', dst, dst, c.port);
  if (egress) out.push(egress);
  const ingress = isolatedWithout(ir, ir.targets.get(c.target), 'ingress', src, dst, c.port);
  if (ingress) out.push(ingress);
  return out;
}
