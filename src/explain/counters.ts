/** `nfkube verify --counters`: the kernel's per-policy counters as a table sorted by drops. A
 * policy's accepts are its own rules' counters; its drops (and audit-mode passes) are the
 * default-deny (and audit accept) counts of the pods it selects in that direction: every policy
 * selecting a pod shares them, none of them allowed the packet. */
import { PodAt, readPolicyCounters } from '../policy/metrics-bridge';
import { printable } from '../log';
import type { NetlinkSocket } from '../netlink/socket';
import type { PolicyCounterRow } from '../observe/metrics';
import type { Direction, PolicyIR } from '../policy/engine/ir';

export interface PolicyCounters {
  policy: string;
  direction: Direction;
  pods: number;
  acceptedPackets: bigint;
  droppedPackets: bigint;
  droppedBytes: bigint;
  /** Packets audit mode let through that the pods' default deny would have dropped. */
  auditedPackets: bigint;
}

/** The kernel's counters for `policyCounters`: the rows /metrics exports, with what audit mode
 * let through as rows with verdict 'audit'. Counted addresses are named by the IR's targets. */
export async function readCounterRows(socket: NetlinkSocket, table: string, ir: PolicyIR): Promise<(PolicyCounterRow | AuditRow)[]> {
  const read = await readPolicyCounters(socket, table, podAtOf(ir));
  return [...read.rows, ...read.audited.map((a): AuditRow => ({ ...a, verdict: 'audit' }))];
}

/** Address -> the target holding its vmap entry in a direction: the first by key, as the
 * renderer decides when two briefly share an address. */
export function podAtOf(ir: PolicyIR): PodAt {
  const at = { ingress: new Map<string, string>(), egress: new Map<string, string>() };
  for (const t of [...ir.targets.values()].sort((x, y) => (x.key < y.key ? -1 : 1))) {
    for (const dir of ['ingress', 'egress'] as const) {
      if (!t[dir]) continue;
      for (const a of [...t.v4, ...t.v6]) if (!at[dir].has(a)) at[dir].set(a, t.key);
    }
  }
  return (address, direction) => at[direction].get(address);
}

export interface AuditRow extends Omit<PolicyCounterRow, 'verdict'> {
  verdict: 'audit';
}

export function policyCounters(rows: (PolicyCounterRow | AuditRow)[], ir: PolicyIR): PolicyCounters[] {
  const out = new Map<string, PolicyCounters>();
  const entry = (policy: string, direction: Direction) => {
    const key = `${policy} ${direction}`;
    let e = out.get(key);
    if (!e) out.set(key, (e = { policy, direction, pods: 0, acceptedPackets: 0n, droppedPackets: 0n, droppedBytes: 0n, auditedPackets: 0n }));
    return e;
  };
  for (const p of ir.policies.values()) for (const dir of ['ingress', 'egress'] as const) if (p[dir]) entry(`${p.namespace}/${p.name}`, dir);
  const denies = new Map<string, PolicyCounterRow | AuditRow>();
  const audits = new Map<string, bigint>();
  for (const r of rows) {
    // Accepts are keyed by their policy, denies and audit accepts by their pod (namespace/name).
    const key = `${r.verdict === 'accept' ? r.policy : `${r.namespace}/${r.pod}`} ${r.direction}`;
    if (r.verdict === 'accept') {
      if (r.policy) entry(r.policy, r.direction).acceptedPackets += BigInt(r.packets);
    }
    else if (r.verdict === 'audit') audits.set(key, (audits.get(key) ?? 0n) + BigInt(r.packets));
    else denies.set(key, r);
  }
  for (const t of ir.targets.values()) {
    for (const dir of ['ingress', 'egress'] as const) {
      const deny = denies.get(`${t.key} ${dir}`);
      for (const id of t[dir] ?? []) {
        const p = ir.policies.get(id);
        if (!p) continue;
        const e = entry(`${p.namespace}/${p.name}`, dir);
        e.pods++;
        e.auditedPackets += audits.get(`${t.key} ${dir}`) ?? 0n;
        if (!deny) continue;
        e.droppedPackets += BigInt(deny.packets);
        e.droppedBytes += BigInt(deny.bytes);
      }
    }
  }
  const cmp = (a: bigint, b: bigint) => (a < b ? 1 : a > b ? -1 : 0);
  return [...out.values()].sort((a, b) => cmp(a.droppedPackets, b.droppedPackets) || cmp(a.acceptedPackets, b.acceptedPackets) || (a.policy < b.policy ? -1 : a.policy > b.policy ? 1 : a.direction < b.direction ? -1 : 1));
}

export function formatPolicyCounters(rows: PolicyCounters[]): string {
  const header = ['POLICY', 'DIRECTION', 'PODS', 'DROPPED', 'DROPPED BYTES', 'AUDITED', 'ACCEPTED'];
  const lines = rows.map((r) => [printable(r.policy), r.direction, String(r.pods), String(r.droppedPackets), String(r.droppedBytes), String(r.auditedPackets), String(r.acceptedPackets)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (l: string[]) => l.map((c, i) => (i >= 2 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [fmt(header), ...lines.map(fmt)].join('\n') + '\n';
}
