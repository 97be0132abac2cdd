/** Renders the compiled ClusterNetworkPolicy tiers (ir.ts) into chains and sets of the policy
 * table. Per tier and direction (hooks.ts joins them to the base chains):
 *
 *   cnp_admin_in       per policy of the tier with ingress rules, in tier order:
 *                        jump cnp_<id>_in
 *                        then each of its Pass rules again, gated by its subject set: return
 *   cnp_<id>_in        ip daddr != @<id>_subj_v4 return; ip6 daddr != @<id>_subj_v6 return
 *                      one rule per (rule x peer x port), in spec order, counted:
 *                        Accept: accept   Deny: goto cnp_deny_in   Pass: return
 *                      (Deny with --log-drops: a limited log rule before, prefix
 *                       "nfkube cnp in <id> <index>")
 *   cnp_deny_in        [ip daddr @cnp_audit_v4 accept (audit mode)]; drop (or reject)
 *
 * Why the entry chain jumps each policy rather than the policies being linked by gotos: the
 * kernel refuses a chain path deeper than 16 (EMLINK), and a linked list of N policies is N deep;
 * this is 3 deep for any number. A policy chain returns when no rule of it matched or when a Pass
 * rule matched first (an Accept or Deny before it would have ended the packet's path), so the
 * entry chain tells the two apart by its copy of the Pass rules: the first policy whose Pass
 * matches returns from the whole tier, to the base chain. A policy's edit rewrites its own chain
 * (and the entry chain when its Pass rules change); a priority change rewrites the entry chain; a
 * pod or label change only set elements. Egress matches the subject by source address, ingress by
 * destination; the peer is the other end. */
import * as b from '../../nft/build';
import type { Chain, Expr, NftSet, Rule } from '../../nft/types';
import type { ChainModel, SetModel } from '../../ruleset/model';
import type { Renderer } from '../render/render';
import type { DropLogOptions } from '../render/tail';
import type { CompiledRule, Direction, IpBlockSet, PeerRef } from '../engine/ir';
import type { AddressSet } from './engine';
import { subjectSetId } from './engine';
import { tierChainName, type TierName } from './hooks';
import type { CompiledClusterPolicy, CompiledClusterRule } from './ir';
import { clusterLogPrefix, clusterRuleLabel } from './labels';

export interface ClusterRenderOptions {
  table: string;
  denyAction: 'drop' | 'reject';
  log?: DropLogOptions;
  /** Audit mode support: the deny chains accept the addresses of the audit sets. */
  audit: boolean;
}

const DIR_SUFFIX: Record<Direction, string> = { ingress: 'in', egress: 'out' };
export const CLUSTER_DENY_CHAINS: Record<Direction, string> = { ingress: 'cnp_deny_in', egress: 'cnp_deny_out' };
export const CLUSTER_AUDIT_SETS = { v4: 'cnp_audit_v4', v6: 'cnp_audit_v6' } as const;
export const clusterPolicyChainName = (policyId: string, dir: Direction): string => `cnp_${policyId}_${DIR_SUFFIX[dir]}`;
export const tierOf = (p: CompiledClusterPolicy): TierName => (p.tier === 'Admin' ? 'admin' : 'baseline');

type Fam = 'v4' | 'v6';

export class ClusterRenderer {
  constructor(
    /** NetworkPolicy's renderer: the same peer, port and named-port matches, and set shapes. */
    private readonly base: Renderer,
    readonly opts: ClusterRenderOptions,
  ) {}

  private chain(name: string): Chain {
    return { family: 'inet', table: this.opts.table, name };
  }

  private rule(chain: string, exprs: Expr[], comment?: string): Rule {
    const r: Rule = { family: 'inet', table: this.opts.table, chain, exprs };
    if (comment !== undefined) r.comment = comment;
    return r;
  }

  /** What exists while any ClusterNetworkPolicy does: the tiers' entry chains (empty), the deny
   * chains and, with audit support, the audit sets. */
  fixed(): { chains: ChainModel[]; sets: SetModel[] } {
    const chains: ChainModel[] = [];
    for (const tier of ['admin', 'baseline'] as const) for (const dir of ['ingress', 'egress'] as const) chains.push(this.entryChain(tier, dir, [], new Map()));
    for (const dir of ['ingress', 'egress'] as const) {
      const name = CLUSTER_DENY_CHAINS[dir];
      const rules: Rule[] = [];
      const field = dir === 'ingress' ? 'daddr' : 'saddr';
      if (this.opts.audit) {
        rules.push(this.rule(name, [...b.matchAddrInSet(`ip ${field}`, CLUSTER_AUDIT_SETS.v4), b.accept()]));
        rules.push(this.rule(name, [...b.matchAddrInSet(`ip6 ${field}`, CLUSTER_AUDIT_SETS.v6), b.accept()]));
      }
      rules.push(this.rule(name, [this.opts.denyAction === 'reject' ? b.rejectAdminProhibited() : b.drop()]));
      chains.push({ chain: this.chain(name), rules });
    }
    const sets: SetModel[] = [];
    if (this.opts.audit) {
      sets.push({ set: this.set(CLUSTER_AUDIT_SETS.v4, 'ipv4_addr'), elements: new Map() });
      sets.push({ set: this.set(CLUSTER_AUDIT_SETS.v6, 'ipv6_addr'), elements: new Map() });
    }
    return { chains, sets };
  }

