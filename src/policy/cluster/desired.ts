/** The ClusterNetworkPolicy part of the desired policy table, kept current delta by delta: like
 * DesiredTable (src/agent/desired.ts) it re-renders only what a ClusterDelta names and records
 * every chain, set and element it changed in the scope. While no ClusterNetworkPolicy exists the
 * table is exactly what it is without them: no tier chains, no hooks in the base chains. */
import { ipv4, ipv6 } from '../../net/ip-bytes';
import type { SetElement } from '../../nft/types';
import type { ChangeScope } from '../../pipeline/scope';
import { elementKey, type ChainModel, type RulesetModel, type SetModel } from '../../ruleset/model';
import type { Renderer } from '../render/render';
import { namedPortSetName, peerElement, tripleElement } from '../render/render';
import type { Direction, IpBlockSet } from '../engine/ir';
import { CountedSet } from '../engine/index/collections';
import type { ClusterDelta, ClusterState } from './engine';
import { tierChainName, type TierName } from './hooks';
import { comparePolicies, type CompiledClusterPolicy } from './ir';
import { CLUSTER_AUDIT_SETS, clusterPolicyChainName, tierOf, type ClusterRenderer } from './render';

const TIER_NAMES: readonly TierName[] = ['admin', 'baseline'];
const DIRS: readonly Direction[] = ['ingress', 'egress'];

export class ClusterTiersTable {
  private readonly policies = new Map<string, CompiledClusterPolicy>();
  private readonly ipBlocks = new Map<string, IpBlockSet>();
  /** Tier chains as rendered: an entry chain with the policies it jumps to, in order, and their
   * Pass rules; a policy chain with ''. */
  private readonly links = new Map<string, string>();
  private present = false;
  /** Audit mode: the addresses of the local pods in audit namespaces, counted. */
  private readonly auditPods = new Map<string, string[]>();
  private readonly auditIps = new CountedSet();

  constructor(
    private readonly renderer: ClusterRenderer,
    private readonly base: Renderer,
    private readonly model: RulesetModel,
  ) {}

  /** The policies in force, by id. */
  policy(id: string): CompiledClusterPolicy | undefined {
    return this.policies.get(id);
  }

  get size(): number {
    return this.policies.size;
  }

  /** Loads the engine's whole state into the model (at start). */
  load(state: ClusterState, scope?: ChangeScope): void {
    this.apply(
      {
        policies: { upsert: [...state.policies.values()], remove: [] },
        addressSets: { create: [...state.addressSets.values()], remove: [], add: [], del: [] },
        ipBlockSets: { create: [...state.ipBlockSets.values()], remove: [] },
        namedPortSets: { create: [...state.namedPortSets.values()], remove: [], add: [], del: [] },
      },
      scope,
    );
  }

  apply(delta: ClusterDelta, scope?: ChangeScope): void {
    const r = this.renderer;
    const putSet = (s: SetModel) => (this.model.sets.set(s.set.name, s), scope?.sets.add(s.set.name));
    for (const s of delta.addressSets.create) r.addressSet(s).forEach(putSet);
    for (const ib of delta.ipBlockSets.create) (this.ipBlocks.set(ib.id, ib), putSet(this.base.ipBlockSet(ib)));
    for (const np of delta.namedPortSets.create) this.base.namedPortSet(np).forEach(putSet);
    for (const [changes, add] of [[delta.addressSets.add, true], [delta.addressSets.del, false]] as const) {
      for (const ch of changes) for (const fam of ['v4', 'v6'] as const) this.elements(`${ch.set}_${fam}`, ch[fam].map(peerElement), add, scope);
    }
    for (const [changes, add] of [[delta.namedPortSets.add, true], [delta.namedPortSets.del, false]] as const) {
      for (const ch of changes) for (const fam of ['v4', 'v6'] as const) this.elements(namedPortSetName(ch.set, fam), ch[fam].map(tripleElement), add, scope);
    }
    const dirty = new Set<string>();
    for (const p of delta.policies.remove) (this.policies.delete(p.id), dirty.add(p.id));
    for (const p of delta.policies.upsert) (this.policies.set(p.id, p), dirty.add(p.id));
    if (dirty.size > 0) this.relink(dirty, scope);
    for (const id of delta.addressSets.remove) for (const fam of ['v4', 'v6'] as const) (this.model.sets.delete(`${id}_${fam}`), scope?.sets.add(`${id}_${fam}`));
    for (const id of delta.ipBlockSets.remove) (this.ipBlocks.delete(id), this.model.sets.delete(id), scope?.sets.add(id));
    for (const id of delta.namedPortSets.remove) for (const fam of ['v4', 'v6'] as const) (this.model.sets.delete(namedPortSetName(id, fam)), scope?.sets.add(namedPortSetName(id, fam)));
  }

