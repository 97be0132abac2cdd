/** The audit sets' elements, kept current as targets come, go and change addresses, and as
 * namespaces switch mode. Two local pods may briefly share an address (one leaving, one
 * arriving), and one audit check serves whichever pod holds the address's dispatch: so an
 * address is audited only while every pod holding it is in audit mode (fail closed). */
import type { DesiredModel } from '../../pipeline/desired-model';
import type { Target } from '../engine/ir';
import type { SetElement } from '../../nft/types';
import { elementKey } from '../../ruleset/model';
import { namespaceOf, type PolicyModes } from '../modes';

/** What the audit entries read of the Renderer (render.ts, which imports this module): the
 * namespaces' modes and each target's audit entries. */
export interface AuditSource {
  readonly opts: { modes?: PolicyModes };
  auditEntries(t: Target): [string, SetElement][];
}

/** Claims of the audit entries: `audit set key` by every target holding the address, `audit-off
 * set key` by those not in audit mode; the element is in the set while the first has claimants
 * and the second none. */
export class AuditEntries {
  /** target key -> the entries it holds (in any mode). */
  private readonly held = new Map<string, [string, SetElement][]>();

  constructor(
    private readonly renderer: AuditSource,
    private readonly desired: DesiredModel,
  ) {}

  /** Brings one target's claims to its addresses and its namespace's current mode; `t`
   * undefined: it left. Recorded in the desired model's current scope. */
  sync(key: string, t: Target | undefined): void {
    const d = this.desired;
    const before = this.held.get(key) ?? [];
    const after = t ? this.renderer.auditEntries(t) : [];
    const audit = !!t && this.renderer.opts.modes?.mode(namespaceOf(key)) === 'audit';
    const touched = new Map<string, [string, SetElement]>();
    for (const at of before) {
      const entry = `${at[0]} ${elementKey(at[1])}`;
      d.release(`audit ${entry}`, key);
      d.release(`audit-off ${entry}`, key);
      touched.set(entry, at);
    }
    for (const at of after) {
      const entry = `${at[0]} ${elementKey(at[1])}`;
      d.claim(`audit ${entry}`, key);
      if (!audit) d.claim(`audit-off ${entry}`, key);
      touched.set(entry, at);
    }
    for (const [entry, [set, e]] of touched) {
      const k = elementKey(e);
      if (d.claimants(`audit ${entry}`).size > 0 && d.claimants(`audit-off ${entry}`).size === 0) d.putElement(set, k, e);
      else d.deleteElement(set, k);
    }
    if (after.length > 0) this.held.set(key, after);
    else this.held.delete(key);
  }
}
