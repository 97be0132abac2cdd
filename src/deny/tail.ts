/** The rules that end every pod chain, after the jumps to the policies that select the pod: what
 * happens to a packet none of them accepted.
 *
 *   limit rate R/second burst B packets log prefix "nfkube in <target>" group G  (--log-drops)
 *   ip daddr @audit_v4 counter accept    (audit mode: the pod's address is in the audit set)
 *   ip6 daddr @audit_v6 counter accept
 *   counter drop                         (or reject)
 *
 * The log rule has no verdict, so a packet over the limit goes on to the same verdict unlogged:
 * the token bucket lives in the kernel, per pod chain, and a flood cannot reach the agent. A
 * pod's mode is the membership of its addresses in the audit sets: switching a namespace is one
 * transaction of element changes, no chain is rendered again. Egress chains match saddr. */
import { formatLabel } from '../agent/labels';
import * as b from '../nft/build';
import { Expr } from '../nft/types';
import { Direction } from '../policy/ir';

export interface DropLogOptions {
  /** nfnetlink_log group the deny rules log to. */
  group: number;
  /** Logged packets per second per pod and direction; 0: no limit. */
  rate: number;
  burst: number;
}

export const AUDIT_SETS = { v4: 'audit_v4', v6: 'audit_v6' } as const;

const PREFIX_DIR: Record<Direction, string> = { ingress: 'in', egress: 'out' };
const PREFIX = /^nfkube (in|out) ([a-z0-9_]{1,32})$/;

/** The log prefix names the direction and the pod chain's target id: the agent resolves it to
 * the pod and its policies without guessing from the addresses. */
export function dropLogPrefix(dir: Direction, targetId: string): string {
  return `nfkube ${PREFIX_DIR[dir]} ${targetId}`;
}

export function parseDropLogPrefix(prefix: string | undefined): { direction: Direction; targetId: string } | undefined {
  const m = prefix === undefined ? null : PREFIX.exec(prefix);
  return m ? { direction: m[1] === 'in' ? 'ingress' : 'egress', targetId: m[2] } : undefined;
}

/** `audit <direction> <pod>`: the comment of the audit accepts (their counters count what audit
 * mode let through). */
export const auditComment = (dir: Direction, podKey: string) => formatLabel({ kind: 'audit', direction: dir, pod: podKey });

/** The expression lists of the tail before the final deny, with the comment each rule carries
 * (undefined: none). */
export function tailRules(dir: Direction, targetId: string, podKey: string, opts: { log?: DropLogOptions; audit: boolean }): { exprs: Expr[]; comment?: string }[] {
  const out: { exprs: Expr[]; comment?: string }[] = [];
  if (opts.log) {
    const exprs: Expr[] = opts.log.rate > 0 ? [b.limit(opts.log.rate, opts.log.burst)] : [];
    exprs.push(b.log(opts.log.group, dropLogPrefix(dir, targetId)));
    out.push({ exprs });
  }
  if (opts.audit) {
    const field = dir === 'ingress' ? 'daddr' : 'saddr';
    const comment = auditComment(dir, podKey);
    out.push({ exprs: [...b.matchAddrInSet(`ip ${field}`, AUDIT_SETS.v4), b.counter(), b.accept()], comment });
    out.push({ exprs: [...b.matchAddrInSet(`ip6 ${field}`, AUDIT_SETS.v6), b.counter(), b.accept()], comment });
  }
  return out;
}
