/** The ClusterNetworkPolicy part of the desired policy table, kept current delta by delta: like
 * DesiredTable (src/policy/render/desired.ts) it re-renders only what a ClusterDelta names into
 * the desired model, which records every chain, set and element it changed in the scope. While no ClusterNetworkPolicy exists the
 * table is exactly what it is without them: no tier chains, no hooks in the base chains. */
import { ipv4, ipv6 } from '../../net/ip-bytes';
import type { SetElement } from '../../nft/types';
import type { ChangeScope } from '../../pipeline/scope';
import type { DesiredModel } from '../../pipeline/desired-model';
import { elementKey, type ChainModel, type SetModel } from '../../ruleset/model';
import type { Renderer } from '../render/render';
import { namedPortSetName, peerElement, tripleElement } from '../render/render';
import type { Direction, IpBlockSet } from '../engine/ir';
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
  /** Audit mode: the addresses of the local pods in audit namespaces; each address is claimed
   * (`cnp-audit address`) by its pods. */
  private readonly auditPods = new Map<string, string[]>();

  constructor(
    private readonly renderer: ClusterRenderer,
    private readonly base: Renderer,
    private readonly desired: DesiredModel,
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
    const d = this.desired.recordingIn(scope);
    const putSet = (s: SetModel) => d.putSet(s.set.name, s);
    for (const s of delta.addressSets.create) r.addressSet(s).forEach(putSet);
    for (const ib of delta.ipBlockSets.create) (this.ipBlocks.set(ib.id, ib), putSet(this.base.ipBlockSet(ib)));
    for (const np of delta.namedPortSets.create) this.base.namedPortSet(np).forEach(putSet);
    for (const [changes, add] of [[delta.addressSets.add, true], [delta.addressSets.del, false]] as const) {
      for (const ch of changes) for (const fam of ['v4', 'v6'] as const) this.elements(`${ch.set}_${fam}`, ch[fam].map(peerElement), add);
    }
    for (const [changes, add] of [[delta.namedPortSets.add, true], [delta.namedPortSets.del, false]] as const) {
      for (const ch of changes) for (const fam of ['v4', 'v6'] as const) this.elements(namedPortSetName(ch.set, fam), ch[fam].map(tripleElement), add);
    }
    const dirty = new Set<string>();
    for (const p of delta.policies.remove) (this.policies.delete(p.id), dirty.add(p.id));
    for (const p of delta.policies.upsert) (this.policies.set(p.id, p), dirty.add(p.id));
    if (dirty.size > 0) this.relink(dirty);
    for (const id of delta.addressSets.remove) for (const fam of ['v4', 'v6'] as const) d.putSet(`${id}_${fam}`, undefined);
    for (const id of delta.ipBlockSets.remove) (this.ipBlocks.delete(id), d.putSet(id, undefined));
    for (const id of delta.namedPortSets.remove) for (const fam of ['v4', 'v6'] as const) d.putSet(namedPortSetName(id, fam), undefined);
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
    const d = this.desired.recordingIn(scope);
    for (const ip of before) if (d.release(`cnp-audit ${ip}`, key) && this.present) this.elements(auditSetOf(ip), [auditElement(ip)], false);
    for (const ip of now) if (d.claim(`cnp-audit ${ip}`, key) && this.present) this.elements(auditSetOf(ip), [auditElement(ip)], true);
  }

  private elements(setName: string, elems: SetElement[], add: boolean): void {
    for (const e of elems) {
      if (add) this.desired.putElement(setName, elementKey(e), e);
      else this.desired.deleteElement(setName, elementKey(e));
    }
  }

  /** Renders again the chains of changed policies and the chains whose link changed; turns the
   * tiers on or off as policies come and go. */
  private relink(dirty: Set<string>): void {
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
    if (present !== this.present) this.turn(present);
    for (const [name, w] of wanted) {
      if (this.links.get(name) === w.links && !w.changed) continue;
      this.links.set(name, w.links);
      this.desired.putChain(name, w.render());
    }
    for (const name of [...this.links.keys()]) {
      if (wanted.has(name)) continue;
      this.links.delete(name);
      // Entry chains go with the tiers (turn); policy chains with their policy.
      if (present || !/^cnp_(admin|baseline)_/.test(name)) this.desired.putChain(name, undefined);
    }
  }

  /** The tiers' fixed chains and sets, and the base chains' hooks into them, on or off. */
  private turn(on: boolean): void {
    this.present = on;
    const d = this.desired;
    const fixed = this.renderer.fixed();
    for (const c of fixed.chains) d.putChain(c.chain.name, on ? c : undefined);
    for (const s of fixed.sets) {
      if (on) {
        for (const ip of new Set([...this.auditPods.values()].flat())) {
          const e = auditElement(ip);
          if (auditSetOf(ip) === s.set.name) s.elements.set(elementKey(e), e);
        }
      }
      d.putSet(s.set.name, on ? s : undefined);
    }
    for (const c of this.base.dispatchChains(on)) d.putChain(c.chain.name, c);
    if (!on) for (const name of this.links.keys()) if (/^cnp_(admin|baseline)_/.test(name)) this.links.delete(name);
  }
}

function auditSetOf(ip: string): string {
  return ip.includes(':') ? CLUSTER_AUDIT_SETS.v6 : CLUSTER_AUDIT_SETS.v4;
}

function auditElement(ip: string): SetElement {
  return { key: ip.includes(':') ? ipv6(ip) : ipv4(ip) };
}
