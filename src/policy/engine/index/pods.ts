/** The pods the engine holds: each by key, and the eligible ones by namespace, on this node by
 * namespace, and by container port name. The indexes hold what `byKey` holds, so scans need no
 * look-ups. */

import type { PodFacts } from '../objects';
import { addTo, removeFrom } from './collections';

/** A pod as the engine holds it: its facts (replaced, never changed) and the peer sets it is a
 * member of, by id in joining order. A pod is in few sets: a list, replaced when it changes
 * (so it can be iterated while members leave, and has no spare room). */
export interface HeldPod {
  readonly facts: PodFacts;
  peerSets: readonly string[];
}

const NO_PEER_SETS: readonly string[] = [];
const NONE: readonly never[] = [];

export class PodIndex {
  private readonly byKey = new Map<string, HeldPod>();
  private readonly byNamespace = new Map<string, Set<HeldPod>>();
  private readonly localByNamespace = new Map<string, Set<PodFacts>>();
  /** Eligible pods having a container port of that name. Only egress named-port sets read it,
   * and many clusters have none: built when first read, kept up to date from then on. */
  private byPortName: Map<string, Set<PodFacts>> | undefined;

  get size(): number {
    return this.byKey.size;
  }

  get(key: string): HeldPod | undefined {
    return this.byKey.get(key);
  }

  /** Holds `facts` in place of the pod's previous facts (which the caller unfiled), in no peer
   * set yet, and files it when eligible. */
  put(facts: PodFacts): HeldPod {
    const held: HeldPod = { facts, peerSets: NO_PEER_SETS };
    this.byKey.set(facts.key, held);
    if (!facts.eligible) return held;
    addTo(this.byNamespace, facts.namespace, held);
    if (this.byPortName) for (const np of facts.namedPorts) addTo(this.byPortName, np.name, facts);
    if (facts.local) addTo(this.localByNamespace, facts.namespace, facts);
    return held;
  }

  /** Takes the pod out of the indexes; `get` still finds it until `delete` or `put`. */
  unfile(held: HeldPod): void {
    const { facts } = held;
    if (!facts.eligible) return;
    removeFrom(this.byNamespace, facts.namespace, held);
    if (this.byPortName) for (const np of facts.namedPorts) removeFrom(this.byPortName, np.name, facts);
    if (facts.local) removeFrom(this.localByNamespace, facts.namespace, facts);
  }

  delete(key: string): void {
    this.byKey.delete(key);
  }

  /** The eligible pods of a namespace. */
  inNamespace(ns: string): Iterable<HeldPod> {
    return this.byNamespace.get(ns) ?? NONE;
  }

  /** The eligible pods of a namespace on this node. */
  localIn(ns: string): Iterable<PodFacts> {
    return this.localByNamespace.get(ns) ?? NONE;
  }

  /** The eligible pods having a container port named `name`. */
  withPortName(name: string): Iterable<PodFacts> {
    if (!this.byPortName) {
      const index = new Map<string, Set<PodFacts>>();
      for (const { facts } of this.byKey.values()) {
        if (facts.eligible) for (const np of facts.namedPorts) addTo(index, np.name, facts);
      }
      this.byPortName = index;
    }
    return this.byPortName.get(name) ?? NONE;
  }
}
