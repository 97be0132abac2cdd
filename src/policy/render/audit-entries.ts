/** The audit sets' elements, kept current as targets come, go and change addresses, and as
 * namespaces switch mode. Two local pods may briefly share an address (one leaving, one
 * arriving), and one audit check serves whichever pod holds the address's dispatch: so an
 * address is audited only while every pod holding it is in audit mode (fail closed). */
import type { ChangeScope } from '../../pipeline/scope';
import type { Target } from '../engine/ir';
import type { SetElement } from '../../nft/types';
import { elementKey, RulesetModel } from '../../ruleset/model';
import { namespaceOf, type PolicyModes } from '../modes';

/** What the audit entries read of the Renderer (render.ts, which imports this module): the
 * namespaces' modes and each target's audit entries. */
export interface AuditSource {
  readonly opts: { modes?: PolicyModes };
  auditEntries(t: Target): [string, SetElement][];
}

/** The audit elements of a whole table: entry (`set key`) -> element, for addresses whose every
 * holder is in audit mode. */
export function auditElements(renderer: AuditSource, targets: Iterable<Target>): Map<string, [string, SetElement]> {
  const all = new Map<string, { at: [string, SetElement]; audit: boolean }>();
  for (const t of targets) {
    const audit = renderer.opts.modes?.mode(namespaceOf(t.key)) === 'audit';
    for (const at of renderer.auditEntries(t)) {
      const entry = `${at[0]} ${elementKey(at[1])}`;
      const seen = all.get(entry);
      if (seen) seen.audit &&= audit;
      else all.set(entry, { at, audit });
    }
  }
  const out = new Map<string, [string, SetElement]>();
  for (const [entry, { at, audit }] of all) if (audit) out.set(entry, at);
  return out;
}

export class AuditEntries {
  /** `set key` -> the targets holding that address, and whether each is in audit mode. */
  private readonly claims = new Map<string, Map<string, boolean>>();
  /** target key -> the entries it holds (in any mode). */
  private readonly held = new Map<string, [string, SetElement][]>();

  constructor(
    private readonly renderer: AuditSource,
    private readonly model: RulesetModel,
  ) {}

  /** Brings one target's claims to its addresses and its namespace's current mode; `t`
   * undefined: it left. */
  sync(key: string, t: Target | undefined, scope?: ChangeScope): void {
    const before = this.held.get(key) ?? [];
    const after = t ? this.renderer.auditEntries(t) : [];
    const audit = !!t && this.renderer.opts.modes?.mode(namespaceOf(key)) === 'audit';
    const touched = new Map<string, [string, SetElement]>();
    for (const at of before) {
      const entry = `${at[0]} ${elementKey(at[1])}`;
      this.claims.get(entry)?.delete(key);
      touched.set(entry, at);
    }
    for (const at of after) {
      const entry = `${at[0]} ${elementKey(at[1])}`;
      let holders = this.claims.get(entry);
      if (!holders) this.claims.set(entry, (holders = new Map()));
      holders.set(key, audit);
      touched.set(entry, at);
    }
    for (const [entry, [set, e]] of touched) {
      const holders = this.claims.get(entry);
      if (holders && holders.size === 0) this.claims.delete(entry);
      const want = !!holders && holders.size > 0 && [...holders.values()].every(Boolean);
      const elements = this.model.sets.get(set)!.elements;
      const k = elementKey(e);
      if (want === elements.has(k)) continue;
      if (want) elements.set(k, e);
      else elements.delete(k);
      scope?.element(set, k);
    }
    if (after.length > 0) this.held.set(key, after);
    else this.held.delete(key);
  }
}
