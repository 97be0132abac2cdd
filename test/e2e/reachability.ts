/** Expected reachability, written case by case from the NetworkPolicy spec: which pods each
 * direction isolates and what it then allows. A connection gets through when the source's egress
 * allows it AND the target's ingress allows it; traffic a pod sends to itself never leaves its
 * namespace, and traffic from the node always passes (kubelet probes). */
import { Matrix, NODE, SLICES, type Cell, type Family, type Protocol, type Slice } from '../helpers/prober';

/** `x/a`, `x/*` (every pod of x), `* /a` (pod a of every namespace, without the space), `*`, or a list. */
export type PodPattern = string | string[];

export interface SliceFilter {
  protocol?: Protocol;
  ports?: number[];
  family?: Family;
}

function matchesPod(pattern: PodPattern, pod: string): boolean {
  if (Array.isArray(pattern)) return pattern.some((p) => matchesPod(p, pod));
  if (pattern === '*') return true;
  const [ns, name] = pattern.split('/');
  const [podNs, podName] = pod.split('/');
  return (ns === '*' || ns === podNs) && (name === '*' || name === podName);
}

function matchesSlice(filter: SliceFilter | undefined, s: Slice): boolean {
  if (!filter) return true;
  return (filter.protocol === undefined || filter.protocol === s.protocol)
    && (filter.ports === undefined || filter.ports.includes(s.port))
    && (filter.family === undefined || filter.family === s.family);
}

/** One direction's verdicts over pod pairs: open by default, isolated pods closed, then allows. */
class Direction {
  /** `from|to|slice` of the cells this direction blocks. */
  private readonly blocked = new Set<string>();

  constructor(private readonly pods: string[], private readonly isolatedEnd: 'to' | 'from') {}

  /** The pods matching `pods` become isolated in this direction (optionally for some slices only). */
  isolate(pods: PodPattern, filter?: SliceFilter): this {
    this.each((c) => matchesPod(pods, this.isolatedEnd === 'to' ? c.to : c.from) && matchesSlice(filter, c), (k) => this.blocked.add(k));
    return this;
  }

  /** Connections from `from` to `to` on the filtered slices are allowed in this direction. */
  allow(from: PodPattern, to: PodPattern, filter?: SliceFilter): this {
    this.each((c) => matchesPod(from, c.from) && matchesPod(to, c.to) && matchesSlice(filter, c), (k) => this.blocked.delete(k));
    return this;
  }

  isBlocked(c: Cell): boolean {
    return this.blocked.has(key(c));
  }

  private each(pred: (c: Cell) => boolean, act: (k: string) => void): void {
    for (const from of this.pods) for (const to of this.pods) for (const s of SLICES) {
      const c = { from, to, ...s };
      if (pred(c)) act(key(c));
    }
  }
}

function key(c: Cell): string {
  return `${c.from}|${c.to}|${c.protocol}|${c.port}|${c.family}`;
}

export class Reachability {
  /** Checked at the target: `isolate(targets)`, `allow(sources, targets)`. */
  readonly ingress: Direction;
  /** Checked at the source: `isolate(sources)`, `allow(sources, targets)`. */
  readonly egress: Direction;

  constructor(private readonly pods: string[]) {
    this.ingress = new Direction(pods, 'to');
    this.egress = new Direction(pods, 'from');
  }

  /** The full matrix: rows are the node then every pod, columns every pod. */
  matrix(): Matrix {
    const m = new Matrix([NODE, ...this.pods], this.pods, true);
    for (const c of m.allCells()) {
      if (c.from === NODE || c.from === c.to) continue;
      m.set(c, !this.ingress.isBlocked(c) && !this.egress.isBlocked(c));
    }
    return m;
  }
}
