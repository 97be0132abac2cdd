/** The audit sets' elements, kept current as targets come, go and change addresses, and as
 * namespaces switch mode. Two local pods may briefly share an address: an element stays while
 * any audit-mode target holds it. */
import type { ChangeScope } from '../agent/desired';
import type { Renderer } from '../agent/render';
import type { Target } from '../policy/ir';
import type { SetElement } from '../nft/types';
import { elementKey, RulesetModel } from '../ruleset/model';
import { namespaceOf } from './modes';

export class AuditEntries {
  /** `set key` -> keys of the targets holding it. */
  private readonly claims = new Map<string, Set<string>>();
  /** target key -> the entries it holds. */
  private readonly held = new Map<string, [string, SetElement][]>();

  constructor(
    private readonly renderer: Renderer,
    private readonly model: RulesetModel,
  ) {}

  /** Brings one target's entries to its namespace's current mode; `t` undefined: it left. */
  sync(key: string, t: Target | undefined, scope?: ChangeScope): void {
    const before = this.held.get(key) ?? [];
    const after = t && this.renderer.opts.modes?.mode(namespaceOf(key)) === 'audit' ? this.renderer.auditEntries(t) : [];
    const keep = new Set(after.map(([set, e]) => `${set} ${elementKey(e)}`));
    for (const [set, e] of before) {
      const entry = `${set} ${elementKey(e)}`;
      if (keep.has(entry)) continue;
      const holders = this.claims.get(entry);
      holders?.delete(key);
      if (holders && holders.size > 0) continue;
      this.claims.delete(entry);
      this.model.sets.get(set)?.elements.delete(elementKey(e));
      scope?.element(set, elementKey(e));
    }
    for (const [set, e] of after) {
      const entry = `${set} ${elementKey(e)}`;
      let holders = this.claims.get(entry);
      if (!holders) this.claims.set(entry, (holders = new Set()));
      if (holders.has(key)) continue;
      holders.add(key);
      if (holders.size > 1) continue;
      this.model.sets.get(set)!.elements.set(elementKey(e), e);
      scope?.element(set, elementKey(e));
    }
    if (after.length > 0) this.held.set(key, after);
    else this.held.delete(key);
  }
}
