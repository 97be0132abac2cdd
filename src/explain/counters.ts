/** `nfkube verify --counters`: the kernel's per-policy counters as a table sorted by drops. A
 * policy's accepts are its own rules' counters; its drops are the default-deny counters of the
 * pods it selects in that direction (every policy selecting a pod shares that pod's drops: none
 * of them allowed the packet). */
import type { PolicyCounterRow } from '../observe/metrics';
import type { PolicyIR } from '../policy/ir';

export interface PolicyCounters {
  policy: string;
  direction: 'ingress' | 'egress';
  pods: number;
  acceptedPackets: bigint;
  droppedPackets: bigint;
  droppedBytes: bigint;
}

export function policyCounters(rows: PolicyCounterRow[], ir: PolicyIR): PolicyCounters[] {
  const out = new Map<string, PolicyCounters>();
  const entry = (policy: string, direction: 'ingress' | 'egress') => {
    const key = `${policy} ${direction}`;
    let e = out.get(key);
    if (!e) out.set(key, (e = { policy, direction, pods: 0, acceptedPackets: 0n, droppedPackets: 0n, droppedBytes: 0n }));
    return e;
  };
  for (const p of ir.policies.values()) for (const dir of ['ingress', 'egress'] as const) if (p[dir]) entry(`${p.namespace}/${p.name}`, dir);
  const denies = new Map<string, PolicyCounterRow>();
  for (const r of rows) {
    if (r.verdict === 'accept') entry(r.policy, r.direction).acceptedPackets += BigInt(r.packets);
    else denies.set(`${r.policy} ${r.direction}`, r);
  }
  for (const t of ir.targets.values()) {
    for (const dir of ['ingress', 'egress'] as const) {
      const deny = denies.get(`${t.key} ${dir}`);
      for (const id of t[dir] ?? []) {
        const p = ir.policies.get(id);
        if (!p) continue;
        const e = entry(`${p.namespace}/${p.name}`, dir);
        e.pods++;
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
  const header = ['POLICY', 'DIRECTION', 'PODS', 'DROPPED', 'DROPPED BYTES', 'ACCEPTED'];
  const lines = rows.map((r) => [r.policy, r.direction, String(r.pods), String(r.droppedPackets), String(r.droppedBytes), String(r.acceptedPackets)]);
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (l: string[]) => l.map((c, i) => (i >= 2 ? c.padStart(widths[i]) : c.padEnd(widths[i]))).join('  ').trimEnd();
  return [fmt(header), ...lines.map(fmt)].join('\n') + '\n';
}
