/** The desired table, kept current event by event: a PolicyDelta is applied by re-rendering only
 * the parts it names, and every chain, set and element it changed is recorded in a scope so the
 * next diff against the committed table looks at nothing else. */
import { CompiledPolicy, IpBlockSet, PolicyDelta, PolicyIR, Target } from '../policy/ir';
import { ChangeScope } from '../pipeline/scope';
import { elementKey, RulesetModel } from '../ruleset/model';
import { namedPortSetName, peerElement, peerSetName, podChainName, policyChainName, policyLabel, Renderer, tripleElement } from './render';

export class DesiredTable {
  readonly model: RulesetModel;
  private readonly targets = new Map<string, Target>();
  private readonly policies = new Map<string, CompiledPolicy>();
  private readonly ipBlocks = new Map<string, IpBlockSet>();
  /** vmap entry (`set key`) -> keys of the targets claiming it, sorted; the first holds it, as in
   * a full render, and when it leaves the entry passes to the next (two pods may briefly share an
   * address, and the one that stays must stay isolated). */
  private readonly vmapClaims = new Map<string, string[]>();

  constructor(private readonly renderer: Renderer, ir: PolicyIR) {
    this.model = renderer.full(ir, this.vmapClaims);
    for (const [k, t] of ir.targets) this.targets.set(k, t);
    for (const [k, p] of ir.policies) this.policies.set(k, p);
    for (const [k, ib] of ir.ipBlockSets) this.ipBlocks.set(k, ib);
  }

  private policyNames = (id: string) => policyLabel(this.policies.get(id));

  private putChain(scope: ChangeScope, name: string, model: RulesetModel['chains'] extends Map<string, infer V> ? V | undefined : never): void {
    if (model) this.model.chains.set(name, model);
    else this.model.chains.delete(name);
    scope.chains.add(name);
  }

  /** Applies one engine delta in the order ir.ts prescribes; returns what it touched. */
  apply(delta: PolicyDelta, scope: ChangeScope): void {
    const r = this.renderer;
    const m = this.model;
    for (const ps of delta.peerSets.create) for (const s of r.peerSet(ps)) (m.sets.set(s.set.name, s), scope.sets.add(s.set.name));
    for (const ib of delta.ipBlockSets.create) {
      const s = r.ipBlockSet(ib);
      m.sets.set(s.set.name, s);
      scope.sets.add(s.set.name);
      this.ipBlocks.set(ib.id, ib);
    }
    for (const np of delta.namedPortSets.create) for (const s of r.namedPortSet(np)) (m.sets.set(s.set.name, s), scope.sets.add(s.set.name));
    const elementChange = (setName: string, elems: ReturnType<typeof peerElement>[], add: boolean) => {
      const s = m.sets.get(setName);
      if (!s) throw new Error(`delta names set ${setName}, which the desired table does not have`);
      for (const e of elems) {
        const k = elementKey(e);
        if (add) s.elements.set(k, e);
        else s.elements.delete(k);
        scope.element(setName, k);
      }
    };
    for (const ch of delta.peerSets.add) {
      elementChange(peerSetName(ch.set, 'v4'), ch.v4.map(peerElement), true);
      elementChange(peerSetName(ch.set, 'v6'), ch.v6.map(peerElement), true);
    }
    for (const ch of delta.peerSets.del) {
      elementChange(peerSetName(ch.set, 'v4'), ch.v4.map(peerElement), false);
      elementChange(peerSetName(ch.set, 'v6'), ch.v6.map(peerElement), false);
    }
    for (const ch of delta.namedPortSets.add) {
      elementChange(namedPortSetName(ch.set, 'v4'), ch.v4.map(tripleElement), true);
      elementChange(namedPortSetName(ch.set, 'v6'), ch.v6.map(tripleElement), true);
    }
    for (const ch of delta.namedPortSets.del) {
      elementChange(namedPortSetName(ch.set, 'v4'), ch.v4.map(tripleElement), false);
      elementChange(namedPortSetName(ch.set, 'v6'), ch.v6.map(tripleElement), false);
    }
    for (const p of delta.policies.upsert) {
      this.policies.set(p.id, p);
      const chains = new Map(r.policyChains(p, this.ipBlocks).map((c) => [c.chain.name, c]));
      for (const dir of ['ingress', 'egress'] as const) {
        const name = policyChainName(p.id, dir);
        this.putChain(scope, name, chains.get(name));
      }
      // Pod chains carry the policy's name in their comments.
      for (const t of this.targets.values()) if (t.ingress?.includes(p.id) || t.egress?.includes(p.id)) this.renderTarget(t, scope);
    }
    for (const t of delta.targets.upsert) {
      this.removeVmapEntries(this.targets.get(t.key), scope);
      this.targets.set(t.key, t);
      this.renderTarget(t, scope);
      this.addVmapEntries(t, scope);
    }
    for (const key of delta.targets.remove) {
      const t = this.targets.get(key);
      if (!t) continue;
      this.removeVmapEntries(t, scope);
      this.targets.delete(key);
      for (const dir of ['ingress', 'egress'] as const) this.putChain(scope, podChainName(t.id, dir), undefined);
    }
    for (const id of delta.policies.remove) {
      this.policies.delete(id);
      r.forget(id);
      for (const dir of ['ingress', 'egress'] as const) this.putChain(scope, policyChainName(id, dir), undefined);
    }
    for (const id of delta.peerSets.remove) for (const fam of ['v4', 'v6'] as const) (m.sets.delete(peerSetName(id, fam)), scope.sets.add(peerSetName(id, fam)));
    for (const id of delta.ipBlockSets.remove) {
      m.sets.delete(id);
      scope.sets.add(id);
      this.ipBlocks.delete(id);
    }
    for (const id of delta.namedPortSets.remove) for (const fam of ['v4', 'v6'] as const) (m.sets.delete(namedPortSetName(id, fam)), scope.sets.add(namedPortSetName(id, fam)));
  }

