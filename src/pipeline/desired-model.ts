/** The desired model of one table as a component keeps it event by event: every put, delete,
 * claim and release changes the RulesetModel and records in the current ChangeScope what it
 * changed, so the next diff against the committed table looks at nothing else.
 *
 * Claimed entries: a chain, a set or an element that several owners (targets, services, pods)
 * may each need. Invariants, kept by every method here and by nothing outside it:
 * - a claimed chain or set is in the model exactly while it has a claimant;
 * - a claimed element is in the model exactly while it has a claimant, and its value is the
 *   first claimant's (by key order) rendering of it: when the first leaves, the next one's takes
 *   over (two owners may briefly render one key differently: a pod leaving an address as another
 *   arrives, two services rendering one hairpin element);
 * - the scope receives a set or an element key exactly when its presence or its content changed
 *   (a hand-over to an equal element records nothing), and a chain when a new one is put (or,
 *   refreshed, when its content changed).
 * An element's claimants live on the element itself (CLAIMED_BY), not in a map of their own: a
 * proxy full sync claims a hairpin element per endpoint, and a second map of 250k entries cost
 * more than all the rest of their rendering. */
import type { SetElement } from '../nft/types';
import { ChainModel, RulesetModel, sameChainDefinition, sameElementValue, sameRules, sameSetDefinition, SetModel } from '../ruleset/model';
import type { ChangeScope } from './scope';

/** The claimants of an element, on the element in force. A symbol, so it is no field of the
 * element as nft and the diff see it. */
export const CLAIMED_BY = Symbol('claimedBy');

/** One claimant's key, or several, sorted (one string each: 50k single-claimant elements keep
 * no array). */
export type Claimants = string | string[];

export type ClaimedElement = SetElement & { [CLAIMED_BY]?: Claimants };

/** `owners` with `owner` among them, in key order (the array is updated in place). */
export function withClaimant(owners: Claimants | undefined, owner: string): Claimants {
  if (owners === undefined) return owner;
  if (typeof owners === 'string') return owners === owner ? owners : owners < owner ? [owners, owner] : [owner, owners];
  if (!owners.includes(owner)) {
    owners.push(owner);
    owners.sort();
  }
  return owners;
}

/** `owners` without `owner` (a single one left as its string); `at` is where it was, -1: not
 * among them. */
export function withoutClaimant(owners: Claimants, owner: string): { rest: Claimants | undefined; at: number } {
  if (typeof owners === 'string') return owners === owner ? { rest: undefined, at: 0 } : { rest: owners, at: -1 };
  const at = owners.indexOf(owner);
  if (at < 0) return { rest: owners, at };
  owners.splice(at, 1);
  return { rest: owners.length === 1 ? owners[0] : owners, at };
}

/** The first claimant, whose rendering is in force. */
export function firstClaimant(owners: Claimants): string {
  return typeof owners === 'string' ? owners : owners[0];
}

const NONE: ReadonlySet<string> = new Set();

export class DesiredModel {
  /** Claimed chains and sets, and entries a component counts itself (a policy's direction, a
   * draw slot): entry -> claimants, in no order (none is in force: a combination chain may have
   * thousands, each claim and release O(1)). */
  private readonly claims = new Map<string, Set<string>>();
  /** Where changes are recorded; none while a whole table is rendered (it is diffed whole). */
  private scope: ChangeScope | undefined;

  constructor(readonly model: RulesetModel) {}

  /** Records the changes that follow in `scope` (undefined: records nothing); returns this. */
  recordingIn(scope: ChangeScope | undefined): this {
    this.scope = scope;
    return this;
  }

  /** Sets (or, undefined, deletes) a chain, recorded as rewritten unless it is the very object
   * in the model (or absent from both). */
  putChain(name: string, c: ChainModel | undefined): void {
    const was = this.model.chains.get(name);
    if (c) this.model.chains.set(name, c);
    else if (was) this.model.chains.delete(name);
    if (was !== c) this.scope?.chains.add(name);
  }

  /** Sets a chain rendered again, recorded only when its definition or rules differ from the
   * model's (an equal one still replaces it: the model keeps the latest render, not two). */
  refreshChain(name: string, c: ChainModel): void {
    const was = this.model.chains.get(name);
    this.model.chains.set(name, c);
    if (!was || !sameChainDefinition(was.chain, c.chain) || !sameRules(was.rules, c.rules)) this.scope?.chains.add(name);
  }

  /** Sets (or deletes) a set. A set redefined, created or deleted is recorded whole; one whose
   * definition stays is recorded at the elements that differ. */
  putSet(name: string, s: SetModel | undefined): void {
    const was = this.model.sets.get(name);
    if (s) this.model.sets.set(name, s);
    else if (was) this.model.sets.delete(name);
    if (!this.scope || was === s) return;
    if (!was || !s || !sameSetDefinition(was.set, s.set)) {
      this.scope.sets.add(name);
      return;
    }
    for (const [k, e] of s.elements) {
      const old = was.elements.get(k);
      if (!old || !sameElementValue(old, e)) this.scope.element(name, k);
    }
    for (const k of was.elements.keys()) if (!s.elements.has(k)) this.scope.element(name, k);
  }

