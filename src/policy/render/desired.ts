/** The desired table, kept current event by event: a PolicyDelta is applied by re-rendering only
 * the parts it names, and every chain, set and element it changed is recorded in a scope so the
 * next diff against the committed table looks at nothing else. */
import { CompiledPolicy, IpBlockSet, PolicyDelta, PolicyIR, Target } from '../engine/ir';
import { ChangeScope } from '../../pipeline/scope';
import { elementKey, RulesetModel, SetModel } from '../../ruleset/model';
import { SetElement } from '../../nft/types';
import { ipv4, ipv6 } from '../../net/ip-bytes';
import { AuditEntries } from './audit-entries';
import { namespaceOf } from '../modes';
import { comboChainName, VMAPS, namedPortSetName, peerElement, peerSetName, policyChainName, policyLabel, Renderer, tripleElement } from './render';
import { Direction } from '../engine/ir';
import { PodInfo } from '../../k8s/model';
import { ChangeOf } from '../../k8s/source';
import { LocalSources } from './source-check';

export class DesiredTable {
  readonly model: RulesetModel;
  private readonly targets = new Map<string, Target>();
  private readonly policies = new Map<string, CompiledPolicy>();
  private readonly ipBlocks = new Map<string, IpBlockSet>();
  /** vmap entry (`set key`) -> keys of the targets claiming it, sorted; the first holds it, as in
   * a full render, and when it leaves the entry passes to the next (two pods may briefly share an
   * address, and the one that stays must stay isolated). */
  private readonly vmapClaims = new Map<string, string[]>();
  /** Audit set elements (with audit support on). */
  private readonly audit?: AuditEntries;
  /** Combination chains by name, with the keys of the targets using each: a chain exists while
   * one target does, as in a full render. */
  private readonly combos = new Map<string, { dir: Direction; policies: readonly string[]; users: Set<string> }>();
  /** `policy direction` -> the combination chains jumping to that policy chain: it exists while
   * one does, as in a full render (usedDirections). */
  private readonly policyUsers = new Map<string, number>();

  /** Policy id -> the names of its port sets; a port set (named by its content) exists while a
   * policy uses it. */
  private readonly policySets = new Map<string, string[]>();
  private readonly portSetUsers = new Map<string, Set<string>>();

  /** Every local pod's addresses, in the source sets (src/policy/render/source-check.ts). */
  private readonly sources: LocalSources;

  constructor(private readonly renderer: Renderer, ir: PolicyIR, pods: Iterable<PodInfo> = []) {
    this.sources = new LocalSources(ir.nodeName);
    this.model = renderer.full(ir, this.vmapClaims, this.policySets, pods, this.sources);
    for (const [id, names] of this.policySets) for (const name of names) this.portSetUsers.set(name, (this.portSetUsers.get(name) ?? new Set()).add(id));
    for (const [k, t] of ir.targets) {
      this.targets.set(k, t);
      for (const dir of ['ingress', 'egress'] as const) {
        const policies = t[dir];
        if (!policies) continue;
        const name = comboChainName(policies, dir);
        const combo = this.combos.get(name);
        if (combo) combo.users.add(k);
        else {
          this.combos.set(name, { dir, policies, users: new Set([k]) });
          for (const id of policies) this.policyUsers.set(`${id} ${dir}`, (this.policyUsers.get(`${id} ${dir}`) ?? 0) + 1);
        }
      }
    }
    for (const [k, p] of ir.policies) this.policies.set(k, p);
    for (const [k, ib] of ir.ipBlockSets) this.ipBlocks.set(k, ib);
    if (renderer.opts.modes) {
      this.audit = new AuditEntries(renderer, this.model);
      for (const t of ir.targets.values()) this.audit.sync(t.key, t);
    }
  }

  /** A pod was added, changed or deleted: its addresses join or leave the source sets; returns
   * whether they changed. */
  podChanged(change: ChangeOf<'Pod'>, scope: ChangeScope): boolean {
    return change.type === 'upsert' ? this.sources.upsert(change.object, this.model, scope) : this.sources.delete(change.object, this.model, scope);
  }

  /** The node's neighbour table has `mac` for `address` now (undefined: no usable entry); a
   * local pod's address is bound to it. Returns whether the sets changed. */
  neighbourChanged(address: string, mac: Buffer | undefined, scope: ChangeScope): boolean {
    return this.sources.neighbour(address, mac, this.model, scope);
  }