  private renderTarget(t: Target, scope: ChangeScope): void {
    const chains = new Map(this.renderer.podChains(t, this.policyNames).map((c) => [c.chain.name, c]));
    for (const dir of ['ingress', 'egress'] as const) {
      const name = podChainName(t.id, dir);
      this.putChain(scope, name, chains.get(name));
    }
  }

  private removeVmapEntries(t: Target | undefined, scope: ChangeScope): void {
    if (!t) return;
    for (const [set, e] of this.renderer.vmapEntries(t)) {
      const k = elementKey(e);
      const entry = `${set} ${k}`;
      const claims = this.vmapClaims.get(entry);
      const at = claims ? claims.indexOf(t.key) : -1;
      if (!claims || at < 0) continue;
      claims.splice(at, 1);
      if (at > 0) continue;
      const elements = this.model.sets.get(set)!.elements;
      scope.element(set, k);
      if (claims.length === 0) {
        this.vmapClaims.delete(entry);
        elements.delete(k);
      } else {
        const next = this.renderer.vmapEntries(this.targets.get(claims[0])!).find(([s, x]) => s === set && elementKey(x) === k)!;
        elements.set(k, next[1]);
      }
    }
  }

  private addVmapEntries(t: Target, scope: ChangeScope): void {
    for (const [set, e] of this.renderer.vmapEntries(t)) {
      const k = elementKey(e);
      const entry = `${set} ${k}`;
      const claims = this.vmapClaims.get(entry);
      if (!claims) this.vmapClaims.set(entry, [t.key]);
      else if (!claims.includes(t.key)) {
        claims.push(t.key);
        claims.sort((x, y) => (x < y ? -1 : 1));
      }
      if (this.vmapClaims.get(entry)![0] !== t.key) continue;
      this.model.sets.get(set)!.elements.set(k, e);
      scope.element(set, k);
    }
  }
}
