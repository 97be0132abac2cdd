/** `nfkube verify --counters` for the tiers: the kernel's counter of each ClusterNetworkPolicy
 * rule (the sum over its peer and port matches), by the rule comments the renderer writes
 * (`clusternetworkpolicy/NAME direction[index]`), named by the rule's own name when it has one. */
import { printable } from '../log';
import type { Rule } from '../nft/types';
import type { Direction } from '../policy/engine/ir';
import { comparePolicies, type CompiledClusterPolicy } from '../policy/cluster/ir';
import { CLUSTER_POLICY_PREFIX, parseClusterRuleLabel, ruleDisplayName } from '../policy/cluster/labels';

export interface ClusterRuleCounter {
  policy: string;
  tier: string;
  direction: Direction;
  index: number;
  rule: string;
  action: string;
  packets: bigint;
  bytes: bigint;
}

/** One row per rule of `policies`, with the counters of the read-back `rules` that carry its
 * label (log rules have no counter); ordered by tier, policy order, direction and rule. */
export function clusterRuleCounters(rules: readonly Rule[], policies: readonly CompiledClusterPolicy[]): ClusterRuleCounter[] {
  const rows = new Map<string, ClusterRuleCounter>();
  const ordered = [...policies].sort((a, b) => (a.tier === b.tier ? comparePolicies(a, b) : a.tier === 'Admin' ? -1 : 1));
  for (const p of ordered) {
    for (const direction of ['ingress', 'egress'] as const) {
      for (const r of p[direction]) {
        rows.set(`${p.name} ${direction} ${r.index}`, { policy: `${CLUSTER_POLICY_PREFIX}${p.name}`, tier: p.tier, direction, index: r.index, rule: ruleDisplayName(r), action: r.action, packets: 0n, bytes: 0n });
      }
    }
  }
  for (const r of rules) {
    const label = parseClusterRuleLabel(r.comment);
    const counter = r.exprs.find((e) => e.type === 'counter');
    if (!label || !counter || counter.type !== 'counter') continue;
    const row = rows.get(`${label.policy} ${label.direction} ${label.index}`);
    if (!row) continue;
    row.packets += BigInt(counter.packets);
    row.bytes += BigInt(counter.bytes);
  }
  return [...rows.values()];
}

export function formatClusterRuleCounters(rows: ClusterRuleCounter[]): string {
  const header = ['CLUSTER POLICY', 'TIER', 'DIRECTION', 'RULE', 'ACTION', 'PACKETS', 'BYTES'];
  const lines = rows.map((r) => [printable(r.policy), r.tier, r.direction, printable(r.rule), r.action, String(r.packets), String(r.bytes)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (l: string[]) => l.map((c, i) => (i >= 5 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [fmt(header), ...lines.map(fmt)].join('\n') + '\n';
}
