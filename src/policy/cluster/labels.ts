/** The names a ClusterNetworkPolicy rule carries in the kernel: its rule comment (read back by
 * `verify --counters` and the metrics) and its drop log prefix (read by the drop log), and how
 * each is read back. A policy is `clusternetworkpolicy/<name>`, a rule its index in its
 * direction; the rule's own `name` is looked up from the compiled policy when shown. */
import { hash } from 'node:crypto';
import { LABEL_MAX_BYTES, sanitizeLabelText, truncateUtf8, utf8Length } from '../render/labels';
import type { Direction } from '../engine/ir';

export const CLUSTER_POLICY_PREFIX = 'clusternetworkpolicy/';
const DIR_SUFFIX: Record<Direction, string> = { ingress: 'in', egress: 'out' };

/** `clusternetworkpolicy/<name> <direction>[<index>]`, sanitised and bounded as the other
 * labels are (src/agent/labels.ts). */
export function clusterRuleLabel(policy: string, dir: Direction, index: number): string {
  const suffix = ` ${dir}[${index}]`;
  let name = sanitizeLabelText(policy);
  const budget = LABEL_MAX_BYTES - utf8Length(CLUSTER_POLICY_PREFIX) - utf8Length(suffix);
  if (utf8Length(name) > budget) {
    const tail = '…' + hash('sha1', policy, 'hex').slice(0, 8);
    name = truncateUtf8(name, budget - utf8Length(tail)) + tail;
  }
  return `${CLUSTER_POLICY_PREFIX}${name}${suffix}`;
}

const LABEL = /^clusternetworkpolicy\/(\S+) (ingress|egress)\[(\d+)\]$/;

export function parseClusterRuleLabel(comment: string | undefined): { policy: string; direction: Direction; index: number } | undefined {
  const m = comment === undefined ? null : LABEL.exec(comment);
  return m ? { policy: m[1], direction: m[2] as Direction, index: Number(m[3]) } : undefined;
}

/** `nfkube cnp <in|out> <policy id> <rule index>`: short, and the id names the policy. */
export function clusterLogPrefix(dir: Direction, policyId: string, index: number): string {
  return `nfkube cnp ${DIR_SUFFIX[dir]} ${policyId} ${index}`;
}

const PREFIX = /^nfkube cnp (in|out) ([a-z0-9]{1,32}) (\d{1,3})$/;

export function parseClusterLogPrefix(prefix: string | undefined): { direction: Direction; policyId: string; index: number } | undefined {
  const m = prefix === undefined ? null : PREFIX.exec(prefix);
  return m ? { direction: m[1] === 'in' ? 'ingress' : 'egress', policyId: m[2], index: Number(m[3]) } : undefined;
}

/** How a rule is shown: its name when it has one, else `#<index>`. */
export function ruleDisplayName(rule: { name?: string; index: number }): string {
  return rule.name !== undefined ? rule.name : `#${rule.index}`;
}
