/** Elements of the proxy table's shared maps, which several services may render at one key (a
 * hairpin element, a ClusterIP's verdict): each records its claimants on itself, and the first
 * claimant's element is in force; each put or release records in the scope only what changed.
 * Invariant: an element is in the model exactly while at least one service claims its key. */
import type { SetElement } from '../nft/types';
import type { ChangeScope } from '../pipeline/scope';
import { RulesetModel, sameElementValue, sameSetDefinition, SetModel } from '../ruleset/model';
import { CLAIMED_BY } from './render';

/** The services claiming a shared-map element (CLAIMED_BY), kept on the element in force: the
 * service key, or the keys, sorted, when several render the same key (the first one's element is
 * in force). On the element rather than in a map of its own: a full sync claims a hairpin element
 * per endpoint, and a second map of 250k entries cost more than all the rest of their rendering. */
type Claimed = SetElement & { [CLAIMED_BY]?: string | string[] };

/** Replaces a set of the model, recording only the elements that differ when only they do. */
export function putSet(m: RulesetModel, name: string, s: SetModel, scope: ChangeScope): void {
  const was = m.sets.get(name);
  m.sets.set(name, s);
  if (!was || !sameSetDefinition(was.set, s.set)) {
    scope.sets.add(name);
    return;
  }
  for (const [k, e] of s.elements) {
    const old = was.elements.get(k);
    if (!old || !sameElementValue(old, e)) scope.element(name, k);
  }
  for (const k of was.elements.keys()) if (!s.elements.has(k)) scope.element(name, k);
}

/** Puts endpoint-map elements (and their keys, at the same index) into the model. */
export function putOwned(m: RulesetModel, set: string, elements: SetElement[], keys: string[], scope: ChangeScope): void {
  const model = m.sets.get(set)!.elements;
  for (let i = 0; i < elements.length; i++) {
    model.set(keys[i], elements[i]);
    scope.element(set, keys[i]);
  }
}

/** `owner` renders `e` at `set k`: the first claimant (in key order) has its element in force. */
export function claimElement(m: RulesetModel, set: string, k: string, owner: string, e: SetElement, scope: ChangeScope): void {
  const elements = m.sets.get(set)!.elements;
  const held = elements.get(k) as Claimed | undefined;
  const by = held?.[CLAIMED_BY];
  let owners: string | string[] = owner;
  if (typeof by === 'string') {
    if (by !== owner) owners = by < owner ? [by, owner] : [owner, by];
  } else if (by !== undefined) {
    if (!by.includes(owner)) {
      by.push(owner);
      by.sort();
    }
    owners = by;
  }
  if ((typeof owners === 'string' ? owners : owners[0]) !== owner) {
    held![CLAIMED_BY] = owners;
    return;
  }
  (e as Claimed)[CLAIMED_BY] = owners;
  elements.set(k, e);
  scope.element(set, k);
}

/** `owner` no longer renders `set k`: the next claimant's element (`elementOf`) takes over. */
export function releaseElement(m: RulesetModel, set: string, k: string, owner: string, scope: ChangeScope, elementOf: (owner: string) => SetElement): void {
  const elements = m.sets.get(set)!.elements;
  const held = elements.get(k) as Claimed | undefined;
  const by = held?.[CLAIMED_BY];
  const owners = typeof by === 'string' ? [by] : by;
  const at = owners ? owners.indexOf(owner) : -1;
  if (!held || !owners || at < 0) return;
  owners.splice(at, 1);
  const rest = owners.length === 1 ? owners[0] : owners;
  if (at > 0) {
    held[CLAIMED_BY] = rest;
    return;
  }
  scope.element(set, k);
  if (owners.length === 0) {
    elements.delete(k);
    return;
  }
  const next = elementOf(owners[0]) as Claimed;
  next[CLAIMED_BY] = rest;
  elements.set(k, next);
}
