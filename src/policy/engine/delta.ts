/** Applies a PolicyDelta to a PolicyIR: the meaning of a delta, as plain data. Throws when the
 * delta does not fit the IR (adding an element already present, removing a set that is not
 * there), so a consumer's model can never silently drift from the engine's. */

import type { PolicyDelta, PolicyIR, PortTriple, SetElementChange } from './ir';
import { compareTriples, tripleKey } from './objects';

export function applyDelta(ir: PolicyIR, delta: PolicyDelta): PolicyIR {
  const next: PolicyIR = {
    nodeName: ir.nodeName,
    targets: new Map(ir.targets),
    policies: new Map(ir.policies),
    peerSets: new Map(ir.peerSets),
    ipBlockSets: new Map(ir.ipBlockSets),
    namedPortSets: new Map(ir.namedPortSets),
  };
  const create = <T extends { id: string }>(map: Map<string, T>, items: T[], what: string): void => {
    for (const item of items) {
      if (map.has(item.id)) throw new Error(`${what} ${item.id} created but already present`);
      map.set(item.id, item);
    }
  };
  const remove = (map: Map<string, unknown>, ids: string[], what: string): void => {
    for (const id of ids) {
      if (!map.delete(id)) throw new Error(`${what} ${id} removed but not present`);
    }
  };

  create(next.peerSets, delta.peerSets.create, 'peer set');
  create(next.ipBlockSets, delta.ipBlockSets.create, 'ipBlock set');
  create(next.namedPortSets, delta.namedPortSets.create, 'named-port set');

  const changeElements = <E>(
    items: SetElementChange<E>[],
    adding: boolean,
    get: (id: string) => { v4: E[]; v6: E[] } | undefined,
    put: (id: string, v4: E[], v6: E[]) => void,
    key: (e: E) => string,
    compare: (a: E, b: E) => number,
    what: string,
  ): void => {
    for (const change of items) {
      const set = get(change.set);
      if (!set) throw new Error(`${what} ${change.set}: elements changed but set not present`);
      const family = (current: E[], changed: E[]): E[] => {
        const byKey = new Map(current.map((e) => [key(e), e]));
        for (const e of changed) {
          const k = key(e);
          if (adding ? byKey.has(k) : !byKey.has(k)) throw new Error(`${what} ${change.set}: ${adding ? 'add of present' : 'removal of absent'} element ${k}`);
          if (adding) byKey.set(k, e);
          else byKey.delete(k);
        }
        return [...byKey.values()].sort(compare);
      };
      put(change.set, family(set.v4, change.v4), family(set.v6, change.v6));
    }
  };
  const byText = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);
  const peer = (id: string) => next.peerSets.get(id);
  const putPeer = (id: string, v4: string[], v6: string[]) => next.peerSets.set(id, { ...next.peerSets.get(id)!, v4, v6 });
  changeElements(delta.peerSets.add, true, peer, putPeer, (e) => e, byText, 'peer set');
  changeElements(delta.peerSets.del, false, peer, putPeer, (e) => e, byText, 'peer set');
  const named = (id: string) => next.namedPortSets.get(id);
  const putNamed = (id: string, v4: PortTriple[], v6: PortTriple[]) => next.namedPortSets.set(id, { ...next.namedPortSets.get(id)!, v4, v6 });
  changeElements(delta.namedPortSets.add, true, named, putNamed, tripleKey, compareTriples, 'named-port set');
  changeElements(delta.namedPortSets.del, false, named, putNamed, tripleKey, compareTriples, 'named-port set');

  for (const p of delta.policies.upsert) next.policies.set(p.id, p);
  for (const t of delta.targets.upsert) next.targets.set(t.key, t);
  remove(next.targets, delta.targets.remove, 'target');
  remove(next.policies, delta.policies.remove, 'policy');

  remove(next.peerSets, delta.peerSets.remove, 'peer set');
  remove(next.ipBlockSets, delta.ipBlockSets.remove, 'ipBlock set');
  remove(next.namedPortSets, delta.namedPortSets.remove, 'named-port set');
  return next;
}