  /** A namespace's policy mode changed: its pods' addresses join or leave the audit sets. */
  namespaceModeChanged(namespace: string, scope: ChangeScope): void {
    for (const t of this.targets.values()) if (namespaceOf(t.key) === namespace) this.audit?.sync(t.key, t, scope);
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
    return this.vmapClaims.get(`${VMAPS[dir][v6 ? 'v6' : 'v4']} ${key.toString('hex')}`)?.[0];
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
      const labelBefore = policyLabel(this.policies.get(p.id));
      this.policies.set(p.id, p);
      const rendered = r.policy(p, this.ipBlocks, this.usedDirections(p.id));
      const chains = new Map(rendered.chains.map((c) => [c.chain.name, c]));
      for (const dir of ['ingress', 'egress'] as const) {
        const name = policyChainName(p.id, dir);
        this.putChain(scope, name, chains.get(name));
      }
      this.putPolicySets(p.id, rendered.sets, scope);
      // Combination chains carry the policy's name in their comments: rendered again only when
      // that name changed (an edit of the policy's rules leaves them as they are).
      if (policyLabel(p) !== labelBefore) for (const [name, c] of this.combos) if (c.policies.includes(p.id)) this.putChain(scope, name, r.comboChain(c.dir, c.policies, this.policyNames));
    }
    for (const t of delta.targets.upsert) {
      const before = this.targets.get(t.key);
      this.removeVmapEntries(before, scope);
      this.targets.set(t.key, t);
      this.useCombos(t.key, before, t, scope);
      this.addVmapEntries(t, scope);
      this.audit?.sync(t.key, t, scope);
    }
    for (const key of delta.targets.remove) {
      const t = this.targets.get(key);
      if (!t) continue;
      this.removeVmapEntries(t, scope);
      this.audit?.sync(key, undefined, scope);
      this.targets.delete(key);
      this.useCombos(key, t, undefined, scope);
    }
    for (const id of delta.policies.remove) {
      this.policies.delete(id);
      r.forget(id);
      for (const dir of ['ingress', 'egress'] as const) this.putChain(scope, policyChainName(id, dir), undefined);
      this.putPolicySets(id, [], scope);
    }
    for (const id of delta.peerSets.remove) for (const fam of ['v4', 'v6'] as const) (m.sets.delete(peerSetName(id, fam)), scope.sets.add(peerSetName(id, fam)));
    for (const id of delta.ipBlockSets.remove) {
      m.sets.delete(id);
      scope.sets.add(id);
      this.ipBlocks.delete(id);
    }
    for (const id of delta.namedPortSets.remove) for (const fam of ['v4', 'v6'] as const) (m.sets.delete(namedPortSetName(id, fam)), scope.sets.add(namedPortSetName(id, fam)));
  }

  /** The directions in which some combination chain jumps to the policy's chain. */
  private usedDirections(policyId: string): Direction[] {
    return (['egress', 'ingress'] as const).filter((dir) => this.policyUsers.has(`${policyId} ${dir}`));
  }

  /** Counts a combination chain appearing (+1) or going (-1) among the users of its policies'
   * chains; a policy chain appears with its first user and goes with its last. */
  private countPolicyUsers(dir: Direction, policies: readonly string[], change: 1 | -1, scope: ChangeScope): void {
    for (const id of policies) {
      const key = `${id} ${dir}`;
      const users = (this.policyUsers.get(key) ?? 0) + change;
      if (users > 0) this.policyUsers.set(key, users);
      else this.policyUsers.delete(key);
      if (users === (change > 0 ? 1 : 0)) this.renderPolicyChains(id, scope);
    }
  }

  /** Renders a policy's chains and port sets again for the directions now in use. */
  private renderPolicyChains(policyId: string, scope: ChangeScope): void {
    const p = this.policies.get(policyId);
    const rendered = p ? this.renderer.policy(p, this.ipBlocks, this.usedDirections(policyId)) : { chains: [], sets: [] };
    const chains = new Map(rendered.chains.map((c) => [c.chain.name, c]));
    for (const dir of ['ingress', 'egress'] as const) {
      const name = policyChainName(policyId, dir);
      if (chains.has(name) || this.model.chains.has(name)) this.putChain(scope, name, chains.get(name));
    }
    this.putPolicySets(policyId, rendered.sets, scope);
  }

  /** Replaces a policy's port sets: a set appears with its first policy and goes with its last
   * (compared whole: they are small). */
  private putPolicySets(policyId: string, sets: SetModel[], scope: ChangeScope): void {
    for (const s of sets) {
      const users = this.portSetUsers.get(s.set.name);
      if (users) users.add(policyId);
      else (this.portSetUsers.set(s.set.name, new Set([policyId])), this.model.sets.set(s.set.name, s), scope.sets.add(s.set.name));
    }
    const now = new Set(sets.map((s) => s.set.name));
    for (const name of this.policySets.get(policyId) ?? []) {
      if (now.has(name)) continue;
      const users = this.portSetUsers.get(name);
      users?.delete(policyId);
      if (users && users.size > 0) continue;
      this.portSetUsers.delete(name);
      this.model.sets.delete(name);
      scope.sets.add(name);
    }
    if (sets.length) this.policySets.set(policyId, [...now]);
    else this.policySets.delete(policyId);
  }

  /** Moves a target from the combinations of `before` to those of `after`: a chain appears with
   * its first user and goes with its last, in the same transaction as the vmap elements (the
   * diff adds chains before elements point at them, and deletes them after). */
  private useCombos(key: string, before: Target | undefined, after: Target | undefined, scope: ChangeScope): void {
    for (const dir of ['ingress', 'egress'] as const) {
      const was = before?.[dir] ? comboChainName(before[dir], dir) : undefined;
      const policies = after?.[dir];
      const now = policies ? comboChainName(policies, dir) : undefined;
      if (was === now) continue;
      if (now && policies) {
        const combo = this.combos.get(now);
        if (combo) combo.users.add(key);
        else {
          this.combos.set(now, { dir, policies, users: new Set([key]) });
          this.putChain(scope, now, this.renderer.comboChain(dir, policies, this.policyNames));
          this.countPolicyUsers(dir, policies, 1, scope);
        }
      }
      const old = was && this.combos.get(was);
      if (!old) continue;
      old.users.delete(key);
      if (old.users.size > 0) continue;
      this.combos.delete(was);
      this.putChain(scope, was, undefined);
      this.countPolicyUsers(dir, old.policies, -1, scope);
    }
  }

  /** Keeps the counter sets keyed as the vmap `set` is at `k`. */
  private mirrorCounters(set: string, k: string, e: SetElement | undefined, scope: ChangeScope): void {
    for (const name of this.renderer.countersOf(set)) {
      const elements = this.model.sets.get(name)!.elements;
      if (e) elements.set(k, { key: e.key });
      else elements.delete(k);
      scope.element(name, k);
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
        this.mirrorCounters(set, k, undefined, scope);
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
      this.mirrorCounters(set, k, e, scope);
    }
  }
}
