/** The net changes of one engine call, and the one place they become its PolicyDelta.
 *
 * The engine notes what a call touches (a target or policy as it was before, a set and whether
 * it existed when the call began, each element that became present or absent in a set that
 * did); at the end of the call `finish` settles the touched objects and reports the difference.
 * One recorder serves every call and is emptied after each: a call uses few of its maps, and
 * making new maps per event cost more than emptying those few. */

import {
  emptyDelta,
  type CompiledPolicy,
  type IpBlockSet,
  type NamedPortSet,
  type PeerSet,
  type PolicyDelta,
  type PortTriple,
  type SetElementChange,
  type Target,
} from './ir';
import { sameCompiledPolicy, sameTarget } from './equality';
import { compareStrings, compareTriples, tripleFromKey } from './objects';
import { isV6 } from '../../net/ip-text';

/** What one call did to the sets of one kind. */
export class SetLedger {
  /** Each touched set: whether it existed when the call began. */
  readonly existed = new Map<string, boolean>();
  /** Per set that existed: the net count of each element (by key) that became present (+1) or
   * absent (-1). */
  readonly elements = new Map<string, Map<string, number>>();

  /** Notes that the call touches set `id`, which `exists` now. True when the set existed when the
   * call began: only such a set's element changes are reported (a set created in the call is
   * reported with its whole contents). */
  touch(id: string, exists: boolean): boolean {
    let existed = this.existed.get(id);
    if (existed === undefined) this.existed.set(id, (existed = exists));
    return existed;
  }

  /** An element of set `id` (which `touch` said existed) became present (+1) or absent (-1). */
  changed(id: string, key: string, by: 1 | -1): void {
    let net = this.elements.get(id);
    if (!net) this.elements.set(id, (net = new Map()));
    const n = (net.get(key) ?? 0) + by;
    if (n === 0) net.delete(key);
    else net.set(key, n);
  }

  reset(): void {
    if (this.existed.size > 0) this.existed.clear();
    if (this.elements.size > 0) this.elements.clear();
  }
}

/** The sets of one kind as the recorder settles them at the end of a call. */
export interface SettledSets<S> {
  /** Drops set `id` when nothing references it any more (at the end of a call, so a set dropped
   * and re-added within one call is never torn down); true when it exists after. */
  settle(id: string): boolean;
  /** The whole contents of an existing set, canonically ordered. */
  contents(id: string): S;
}

/** What the recorder reads when it settles a call. */
export interface DeltaSources {
  /** Recomputes a touched target and keeps it; undefined when the pod is no longer a target. */
  settleTarget: (key: string) => Target | undefined;
  policy: (id: string) => CompiledPolicy | undefined;
  peerSets: SettledSets<PeerSet>;
  ipBlockSets: SettledSets<IpBlockSet>;
  namedPortSets: SettledSets<NamedPortSet>;
}

/** How the elements of a set kind are reported: from their keys, canonically ordered. */
interface ElementKind<E> {
  fromKey(key: string): E;
  compare(a: E, b: E): number;
}

const PEER_ELEMENTS: ElementKind<string> = { fromKey: (key) => key, compare: compareStrings };
const NAMED_PORT_ELEMENTS: ElementKind<PortTriple> = { fromKey: tripleFromKey, compare: compareTriples };

export class DeltaRecorder {
  private readonly targetsBefore = new Map<string, Target | undefined>();
  private readonly policiesBefore = new Map<string, CompiledPolicy | undefined>();
  readonly peerSets = new SetLedger();
  readonly ipBlockSets = new SetLedger();
  readonly namedPortSets = new SetLedger();

  /** Notes a target (by pod key) the call may change, as it is now. */
  touchTarget(key: string, current: Target | undefined): void {
    if (!this.targetsBefore.has(key)) this.targetsBefore.set(key, current);
  }

  /** Notes a compiled policy (by id) the call may change, as it is now. */
  touchPolicy(id: string, current: CompiledPolicy | undefined): void {
    if (!this.policiesBefore.has(id)) this.policiesBefore.set(id, current);
  }

  /** Settles the call: recomputes touched targets, drops sets nothing references any more, and
   * reports the net difference. */
  finish(sources: DeltaSources): PolicyDelta {
    const delta = emptyDelta();
    reportObjects(this.targetsBefore, sources.settleTarget, sameTarget, delta.targets);
    reportObjects(this.policiesBefore, sources.policy, sameCompiledPolicy, delta.policies);
    const { peerSets, ipBlockSets, namedPortSets } = delta;
    settleSets(this.peerSets, sources.peerSets, peerSets, { kind: PEER_ELEMENTS, add: peerSets.add, del: peerSets.del });
    settleSets(this.ipBlockSets, sources.ipBlockSets, ipBlockSets);
    settleSets(this.namedPortSets, sources.namedPortSets, namedPortSets, { kind: NAMED_PORT_ELEMENTS, add: namedPortSets.add, del: namedPortSets.del });
    return delta;
  }

  /** Empties the maps (clearing an empty map is not free). */
  reset(): void {
    if (this.targetsBefore.size > 0) this.targetsBefore.clear();
    if (this.policiesBefore.size > 0) this.policiesBefore.clear();
    this.peerSets.reset();
    this.ipBlockSets.reset();
    this.namedPortSets.reset();
  }
}

/** Reports touched targets or policies: upserted when new or different, removed when gone. */
function reportObjects<V>(
  touched: Map<string, V | undefined>,
  now: (key: string) => V | undefined,
  same: (a: V, b: V) => boolean,
  out: { upsert: V[]; remove: string[] },
): void {
  for (const [key, before] of touched) {
    const after = now(key);
    if (!after) {
      if (before) out.remove.push(key);
    } else if (!before || !same(before, after)) {
      out.upsert.push(after);
    }
  }
}

/** Where the element changes of a set kind go. */
interface ElementReport<E> {
  kind: ElementKind<E>;
  add: SetElementChange<E>[];
  del: SetElementChange<E>[];
}

/** Reports the touched sets of one kind: created with their contents, removed, or (for kinds
 * with `elements`) their net element changes. */
function settleSets<S, E>(ledger: SetLedger, sets: SettledSets<S>, out: { create: S[]; remove: string[] }, elements?: ElementReport<E>): void {
  for (const [id, existed] of ledger.existed) {
    const exists = sets.settle(id);
    if (!existed && exists) out.create.push(sets.contents(id));
    else if (existed && !exists) out.remove.push(id);
    else if (existed && exists && elements) {
      const net = ledger.elements.get(id);
      if (net && net.size > 0) reportElements(id, net, elements);
    }
  }
}

function reportElements<E>(set: string, net: Map<string, number>, { kind, add, del }: ElementReport<E>): void {
  const added: SetElementChange<E> = { set, v4: [], v6: [] };
  const removed: SetElementChange<E> = { set, v4: [], v6: [] };
  for (const [key, n] of net) (n > 0 ? added : removed)[isV6(key) ? 'v6' : 'v4'].push(kind.fromKey(key));
  for (const change of [added, removed]) {
    change.v4.sort(kind.compare);
    change.v6.sort(kind.compare);
  }
  if (added.v4.length + added.v6.length > 0) add.push(added);
  if (removed.v4.length + removed.v6.length > 0) del.push(removed);
}