  /** Puts an element (`k`: its elementKey) into a set of the model. */
  putElement(set: string, k: string, e: SetElement): void {
    const elements = this.elementsOf(set);
    const old = this.scope && elements.get(k);
    elements.set(k, e);
    if (this.scope && (!old || !sameElementValue(old, e))) this.scope.element(set, k);
  }

  deleteElement(set: string, k: string): void {
    if (this.elementsOf(set).delete(k)) this.scope?.element(set, k);
  }

  /** `owner` needs chain `name`: made with its first claimant. Returns whether it was made. */
  claimChain(name: string, owner: string, make: () => ChainModel): boolean {
    return this.claimFirst(`chain ${name}`, owner, () => this.putChain(name, make()));
  }

  /** `owner` no longer needs chain `name`: deleted with its last claimant. Returns whether it was. */
  releaseChain(name: string, owner: string): boolean {
    return this.releaseLast(`chain ${name}`, owner, () => this.putChain(name, undefined));
  }

  /** `owner` needs set `name`: made with its first claimant. Returns whether it was made. */
  claimSet(name: string, owner: string, make: () => SetModel): boolean {
    return this.claimFirst(`set ${name}`, owner, () => this.putSet(name, make()));
  }

  /** `owner` no longer needs set `name`: deleted with its last claimant. Returns whether it was. */
  releaseSet(name: string, owner: string): boolean {
    return this.releaseLast(`set ${name}`, owner, () => this.putSet(name, undefined));
  }

  /** `owner` renders `e` at `set k`; in force while `owner` is the first claimant. Returns
   * whether the element appeared. */
  claimElement(set: string, k: string, owner: string, e: SetElement): boolean {
    const elements = this.elementsOf(set);
    const held = elements.get(k) as ClaimedElement | undefined;
    const owners = withClaimant(held?.[CLAIMED_BY], owner);
    if (firstClaimant(owners) !== owner) {
      held![CLAIMED_BY] = owners;
      return false;
    }
    (e as ClaimedElement)[CLAIMED_BY] = owners;
    elements.set(k, e);
    if (this.scope && (!held || !sameElementValue(held, e))) this.scope.element(set, k);
    return !held;
  }

  /** `owner` no longer renders `set k`: the next claimant's element (`elementOf`) takes over.
   * Returns whether the element went. */
  releaseElement(set: string, k: string, owner: string, elementOf: (owner: string) => SetElement): boolean {
    const elements = this.elementsOf(set);
    const held = elements.get(k) as ClaimedElement | undefined;
    const owners = held?.[CLAIMED_BY];
    if (!held || owners === undefined) return false;
    const { rest, at } = withoutClaimant(owners, owner);
    if (at < 0) return false;
    if (rest === undefined) {
      elements.delete(k);
      this.scope?.element(set, k);
      return true;
    }
    if (at > 0) {
      held[CLAIMED_BY] = rest;
      return false;
    }
    const next = elementOf(firstClaimant(rest)) as ClaimedElement;
    next[CLAIMED_BY] = rest;
    elements.set(k, next);
    if (this.scope && !sameElementValue(held, next)) this.scope.element(set, k);
    return false;
  }

  /** The claimant whose element is in force at `set k`, if any. */
  holderOf(set: string, k: string): string | undefined {
    const owners = (this.model.sets.get(set)?.elements.get(k) as ClaimedElement | undefined)?.[CLAIMED_BY];
    return owners === undefined ? undefined : firstClaimant(owners);
  }

  /** Counts `owner` among the claimants of `entry`; returns whether it is the first. */
  claim(entry: string, owner: string): boolean {
    const owners = this.claims.get(entry);
    if (owners) owners.add(owner);
    else this.claims.set(entry, new Set([owner]));
    return owners === undefined;
  }

  /** Removes `owner` from the claimants of `entry`; returns whether it was the last. */
  release(entry: string, owner: string): boolean {
    const owners = this.claims.get(entry);
    if (!owners?.delete(owner) || owners.size > 0) return false;
    this.claims.delete(entry);
    return true;
  }

  /** The claimants of `entry`. */
  claimants(entry: string): ReadonlySet<string> {
    return this.claims.get(entry) ?? NONE;
  }

  private claimFirst(entry: string, owner: string, first: () => void): boolean {
    if (!this.claim(entry, owner)) return false;
    first();
    return true;
  }

  private releaseLast(entry: string, owner: string, last: () => void): boolean {
    if (!this.release(entry, owner)) return false;
    last();
    return true;
  }

  private elementsOf(set: string): Map<string, SetElement> {
    const s = this.model.sets.get(set);
    if (!s) throw new Error(`the desired table has no set ${set}`);
    return s.elements;
  }
}