  /** A local pod's addresses in the audit sets while its namespace is in audit mode (`inAudit`);
   * undefined addresses: the pod is gone or not local. */
  auditPod(key: string, addresses: string[] | undefined, inAudit: boolean, scope?: ChangeScope): void {
    if (!this.renderer.opts.audit) return;
    const now = addresses && inAudit ? addresses : [];
    const before = this.auditPods.get(key) ?? [];
    if (before.length === now.length && before.every((a, i) => a === now[i])) return;
    if (now.length > 0) this.auditPods.set(key, now);
    else this.auditPods.delete(key);
    for (const ip of before) if (this.auditIps.remove(ip) && this.present) this.auditElement(ip, false, scope);
    for (const ip of now) if (this.auditIps.add(ip) && this.present) this.auditElement(ip, true, scope);
  }

  private auditElement(ip: string, add: boolean, scope?: ChangeScope): void {
    this.elements(ip.includes(':') ? CLUSTER_AUDIT_SETS.v6 : CLUSTER_AUDIT_SETS.v4, [{ key: ip.includes(':') ? ipv6(ip) : ipv4(ip) }], add, scope);
  }

  private elements(setName: string, elems: SetElement[], add: boolean, scope?: ChangeScope): void {
    const s = this.model.sets.get(setName);
    if (!s) throw new Error(`cluster delta names set ${setName}, which the desired table does not have`);
    for (const e of elems) {
      const k = elementKey(e);
      if (add) s.elements.set(k, e);
      else s.elements.delete(k);
      scope?.element(setName, k);
    }
  }

  private putChain(name: string, c: ChainModel | undefined, scope?: ChangeScope): void {
    if (c) this.model.chains.set(name, c);
    else this.model.chains.delete(name);
    scope?.chains.add(name);
  }

  /** Renders again the chains of changed policies and the chains whose link changed; turns the
   * tiers on or off as policies come and go. */
  private relink(dirty: Set<string>, scope?: ChangeScope): void {
    // Each chain with what it links to: an entry chain is rendered again when its policies, their
    // order or their Pass rules change; a policy chain when its policy does.
    const wanted = new Map<string, { links: string; changed: boolean; render: () => ChainModel }>();
    const ordered = [...this.policies.values()].sort(comparePolicies);
    if (ordered.length > 0) {
      for (const tier of TIER_NAMES) {
        for (const dir of DIRS) {
          const policies = ordered.filter((p) => tierOf(p) === tier && p[dir].length > 0);
          // The entry chain holds the order and each policy's Pass rules: an edit that keeps both
          // leaves it alone.
          const links = policies.map((p) => `${p.id}:${JSON.stringify(p[dir].filter((r) => r.action === 'Pass'))}`).join(',');
          wanted.set(tierChainName(tier, dir), { links, changed: false, render: () => this.renderer.entryChain(tier, dir, policies, this.ipBlocks) });
          for (const p of policies) wanted.set(clusterPolicyChainName(p.id, dir), { links: '', changed: dirty.has(p.id), render: () => this.renderer.policyChain(p, dir, this.ipBlocks) });
        }
      }
    }
    const present = ordered.length > 0;
    if (present !== this.present) this.turn(present, scope);
    for (const [name, w] of wanted) {
      if (this.links.get(name) === w.links && !w.changed) continue;
      this.links.set(name, w.links);
      this.putChain(name, w.render(), scope);
    }
    for (const name of [...this.links.keys()]) {
      if (wanted.has(name)) continue;
      this.links.delete(name);
      // Entry chains go with the tiers (turn); policy chains with their policy.
      if (present || !/^cnp_(admin|baseline)_/.test(name)) this.putChain(name, undefined, scope);
    }
  }

  /** The tiers' fixed chains and sets, and the base chains' hooks into them, on or off. */
  private turn(on: boolean, scope?: ChangeScope): void {
    this.present = on;
    const fixed = this.renderer.fixed();
    for (const c of fixed.chains) this.putChain(c.chain.name, on ? c : undefined, scope);
    for (const s of fixed.sets) {
      if (on) {
        for (const ip of this.auditIps.counts.keys()) {
          const e = { key: ip.includes(':') ? ipv6(ip) : ipv4(ip) };
          if ((s.set.name === CLUSTER_AUDIT_SETS.v6) === ip.includes(':')) s.elements.set(elementKey(e), e);
        }
        this.model.sets.set(s.set.name, s);
      } else this.model.sets.delete(s.set.name);
      scope?.sets.add(s.set.name);
    }
    for (const c of this.base.dispatchChains(on)) this.putChain(c.chain.name, c, scope);
    if (!on) for (const name of this.links.keys()) if (/^cnp_(admin|baseline)_/.test(name)) this.links.delete(name);
  }
}
