/** What happens to a packet none of a combination's policies accepted. Each combination chain
 * ends in its drop log rule (with --log-drops) and a goto to the default deny chain of its
 * direction, one per table and direction:
 *
 *   combo_<id>_in:  jump pol_...  (one per policy)
 *                   limit rate R/second burst B packets log prefix "nfkube in <id>" group G
 *                   goto default_deny_in
 *   default_deny_in:
 *                   ip daddr @audit_v4 update @audited_in_v4 { ip daddr } accept   (audit mode)
 *                   ip6 daddr @audit_v6 update @audited_in_v6 { ip6 daddr } accept
 *                   update @deny_in_v4 { ip daddr }
 *                   update @deny_in_v6 { ip6 daddr }
 *                   drop                                                           (or reject)
 *
 * Pods isolated by the same policies share a chain, so what is counted per pod is counted by
 * address: the counter sets hold every isolated pod's addresses (as the vmap of the direction
 * does), each element with its own counter, and the dynset update finds the packet's element and
 * counts it there; the deny that follows has no condition, so a packet is denied whether or not
 * it was counted. The log rule has no verdict, so a packet over the limit goes on to the same
 * verdict unlogged: the token bucket lives in the kernel, per combination chain, and a flood
 * cannot reach the agent, which names the pod by the packet's address. A pod's mode is the
 * membership of its addresses in the audit sets: switching a namespace is one transaction of
 * element changes, no chain is rendered again. Egress chains match saddr. */
import { formatLabel } from './labels';
import * as b from '../../nft/build';
import { Expr } from '../../nft/types';
import { Direction } from '../engine/ir';
import type { IpFamily } from '../../net/ip';

export interface DropLogOptions {
  /** nfnetlink_log group the deny rules log to. */
  group: number;
  /** Logged packets per second per combination chain (the pods isolated by the same policies)
   * and direction; 0: no limit. */
  rate: number;
  burst: number;
}

export const AUDIT_SETS = { v4: 'audit_v4', v6: 'audit_v6' } as const;

const DIR_SUFFIX: Record<Direction, string> = { ingress: 'in', egress: 'out' };
const PREFIX = /^nfkube (in|out) ([a-z0-9_]{1,32})$/;
/** The log prefix of the source check's drops (src/policy/render/source-check.ts), beside the deny
 * chains' prefixes the drop log parses. */
export const SPOOFED_LOG_PREFIX = 'nfkube spoofed';

/** The per-address counter sets: `deny_<in|out>_<v4|v6>` count what the default deny caught,
 * `audited_<in|out>_<v4|v6>` what audit mode let through instead. Each holds the addresses of
 * the vmap of its direction and family, keyed alike. */
export const COUNTER_SETS = {
  deny: { ingress: { v4: 'deny_in_v4', v6: 'deny_in_v6' }, egress: { v4: 'deny_out_v4', v6: 'deny_out_v6' } },
  audited: { ingress: { v4: 'audited_in_v4', v6: 'audited_in_v6' }, egress: { v4: 'audited_out_v4', v6: 'audited_out_v6' } },
} as const;

export type CounterKind = keyof typeof COUNTER_SETS;

/** The counter set names, with what each counts. */
export function counterSets(audit: boolean): { name: string; kind: CounterKind; direction: Direction; fam: IpFamily }[] {
  const out: { name: string; kind: CounterKind; direction: Direction; fam: IpFamily }[] = [];
  for (const kind of audit ? (['deny', 'audited'] as const) : (['deny'] as const)) {
    for (const direction of ['ingress', 'egress'] as const) for (const fam of ['v4', 'v6'] as const) out.push({ name: COUNTER_SETS[kind][direction][fam], kind, direction, fam });
  }
  return out;
}

/** The log prefix names the direction and the combination chain's id; the agent names the pod
 * by the packet's address (ingress: destination, egress: source). */
export function dropLogPrefix(dir: Direction, comboId: string): string {
  return `nfkube ${DIR_SUFFIX[dir]} ${comboId}`;
}

export function parseDropLogPrefix(prefix: string | undefined): { direction: Direction; comboId: string } | undefined {
  const m = prefix === undefined ? null : PREFIX.exec(prefix);
  return m ? { direction: m[1] === 'in' ? 'ingress' : 'egress', comboId: m[2] } : undefined;
}

/** The default deny chains, one per direction. */
export const DENY_CHAINS: Record<Direction, string> = { ingress: 'default_deny_in', egress: 'default_deny_out' };

/** The drop log rule of a combination chain (none without --log-drops). */
export function logRule(dir: Direction, comboId: string, log: DropLogOptions | undefined): Expr[] | undefined {
  if (!log) return undefined;
  const exprs: Expr[] = log.rate > 0 ? [b.limit(log.rate, log.burst)] : [];
  exprs.push(b.log(log.group, dropLogPrefix(dir, comboId)));
  return exprs;
}

/** The expression lists of a default deny chain before its deny, with the comment each rule
 * carries (undefined: none). */
export function denyChainRules(dir: Direction, audit: boolean): { exprs: Expr[]; comment?: string }[] {
  const out: { exprs: Expr[]; comment?: string }[] = [];
  const field = dir === 'ingress' ? 'daddr' : 'saddr';
  if (audit) {
    const comment = formatLabel({ kind: 'audit', direction: dir });
    for (const fam of ['v4', 'v6'] as const) {
      const addr = fam === 'v4' ? (`ip ${field}` as const) : (`ip6 ${field}` as const);
      // The address is loaded again for the update: a register a lookup read is not reused.
      out.push({ exprs: [...b.matchAddrInSet(addr, AUDIT_SETS[fam]), b.load(addr), b.updateSet(COUNTER_SETS.audited[dir][fam]), b.accept()], comment });
    }
  }
  for (const fam of ['v4', 'v6'] as const) {
    const addr = fam === 'v4' ? (`ip ${field}` as const) : (`ip6 ${field}` as const);
    out.push({ exprs: [...b.loadAddr(addr), b.updateSet(COUNTER_SETS.deny[dir][fam])] });
  }
  return out;
}
