/** Connects the agent to its Prometheus metrics: sync reports become observations, and the
 * counters on policy accepts and on each pod address's default deny are read from the kernel at
 * scrape time. */
import { NetlinkError } from '../netlink/errors';
import { NetlinkSocket } from '../netlink/socket';
import { listElements, listRules } from '../nft/readback';
import { NFT_SET_EVAL } from '../nft/constants';
import { NftSet, Rule, SetElement } from '../nft/types';
import { formatIPv4, formatIPv6 } from '../net/ip-bytes';
import { counterSets, CounterKind } from './render/tail';
import type { Direction } from './engine/ir';
import type { DenyAction } from './modes';
import { AgentMetrics, PolicyCounterRow } from '../observe/metrics';
import { AgentObserver } from '../pipeline/agent';
import { parseLabel } from './render/labels';
import { CLUSTER_POLICY_PREFIX, parseClusterRuleLabel } from './cluster/labels';
import { ProgrammingLatency } from '../pipeline/programming-latency';

/** `latency`, when given, must also see each change delivered (ProgrammingLatency.deliver). */
export function metricsObserver(metrics: AgentMetrics, latency?: ProgrammingLatency): AgentObserver {
  return {
    synced(r) {
      metrics.observeSync(r.kind, r.durationMs / 1000);
      latency?.committed(r.durationMs);
      if (r.messages > 0) metrics.recordBatch('nftables', expand(r.byType));
      metrics.recordSuccessfulSync();
      for (const [kind, n] of Object.entries(r.repaired ?? {})) metrics.recordDriftRepairs(kind, n);
    },
    failed(_kind, err) {
      metrics.recordTransactionFailure(err instanceof NetlinkError ? err.code : 'other');
    },
    queueDepth(n) {
      if (n > 0) latency?.queued();
      metrics.setEventQueueDepth(n);
    },
    // The gauges describe the policy table; other components' sizes are their own metrics.
    sizes: (s, component) => {
      if (component === 'policy') metrics.setObjectCounts({ pods: s.pods, policies: s.policies, sets: s.sets, elements: s.elements, failedClosed: s.failedClosed });
    },
  };
}

function* expand(byType: Map<string, number>): Generator<string> {
  for (const [k, n] of byType) for (let i = 0; i < n; i++) yield k;
}

/** The pod of this node whose default deny an address's packets meet in `direction` (the holder
 * of its vmap entry), as `namespace/name`; undefined when none. */
export type PodAt = (address: string, direction: Direction) => string | undefined;

/** Default-deny and audit counts of one pod and direction, read from the counter sets. */
export interface PodCounterRow {
  namespace: string;
  pod: string;
  direction: Direction;
  packets: bigint;
  bytes: bigint;
}

export interface PolicyCounterRead {
  /** Policy accepts (by policy and direction) and default denies (by pod and direction). */
  rows: PolicyCounterRow[];
  /** What audit mode let through, by pod and direction. */
  audited: PodCounterRow[];
  /** Each ClusterNetworkPolicy rule's counter (the sum over its peer and port matches). */
  clusterRules: PolicyCounterRow[];
}

/** Reads the policy chains' counted accepts and the counter sets (src/policy/render/tail.ts), naming each
 * counted address's pod through `podAt`. The rule comments the renderer writes name the policies
 * (labels.ts); the deny verdict (drop or reject) is read off the default deny chains. */
export async function readPolicyCounters(socket: NetlinkSocket, table: string, podAt: PodAt): Promise<PolicyCounterRead> {
  const rules = await listRules(socket, 'inet', table);
  // The counter sets the rules update: audited counters exist only with audit support on.
  const updated = new Set<string>();
  for (const r of rules) for (const e of r.exprs) if (e.type === 'dynset') updated.add(e.set);
  const elements = new Map<string, SetElement[]>();
  for (const c of counterSets(true)) {
    if (!updated.has(c.name)) continue;
    const set: NftSet = { family: 'inet', table, name: c.name, key: [c.fam === 'v4' ? 'ipv4_addr' : 'ipv6_addr'], flags: NFT_SET_EVAL };
    try {
      elements.set(c.name, await listElements(socket, set));
    } catch (err) {
      // Gone since the rules were read (a table replaced in between): read again at the next scrape.
      if (!(err instanceof NetlinkError && err.code === 'ENOENT')) throw err;
    }
  }
  return policyCounterRows(rules, elements, podAt);
}

