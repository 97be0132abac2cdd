/** The desired table, kept current event by event: a PolicyDelta is applied by re-rendering only
 * the parts it names, into the desired model, which records every chain, set and element it
 * changed in the scope so the next diff against the committed table looks at nothing else. What
 * exists while something uses it is a claim of the model (src/pipeline/desired-model.ts), as a
 * full render makes them (Renderer.render): a combination chain while a target uses it, a policy
 * chain in a direction while a combination chain jumps to it, a port set while a policy uses it,
 * a vmap entry while a target is at its address. */
import { CompiledPolicy, IpBlockSet, PolicyDelta, PolicyIR, Target } from '../engine/ir';
import { ChangeScope } from '../../pipeline/scope';
import { DesiredModel } from '../../pipeline/desired-model';
import { elementKey, RulesetModel, SetModel } from '../../ruleset/model';
import { SetElement } from '../../nft/types';
import { ipv4, ipv6 } from '../../net/ip-bytes';
import { AuditEntries } from './audit-entries';
import { namespaceOf } from '../modes';
import { claimVmapEntries, comboChainName, releaseVmapEntries, VMAPS, namedPortSetName, peerElement, peerSetName, policyChainName, policyDirection, policyLabel, Renderer, tripleElement } from './render';
import { Direction } from '../engine/ir';
import { PodInfo } from '../../k8s/model';
import { ChangeOf } from '../../k8s/source';
import { LocalSources } from './source-check';

const DIRECTIONS = ['ingress', 'egress'] as const;

export class DesiredTable {
  /** The model with its claims; the ClusterNetworkPolicy tiers write into it too. */
  readonly desired: DesiredModel;
  private readonly targets = new Map<string, Target>();
  private readonly policies = new Map<string, CompiledPolicy>();
  private readonly ipBlocks = new Map<string, IpBlockSet>();
  /** Audit set elements (with audit support on). */
  private readonly audit?: AuditEntries;
  /** Combination chains in the model, with what they are made of. */
  private readonly combos = new Map<string, { dir: Direction; policies: readonly string[] }>();
  /** Policy id -> the names of the port sets it claims. */
  private readonly policySets: Map<string, string[]>;
  /** Every local pod's addresses, in the source sets (src/policy/render/source-check.ts). */
  private readonly sources: LocalSources;

  constructor(private readonly renderer: Renderer, ir: PolicyIR, pods: Iterable<PodInfo> = []) {
    const rendered = renderer.render(ir, pods);
    this.desired = rendered.desired;
    this.policySets = rendered.policySets;
    this.audit = rendered.audit;
    this.sources = rendered.sources;
    for (const [k, t] of ir.targets) {
      this.targets.set(k, t);
      for (const dir of DIRECTIONS) {
        const policies = t[dir];
        if (policies) this.combos.set(comboChainName(policies, dir), { dir, policies });
      }
    }
    for (const [k, p] of ir.policies) this.policies.set(k, p);
    for (const [k, ib] of ir.ipBlockSets) this.ipBlocks.set(k, ib);
  }

  get model(): RulesetModel {
    return this.desired.model;
  }

  /** A pod was added, changed or deleted: its addresses join or leave the source sets; returns
   * whether they changed. */
  podChanged(change: ChangeOf<'Pod'>, scope: ChangeScope): boolean {
    const d = this.desired.recordingIn(scope);
    return change.type === 'upsert' ? this.sources.upsert(change.object, d) : this.sources.delete(change.object, d);
  }

  /** The node's neighbour table has `mac` for `address` now (undefined: no usable entry); a
   * local pod's address is bound to it. Returns whether the sets changed. */
  neighbourChanged(address: string, mac: Buffer | undefined, scope: ChangeScope): boolean {
    return this.sources.neighbour(address, mac, this.desired.recordingIn(scope));
  }

  /** A namespace's policy mode changed: its pods' addresses join or leave the audit sets. */
  namespaceModeChanged(namespace: string, scope: ChangeScope): void {
    this.desired.recordingIn(scope);
    for (const t of this.targets.values()) if (namespaceOf(t.key) === namespace) this.audit?.sync(t.key, t);
  }

  /** The target holding an address's vmap entry in `dir` (whose default deny counts it). */
  podAt(address: string, dir: Direction): string | undefined {
    const v6 = address.includes(':');
    let key: Buffer;
    try {
      key = v6 ? ipv6(address) : ipv4(address);
    } catch {
      return undefined;
    }
    return this.desired.holderOf(VMAPS[dir][v6 ? 'v6' : 'v4'], key.toString('hex'));
  }

  private policyNames = (id: string) => policyLabel(this.policies.get(id));

