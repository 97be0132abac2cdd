/** Named-port sets: for each, the (address, protocol, port) triples of the pods having one of its
 * port names, counted (two pods may briefly share an address). Filed by port name, so a pod
 * event looks only at the sets naming one of its ports. */

import type { SetLedger } from '../delta-recorder';
import type { Direction, NamedPortSet, PortTriple } from '../ir';
import { compareTriples, podTriples, tripleFromKey, tripleKey, type PodFacts } from '../objects';
import type { NamedPortSetSpec } from '../rules';
import { isV6 } from '../../../net/ip-text';
import { CountedSet, addTo, removeFrom } from './collections';
import type { PodIndex } from './pods';
import { ReferencedSets } from './referenced-sets';

interface NamedSetState {
  spec: NamedPortSetSpec;
  /** Policies referencing the set. */
  refs: number;
  triples: CountedSet;
}

export class NamedPortSetIndex extends ReferencedSets<NamedSetState, NamedPortSet> {
  private readonly byPortName = new Map<string, Set<string>>();

  /** Element changes are reported into `ledger`; `ingressIsolated` lists the local pods isolated
   * for ingress, whose triples a new ingress set starts with. */
  constructor(
    private readonly pods: PodIndex,
    ledger: SetLedger,
    private readonly ingressIsolated: () => Iterable<PodFacts>,
  ) {
    super(ledger);
  }

  /** Adds (+1) or removes (-1) the pod's triples in the sets of `direction` that name one of
   * its ports. */
  update(pod: PodFacts, direction: Direction, by: 1 | -1): void {
    // Most pods' port names are in no set: nothing is allocated for them.
    let sets: NamedSetState[] | undefined;
    for (const np of pod.namedPorts) {
      for (const id of this.byPortName.get(np.name) ?? []) {
        const state = this.sets.get(id)!;
        if (state.spec.direction !== direction) continue;
        if (!sets) sets = [state];
        else if (!sets.includes(state)) sets.push(state);
      }
    }
    for (const state of sets ?? []) this.applyTriples(state, pod, by);
  }

  /** A policy references the set: the first reference creates it with its triples. */
  ref(spec: NamedPortSetSpec): void {
    if (this.counted(spec.id)) return;
    const state: NamedSetState = { spec, refs: 1, triples: new CountedSet() };
    this.sets.set(spec.id, state);
    for (const p of spec.ports) addTo(this.byPortName, p.name, spec.id);
    for (const pod of this.candidates(spec)) this.applyTriples(state, pod, +1);
  }

  protected override dropped(id: string, state: NamedSetState): void {
    for (const p of state.spec.ports) removeFrom(this.byPortName, p.name, id);
  }

  contents(id: string): NamedPortSet {
    const { spec, triples } = this.sets.get(id)!;
    const v4: PortTriple[] = [];
    const v6: PortTriple[] = [];
    for (const k of triples.counts.keys()) {
      const t = tripleFromKey(k);
      (isV6(t.ip) ? v6 : v4).push(t);
    }
    return { id: spec.id, direction: spec.direction, ports: spec.ports, v4: v4.sort(compareTriples), v6: v6.sort(compareTriples) };
  }

  private applyTriples(state: NamedSetState, pod: PodFacts, by: 1 | -1): void {
    const { v4, v6 } = podTriples(pod, state.spec.ports);
    if (v4.length + v6.length === 0) return;
    const id = state.spec.id;
    const report = this.ledger.touch(id, true);
    for (const family of [v4, v6]) {
      for (const t of family) {
        const k = tripleKey(t);
        const changed = by > 0 ? state.triples.add(k) : state.triples.remove(k);
        if (changed && report) this.ledger.changed(id, k, by);
      }
    }
  }

  /** The pods whose triples a new set starts with, each once: for ingress the local pods
   * isolated for ingress (only policies' targets are, so this is never the whole cluster), for
   * egress the eligible pods having one of the port names. */
  private candidates(spec: NamedPortSetSpec): Iterable<PodFacts> {
    if (spec.direction === 'ingress') return this.ingressIsolated();
    const names = new Set(spec.ports.map((p) => p.name));
    if (names.size === 1) return this.pods.withPortName(spec.ports[0].name);
    const candidates = new Set<PodFacts>();
    for (const name of names) for (const pod of this.pods.withPortName(name)) candidates.add(pod);
    return candidates;
  }
}