  private set(name: string, key: 'ipv4_addr' | 'ipv6_addr'): NftSet {
    return { family: 'inet', table: this.opts.table, name, key: [key], flags: 0 };
  }

  /** A tier's entry chain in `dir`: a jump to each of `policies`' chains in tier order, each
   * followed by its Pass rules gated by its subject set (none: empty). */
  entryChain(tier: TierName, dir: Direction, policies: readonly CompiledClusterPolicy[], ipBlocks: ReadonlyMap<string, IpBlockSet>): ChainModel {
    const name = tierChainName(tier, dir);
    const field = dir === 'ingress' ? 'daddr' : 'saddr';
    const subject = (p: CompiledClusterPolicy) => (fam: 'v4' | 'v6') => b.matchAddrInSet(fam === 'v4' ? `ip ${field}` : `ip6 ${field}`, `${subjectSetId(p.id)}_${fam}`);
    const rules: Rule[] = [];
    for (const p of policies) {
      rules.push(this.rule(name, [b.jump(clusterPolicyChainName(p.id, dir))]));
      for (const rule of p[dir]) {
        if (rule.action !== 'Pass') continue;
        for (const exprs of this.base.ruleMatches(asRuleEntry(rule), dir, ipBlocks, [b.verdict({ kind: 'return' })], undefined, subject(p))) rules.push(this.rule(name, exprs));
      }
    }
    return { chain: this.chain(name), rules };
  }

  /** An address set: `<id>_v4`, `<id>_v6` (NetworkPolicy's peer set shape). */
  addressSet(s: AddressSet): SetModel[] {
    return this.base.peerSet({ id: s.id, describe: '', v4: s.v4, v6: s.v6 });
  }

  /** A policy's chain in `dir`: it returns for a packet not of its subjects. */
  policyChain(p: CompiledClusterPolicy, dir: Direction, ipBlocks: ReadonlyMap<string, IpBlockSet>): ChainModel {
    const name = clusterPolicyChainName(p.id, dir);
    const field = dir === 'ingress' ? 'daddr' : 'saddr';
    const rules: Rule[] = [];
    for (const fam of ['v4', 'v6'] as const) {
      const addr = fam === 'v4' ? (`ip ${field}` as const) : (`ip6 ${field}` as const);
      rules.push(this.rule(name, [...b.matchAddrInSet(addr, `${subjectSetId(p.id)}_${fam}`, true), b.verdict({ kind: 'return' })]));
    }
    for (const rule of p[dir]) {
      const comment = clusterRuleLabel(p.name, dir, rule.index);
      const entry = asRuleEntry(rule);
      if (rule.action === 'Deny' && this.opts.log) {
        const log: Expr[] = this.opts.log.rate > 0 ? [b.limit(this.opts.log.rate, this.opts.log.burst)] : [];
        log.push(b.log(this.opts.log.group, clusterLogPrefix(dir, p.id, rule.index)));
        for (const exprs of this.base.ruleMatches(entry, dir, ipBlocks, log)) rules.push(this.rule(name, exprs, comment));
      }
      for (const exprs of this.base.ruleMatches(entry, dir, ipBlocks, [b.counter(), this.verdictOf(rule, dir)])) rules.push(this.rule(name, exprs, comment));
    }
    return { chain: this.chain(name), rules };
  }

  private verdictOf(rule: CompiledClusterRule, dir: Direction): Expr {
    if (rule.action === 'Accept') return b.accept();
    if (rule.action === 'Pass') return b.verdict({ kind: 'return' });
    return b.goto(CLUSTER_DENY_CHAINS[dir]);
  }
}

/** A rule as NetworkPolicy's rule entry shape: node sets are address sets like pod sets. */
export function asRuleEntry(rule: CompiledClusterRule): CompiledRule {
  const peers = rule.peers === 'any' ? 'any' : rule.peers.map((p): PeerRef => (p.kind === 'nodes' ? { kind: 'pods', set: p.set } : p));
  const entry: CompiledRule = { peers, ports: rule.ports };
  if (rule.namedPorts) entry.namedPorts = rule.namedPorts;
  return entry;
}

export type { Fam };
