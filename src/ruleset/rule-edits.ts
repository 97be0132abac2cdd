/** Positional rule edits: what turns one chain's rule list into another by deleting rules by
 * handle and placing new ones next to the rules that stay (NFTA_RULE_POSITION), so a change to a
 * long chain costs what changed rather than a flush and every rule again.
 *
 * The rules that stay are a longest common subsequence of the two lists by rule body (ruleKey),
 * found with Myers' O((N+M)D) algorithm after trimming the common head and tail: D, the number
 * of rules deleted plus added, is small for the edits this is for, and the search stops at the
 * cost of a rewrite. Pure: no I/O. */
import { ruleKey, sameRuleBody, withHandle } from '../nft/canonical';
import { Rule } from '../nft/types';

/** One new rule and where it goes: `insert` before the kept rule whose handle is its `position`
 * (a NEWRULE without NLM_F_APPEND), or `add` at the chain's end (NLM_F_APPEND, no position). */
export interface PlacedRule {
  verb: 'add' | 'insert';
  rule: Rule;
}

export interface RuleEdits {
  /** Rules of the old list that go, each named by its handle. */
  removed: Rule[];
  /** New rules in the order they are sent: each run of new rules is inserted in order before the
   * kept rule that follows it, or appended when no kept rule follows. */
  placed: PlacedRule[];
  /** The list once committed: the kept old rules (handles known) and, where new, the placed
   * rule itself (its handle unknown until the kernel echoes it; see committedRules). */
  result: Rule[];
}

/** Most rules deleted plus added that an edit may hold: past it a chain is rewritten, and the
 * search's time and memory stay bounded by (N+M) * this. */
export const MAX_RULE_EDITS = 512;

/** The edits from `from` to `to`, or undefined when a rewrite (a flush and `to.length` adds) costs
 * no more messages, or when a rule of `from` has no known handle. */
export function planRuleEdits(from: readonly Rule[], to: readonly Rule[]): RuleEdits | undefined {
  if (from.some((r) => r.handle === undefined)) return undefined;
  // The common head and tail are compared in place: only the rules between them are keyed.
  const shorter = Math.min(from.length, to.length);
  let head = 0;
  while (head < shorter && sameRuleBody(from[head], to[head])) head++;
  let tail = 0;
  while (tail < shorter - head && sameRuleBody(from[from.length - 1 - tail], to[to.length - 1 - tail])) tail++;
  const ids = new Map<string, number>();
  const idOf = (r: Rule): number => {
    const k = ruleKey(r);
    let id = ids.get(k);
    if (id === undefined) ids.set(k, (id = ids.size));
    return id;
  };
  const a = Int32Array.from(from.slice(head, from.length - tail), idOf);
  const b = Int32Array.from(to.slice(head, to.length - tail), idOf);
  // A rewrite sends a flush and every new rule: edits must cost fewer messages.
  const middle = sameOrder(a, b, Math.min(MAX_RULE_EDITS, to.length));
  if (!middle) return undefined;
  const keptOf = new Int32Array(to.length);
  for (let j = 0; j < head; j++) keptOf[j] = j;
  middle.forEach((i, j) => (keptOf[head + j] = i < 0 ? -1 : head + i));
  for (let t = 1; t <= tail; t++) keptOf[to.length - t] = from.length - t;
  return editsFrom(from, to, keptOf);
}

/** For each index of `b`, the index of `a` kept there (a common subsequence as long as any), or
 * -1 where the rule is new; undefined when that takes more than `maxD` deletions plus insertions. */
export function sameOrder(a: Int32Array, b: Int32Array, maxD: number): Int32Array | undefined {
  const keptOf = new Int32Array(b.length).fill(-1);
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) keptOf[head] = head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) {
    keptOf[b.length - 1 - tail] = a.length - 1 - tail;
    tail++;
  }
  const n = a.length - head - tail;
  const m = b.length - head - tail;
  if (Math.abs(n - m) > maxD) return undefined;
  const script = myers(a.subarray(head, head + n), b.subarray(head, head + m), maxD);
  if (!script) return undefined;
  for (const [x, y] of script) keptOf[head + y] = head + x;
  return keptOf;
}

/** The matched pairs (index in a, index in b) of a shortest edit script, or undefined when it is
 * longer than maxD. */
function myers(a: Int32Array, b: Int32Array, maxD: number): [number, number][] | undefined {
  const n = a.length;
  const m = b.length;
  const max = Math.min(maxD, n + m);
  const off = max + 1;
  const v = new Int32Array(2 * max + 3);
  const trace: Int32Array[] = [];
  let found = -1;
  for (let d = 0; d <= max && found < 0; d++) {
    trace.push(v.slice());
    for (let k = -d; k <= d; k += 2) {
      let x = k === -d || (k !== d && v[off + k - 1] < v[off + k + 1]) ? v[off + k + 1] : v[off + k - 1] + 1;
      let y = x - k;
      while (x < n && y < m && a[x] === b[y]) {
        x++;
        y++;
      }
      v[off + k] = x;
      if (x >= n && y >= m) {
        found = d;
        break;
      }
    }
  }
  if (found < 0) return undefined;
  const pairs: [number, number][] = [];
  let x = n;
  let y = m;
  for (let d = found; d > 0; d--) {
    const pv = trace[d];
    const k = x - y;
    const prevK = k === -d || (k !== d && pv[off + k - 1] < pv[off + k + 1]) ? k + 1 : k - 1;
    const prevX = pv[off + prevK];
    const prevY = prevX - prevK;
    while (x > prevX && y > prevY) pairs.push([--x, --y]);
    x = prevX;
    y = prevY;
  }
  while (x > 0 && y > 0) pairs.push([--x, --y]);
  return pairs;
}

function editsFrom(from: readonly Rule[], to: readonly Rule[], keptOf: Int32Array): RuleEdits {
  const kept = new Uint8Array(from.length);
  for (const i of keptOf) if (i >= 0) kept[i] = 1;
  const removed = from.filter((_, i) => !kept[i]);
  const placed: PlacedRule[] = [];
  const result: Rule[] = [];
  // The handle of the next kept rule, from the end: a new rule is inserted before it.
  const before: (bigint | undefined)[] = new Array(to.length);
  let next: bigint | undefined;
  for (let j = to.length - 1; j >= 0; j--) {
    before[j] = next;
    if (keptOf[j] >= 0) next = from[keptOf[j]].handle;
  }
  for (let j = 0; j < to.length; j++) {
    if (keptOf[j] >= 0) {
      result.push(from[keptOf[j]]);
      continue;
    }
    const position = before[j];
    const rule: Rule = { ...to[j] };
    delete rule.handle;
    delete rule.position;
    if (position !== undefined) rule.position = position;
    placed.push({ verb: position === undefined ? 'add' : 'insert', rule });
    result.push(rule);
  }
  return { removed, placed, result };
}

/** The list once committed, with the handles the kernel echoed for placed rules (by the placed
 * rule): a placed rule not echoed keeps no handle, so the next edit of its chain is a rewrite. */
export function committedRules(edits: RuleEdits, echoed: ReadonlyMap<Rule, bigint> | undefined): Rule[] {
  const placed = new Set(edits.placed.map((p) => p.rule));
  return edits.result.map((r) => {
    if (!placed.has(r)) return r;
    const handle = echoed?.get(r);
    const rule = withHandle(r, handle);
    delete rule.position;
    return rule;
  });
}