/** readPolicyCounters' rows from what it read: rules, and counter set elements by set name. */
export function policyCounterRows(rules: Rule[], counterElements: ReadonlyMap<string, SetElement[]>, podAt: PodAt): PolicyCounterRead {
  const rows = new Map<string, PolicyCounterRow>();
  let denyVerdict: DenyAction = 'drop';
  for (const r of rules) {
    // A ClusterNetworkPolicy rule's counter counts its own action (explain/cluster-counters.ts):
    // never a NetworkPolicy's accepts, though its label parses like one.
    const label = r.comment && !parseClusterRuleLabel(r.comment) ? parseLabel(r.comment) : undefined;
    if (label?.kind === 'deny' && r.exprs.some((e) => e.type === 'reject')) denyVerdict = 'reject';
    if (label?.kind !== 'accept') continue;
    const counter = r.exprs.find((e) => e.type === 'counter');
    if (!counter || counter.type !== 'counter') continue;
    const key = `${label.policy} ${label.direction}`;
    const row = rows.get(key) ?? { policy: label.policy, namespace: label.policy.split('/')[0], direction: label.direction, verdict: 'accept', packets: 0n, bytes: 0n };
    row.packets = BigInt(row.packets) + counter.packets;
    row.bytes = BigInt(row.bytes) + counter.bytes;
    rows.set(key, row);
  }
  const perPod = (kind: CounterKind) => {
    const out = new Map<string, PodCounterRow>();
    for (const c of counterSets(true)) {
      if (c.kind !== kind) continue;
      for (const e of counterElements.get(c.name) ?? []) {
        const counter = e.exprs?.find((x) => x.type === 'counter');
        if (!counter || counter.type !== 'counter') continue;
        const pod = podAt(c.fam === 'v4' ? formatIPv4(e.key) : formatIPv6(e.key), c.direction);
        if (!pod) continue;
        const slash = pod.indexOf('/');
        const key = `${pod} ${c.direction}`;
        const row = out.get(key) ?? { namespace: pod.slice(0, slash), pod: pod.slice(slash + 1), direction: c.direction, packets: 0n, bytes: 0n };
        row.packets += counter.packets;
        row.bytes += counter.bytes;
        out.set(key, row);
      }
    }
    return [...out.values()];
  };
  const out = [...rows.values()];
  for (const d of perPod('deny')) out.push({ ...d, verdict: denyVerdict });
  return { rows: out, audited: perPod('audited'), clusterRules: clusterRuleRows(rules, denyVerdict) };
}

/** The counted rule of each ClusterNetworkPolicy rule (log rules have no counter), by its label,
 * with the verdict its action gives. */
function clusterRuleRows(rules: Rule[], denyVerdict: DenyAction): PolicyCounterRow[] {
  const rows = new Map<string, PolicyCounterRow>();
  for (const r of rules) {
    const label = parseClusterRuleLabel(r.comment);
    const counter = r.exprs.find((e) => e.type === 'counter');
    if (!label || !counter || counter.type !== 'counter') continue;
    const kind = r.exprs.flatMap((e) => (e.type === 'immediate' && e.verdict ? [e.verdict.kind] : []))[0];
    const key = `${label.policy} ${label.direction} ${label.index}`;
    const row = rows.get(key) ?? { policy: `${CLUSTER_POLICY_PREFIX}${label.policy}`, rule: `${label.direction}[${label.index}]`, direction: label.direction, verdict: kind === 'accept' ? 'accept' : kind === 'return' ? 'pass' : denyVerdict, packets: 0n, bytes: 0n };
    row.packets = BigInt(row.packets) + counter.packets;
    row.bytes = BigInt(row.bytes) + counter.bytes;
    rows.set(key, row);
  }
  return [...rows.values()];
}

/** The rows /metrics exports: policy accepts, and per pod its default deny's drops (or rejects)
 * and what audit mode let through (as the pod's accepts). */
export function policyCounterReader(socket: NetlinkSocket, table: string, podAt: PodAt): () => Promise<PolicyCounterRow[]> {
  return async () => {
    const read = await readPolicyCounters(socket, table, podAt);
    return [...read.rows, ...read.audited.map((a): PolicyCounterRow => ({ ...a, verdict: 'accept' })), ...read.clusterRules];
  };
}