  /** Applies one engine delta in the order ir.ts prescribes, recording what it changed in `scope`. */
  apply(delta: PolicyDelta, scope: ChangeScope): void {
    const r = this.renderer;
    const d = this.desired.recordingIn(scope);
    const putSets = (sets: SetModel[]) => sets.forEach((s) => d.putSet(s.set.name, s));
    for (const ps of delta.peerSets.create) putSets(r.peerSet(ps));
    for (const ib of delta.ipBlockSets.create) {
      putSets([r.ipBlockSet(ib)]);
      this.ipBlocks.set(ib.id, ib);
    }
    for (const np of delta.namedPortSets.create) putSets(r.namedPortSet(np));
    const elementChange = (setName: string, elems: SetElement[], add: boolean) => {
      for (const e of elems) {
        if (add) d.putElement(setName, elementKey(e), e);
        else d.deleteElement(setName, elementKey(e));
      }
    };
    for (const [changes, add] of [[delta.peerSets.add, true], [delta.peerSets.del, false]] as const) {
      for (const ch of changes) for (const fam of ['v4', 'v6'] as const) elementChange(peerSetName(ch.set, fam), ch[fam].map(peerElement), add);
    }
    for (const [changes, add] of [[delta.namedPortSets.add, true], [delta.namedPortSets.del, false]] as const) {
      for (const ch of changes) for (const fam of ['v4', 'v6'] as const) elementChange(namedPortSetName(ch.set, fam), ch[fam].map(tripleElement), add);
    }
    for (const p of delta.policies.upsert) {
      const labelBefore = policyLabel(this.policies.get(p.id));
      this.policies.set(p.id, p);
      this.renderPolicyChains(p.id);
      // Combination chains carry the policy's name in their comments: rendered again only when
      // that name changed (an edit of the policy's rules leaves them as they are).
      if (policyLabel(p) !== labelBefore) for (const [name, c] of this.combos) if (c.policies.includes(p.id)) d.putChain(name, r.comboChain(c.dir, c.policies, this.policyNames));
    }
    const targetOf = (key: string) => this.targets.get(key)!;
    for (const t of delta.targets.upsert) {
      const before = this.targets.get(t.key);
      if (before) releaseVmapEntries(r, d, before, targetOf);
      this.targets.set(t.key, t);
      this.useCombos(t.key, before, t);
      claimVmapEntries(r, d, t);
      this.audit?.sync(t.key, t);
    }
    for (const key of delta.targets.remove) {
      const t = this.targets.get(key);
      if (!t) continue;
      releaseVmapEntries(r, d, t, targetOf);
      this.audit?.sync(key, undefined);
      this.targets.delete(key);
      this.useCombos(key, t, undefined);
    }
    for (const id of delta.policies.remove) {
      this.policies.delete(id);
      r.forget(id);
      for (const dir of DIRECTIONS) d.putChain(policyChainName(id, dir), undefined);
      this.putPolicySets(id, []);
    }
    for (const id of delta.peerSets.remove) for (const fam of ['v4', 'v6'] as const) d.putSet(peerSetName(id, fam), undefined);
    for (const id of delta.ipBlockSets.remove) {
      d.putSet(id, undefined);
      this.ipBlocks.delete(id);
    }
    for (const id of delta.namedPortSets.remove) for (const fam of ['v4', 'v6'] as const) d.putSet(namedPortSetName(id, fam), undefined);
  }

  /** The directions in which some combination chain jumps to the policy's chain. */
  private usedDirections(policyId: string): Direction[] {
    return (['egress', 'ingress'] as const).filter((dir) => this.desired.claimants(policyDirection(policyId, dir)).size > 0);
  }

  /** Renders a policy's chains and port sets again for the directions now in use. */
  private renderPolicyChains(policyId: string): void {
    const p = this.policies.get(policyId);
    const rendered = p ? this.renderer.policy(p, this.ipBlocks, this.usedDirections(policyId)) : { chains: [], sets: [] };
    const chains = new Map(rendered.chains.map((c) => [c.chain.name, c]));
    for (const dir of DIRECTIONS) this.desired.putChain(policyChainName(policyId, dir), chains.get(policyChainName(policyId, dir)));
    this.putPolicySets(policyId, rendered.sets);
  }

  /** Replaces a policy's claims of port sets (named by their content, shared among policies). */
  private putPolicySets(policyId: string, sets: SetModel[]): void {
    for (const s of sets) this.desired.claimSet(s.set.name, policyId, () => s);
    const now = new Set(sets.map((s) => s.set.name));
    for (const name of this.policySets.get(policyId) ?? []) if (!now.has(name)) this.desired.releaseSet(name, policyId);
    if (sets.length) this.policySets.set(policyId, [...now]);
    else this.policySets.delete(policyId);
  }

  /** Moves a target from the combinations of `before` to those of `after`: a chain appears with
   * its first user and goes with its last, in the same transaction as the vmap elements (the
   * diff adds chains before elements point at them, and deletes them after); a policy's chain in
   * a direction likewise with the combination chains jumping to it. */
  private useCombos(key: string, before: Target | undefined, after: Target | undefined): void {
    const d = this.desired;
    for (const dir of DIRECTIONS) {
      const was = before?.[dir] ? comboChainName(before[dir], dir) : undefined;
      const policies = after?.[dir];
      const now = policies ? comboChainName(policies, dir) : undefined;
      if (was === now) continue;
      if (now && policies && d.claimChain(now, key, () => this.renderer.comboChain(dir, policies, this.policyNames))) {
        this.combos.set(now, { dir, policies });
        for (const id of policies) if (d.claim(policyDirection(id, dir), now)) this.renderPolicyChains(id);
      }
      const old = was && this.combos.get(was);
      if (!old || !d.releaseChain(was, key)) continue;
      this.combos.delete(was);
      for (const id of old.policies) if (d.release(policyDirection(id, dir), was)) this.renderPolicyChains(id);
    }
  }
}
