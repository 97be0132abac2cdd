/** The verdict of the compiled intent (the model the agent enforces) for one packet, written
 * from NetworkPolicy semantics over the IR: the source pod's egress policies must allow the
 * destination, and the destination pod's ingress policies the source, each side only when a
 * policy isolates that pod on this node. Names the rule entry that allows, or the policies that
 * isolate and allow nothing; audit mode lets a denied side through. */
import { namespaceOf, PolicyModes } from '../policy/modes';
import { canonicalIp, parseIp } from '../net/ip';
import { isV6 } from '../net/ip-text';
import type { CompiledRule, Direction, PolicyIR, Target } from '../policy/engine/ir';
import type { FlowPacket } from './flow';

export interface SideVerdict {
  direction: Direction;
  /** The local pod whose policies decide this side, when one isolates it. */
  pod?: string;
  /** `namespace/name` of the policies isolating it in this direction. */
  policies: string[];
  /** `namespace/name direction[i]` of the first rule entry that allows the packet. */
  allowedBy?: string;
  /** Denied by policy, let through by audit mode. */
  audit?: boolean;
  /** A ClusterNetworkPolicy tier decided: the tier, and the policy and rule that did. */
  tier?: { tier: 'Admin' | 'Baseline'; decidedBy: string; action: 'Accept' | 'Deny' };
  allowed: boolean;
}

export interface ModelVerdict {
  allowed: boolean;
  egress: SideVerdict;
  ingress: SideVerdict;
}

/** What the model evaluates a side with: NetworkPolicy's verdict for the side, wrapped by the
 * ClusterNetworkPolicy tiers when there are any (tier-verdict.ts). */
export type SideWrapper = (dir: Direction, p: FlowPacket, networkPolicy: () => SideVerdict) => SideVerdict;

export function evaluateModel(ir: PolicyIR, modes: PolicyModes, packet: FlowPacket, tiers?: SideWrapper): ModelVerdict {
  // The IR holds canonical address text (RFC 5952, dotted quads): compare like with like.
  const canonical = (a: string) => canonicalIp(a)?.text ?? a;
  const p = { ...packet, src: canonical(packet.src), dst: canonical(packet.dst) };
  // Two local pods may briefly share an address: of those isolated in a direction, the first by
  // pod key holds it, as in the table's dispatch.
  const targets = [...ir.targets.values()].sort((x, y) => (x.key < y.key ? -1 : 1));
  const holder = (addr: string, dir: Direction) => targets.find((t) => t[dir] && (t.v4.includes(addr) || t.v6.includes(addr)));
  const np = (dir: Direction) => () => side(ir, modes, p, dir, holder(dir === 'egress' ? p.src : p.dst, dir));
  const egress = tiers ? tiers('egress', p, np('egress')) : np('egress')();
  const ingress = tiers ? tiers('ingress', p, np('ingress')) : np('ingress')();
  return { allowed: egress.allowed && ingress.allowed, egress, ingress };
}

function side(ir: PolicyIR, modes: PolicyModes, p: FlowPacket, dir: Direction, t: Target | undefined): SideVerdict {
  const ids = t?.[dir];
  if (!t || !ids) return { direction: dir, policies: [], allowed: true };
  const out: SideVerdict = { direction: dir, pod: t.key, policies: [], allowed: false };
  const peer = dir === 'ingress' ? p.src : p.dst;
  for (const id of ids) {
    const policy = ir.policies.get(id);
    if (!policy) continue;
    out.policies.push(`${policy.namespace}/${policy.name}`);
    const entries = policy[dir] ?? [];
    for (let i = 0; i < entries.length && !out.allowedBy; i++) {
      if (ruleAllows(ir, entries[i], peer, p)) out.allowedBy = `${policy.namespace}/${policy.name} ${dir}[${i}]`;
    }
  }
  out.allowed = out.allowedBy !== undefined;
  // The table audits an address only while every local pod holding it is in audit mode.
  const pod = dir === 'ingress' ? p.dst : p.src;
  const holders = [...ir.targets.values()].filter((h) => h.v4.includes(pod) || h.v6.includes(pod));
  if (!out.allowed && holders.every((h) => modes.mode(namespaceOf(h.key)) === 'audit')) out.allowed = out.audit = true;
  return out;
}

/** Whether a rule entry matches the packet from or to `peer`: the sets it names are read from
 * `ir` (a PolicyIR, or the tiers' sets in the same shape). */
export function ruleAllows(ir: Pick<PolicyIR, 'peerSets' | 'ipBlockSets' | 'namedPortSets'>, rule: CompiledRule, peer: string, p: FlowPacket): boolean {
  return peerMatches(ir, rule, peer) && portMatches(ir, rule, p);
}

function peerMatches(ir: Pick<PolicyIR, 'peerSets' | 'ipBlockSets'>, rule: CompiledRule, peer: string): boolean {
  if (rule.peers === 'any') return true;
  const fam = isV6(peer) ? 'v6' : 'v4';
  const ip = parseIp(peer);
  for (const ref of rule.peers) {
    if (ref.kind === 'pods') {
      if (ir.peerSets.get(ref.set)?.[fam].includes(peer)) return true;
      continue;
    }
    const block = ir.ipBlockSets.get(ref.set);
    if (!block || block.family !== fam || !ip) continue;
    for (const [first, last] of block.ranges) {
      const lo = parseIp(first)!.value;
      const hi = parseIp(last)!.value;
      if (ip.value >= lo && ip.value <= hi) return true;
    }
  }
  return false;
}

function portMatches(ir: Pick<PolicyIR, 'namedPortSets'>, rule: CompiledRule, p: FlowPacket): boolean {
  if (rule.ports === 'any') return true;
  const proto = p.protocol.toUpperCase();
  for (const pm of rule.ports) {
    if (pm.protocol !== proto) continue;
    if (pm.port === undefined) return true;
    if (p.dport >= pm.port && p.dport <= (pm.endPort ?? pm.port)) return true;
  }
  if (rule.namedPorts && p.dport > 0) {
    const set = ir.namedPortSets.get(rule.namedPorts);
    const triples = set ? (isV6(p.dst) ? set.v6 : set.v4) : [];
    // The named port resolves on the packet's destination (the target for ingress, the peer for egress).
    if (triples.some((t) => t.ip === p.dst && t.protocol === proto && t.port === p.dport)) return true;
  }
  return false;
}
