/** Connects the agent to its Prometheus metrics: sync reports become observations, and the
 * counters on policy accepts and pod default denies are read from the kernel at scrape time. */
import { NetlinkError } from '../netlink/errors';
import { NetlinkSocket } from '../netlink/socket';
import { listRules } from '../nft/readback';
import { AgentMetrics, PolicyCounterRow } from '../observe/metrics';
import { AgentObserver } from '../pipeline/agent';
import { parseLabel } from './labels';
import { ProgrammingLatency } from './programming-latency';

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

/** Reads every counted rule of the table: policy accepts (by policy and direction) and pod
 * default denies (by pod), summed. The rule comments the renderer writes carry the names
 * (labels.ts). */
export function policyCounterReader(socket: NetlinkSocket, table: string): () => Promise<PolicyCounterRow[]> {
  return async () => {
    const rows = new Map<string, PolicyCounterRow>();
    for (const r of await listRules(socket, 'inet', table)) {
      const counter = r.exprs.find((e) => e.type === 'counter');
      if (!counter || counter.type !== 'counter' || !r.comment) continue;
      const verdict = r.exprs.some((e) => e.type === 'reject') ? 'reject' : r.exprs.some((e) => e.type === 'immediate' && e.verdict?.kind === 'drop') ? 'drop' : 'accept';
      const label = parseLabel(r.comment);
      if (!label || label.kind === 'jump') continue;
      const [object, direction] = label.kind === 'accept' ? [label.policy, label.direction] : [label.pod, label.direction];
      const key = `${object} ${direction} ${verdict}`;
      // A default deny is labelled with its pod, a policy's accepts with the policy.
      const [namespace, name] = object.split('/');
      const who = label.kind === 'accept' ? { policy: object, namespace } : { namespace, pod: name };
      const row = rows.get(key) ?? { ...who, direction: direction as 'ingress' | 'egress', verdict, packets: 0n, bytes: 0n };
      row.packets = BigInt(row.packets) + counter.packets;
      row.bytes = BigInt(row.bytes) + counter.bytes;
      rows.set(key, row);
    }
    return [...rows.values()];
  };
}
