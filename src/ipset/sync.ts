/** `syncSets`: brings every kernel set whose name starts with a prefix to a desired state, with no
 * moment where a member kept across the change is missing, and work proportional to the change.
 *
 * - incremental: create missing sets, add new members before deleting old ones (one ordered
 *   stream of messages: the kernel applies them in order), destroy sets no longer wanted.
 * - replace: each changed set is rebuilt in a temporary set and swapped in atomically; one
 *   temporary set per (type, family, options) is reused for the whole run.
 * In both modes a change of type or options is a swap, and an unchanged set sends nothing. */
import { createHash } from 'node:crypto';
import { familyOf } from './codec';
import { IpsetClient, IpsetOp, MessageCounts } from './client';
import * as C from './constants';
import { ElementSyntaxError, parseElement } from './element';
import { IpsetError } from './errors';
import { DesiredSet, Element, IpsetSet, isSetType, MemberInput, SetFamily, SetOptions, SetType } from './types';

export type SyncMode = 'incremental' | 'replace';

export interface SyncOptions {
  /** Only sets whose names start with this are read or written. */
  prefix: string;
  mode?: SyncMode;
  /** Destroy prefixed sets that are not desired (default true). */
  prune?: boolean;
}

export interface SyncResult {
  created: string[];
  /** Changed member by member (incremental mode). */
  updated: string[];
  /** Replaced by swap: changed sets in replace mode, and type or option changes in both modes. */
  replaced: string[];
  destroyed: string[];
  /** Not desired but still referenced: kept, and destroyed by a later run once free. */
  retained: string[];
  unchanged: number;
  /** Temporary sets left by an interrupted run, removed at the start of this one. */
  leftoversRemoved: string[];
  added: number;
  deleted: number;
  /** Messages this run sent: reads (list, protocol, type) and mutations. */
  messages: MessageCounts;
  failures: IpsetError[];
}

/** Desired state that cannot be applied as given; lists every problem, nothing was sent. */
export class SyncInputError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid desired ipset state:\n  ${problems.join('\n  ')}`);
    this.name = 'SyncInputError';
  }
}

interface Wanted {
  name: string;
  type: SetType;
  family: SetFamily;
  options: SetOptions;
  members: Map<string, Element>;
}

const TEMP_MARK = '~nfk';
const TEMP_HASH_LEN = 6;
const NAME_MAX = C.IPSET_MAXNAMELEN - 1;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function tempNamePattern(prefix: string): RegExp {
  return new RegExp(`^${escapeRegExp(prefix)}${TEMP_MARK}[0-9a-f]{${TEMP_HASH_LEN}}$`);
}

/** Options as the kernel will report them, so desired and actual compare equal when they match. */
function normalizeOptions(type: SetType, o: SetOptions = {}): SetOptions {
  const out: SetOptions = {};
  if (type.startsWith('hash:')) {
    if (o.hashsize !== undefined) out.hashsize = o.hashsize;
    out.maxelem = o.maxelem ?? C.IPSET_DEFAULT_MAXELEM;
  }
  if (o.timeout !== undefined && o.timeout > 0) out.timeout = o.timeout;
  if (o.counters) out.counters = true;
  if (o.comment) out.comment = true;
  if (type === 'bitmap:port' && o.range) out.range = { from: o.range.from, to: o.range.to };
  if (type === 'list:set') out.size = Math.max(o.size ?? C.IPSET_LIST_DEFAULT_SIZE, C.IPSET_LIST_MIN_SIZE);
  return out;
}

/** Everything that must match for a set to be kept as is (hashsize grows on its own, so not it). */
function specOf(type: string, family: SetFamily, o: SetOptions): string {
  return JSON.stringify([type, family, o.maxelem ?? null, o.timeout ?? 0, !!o.counters, !!o.comment, o.range ?? null, o.size ?? null]);
}

function tempKey(w: Wanted): string {
  return `${specOf(w.type, w.family, w.options)}/${w.options.hashsize ?? ''}`;
}

function toElement(type: SetType, family: SetFamily, m: MemberInput): Element {
  if (typeof m === 'string') return parseElement(type, family, m);
  const e = parseElement(type, family, m.elem);
  if (m.timeout !== undefined) e.timeout = m.timeout;
  if (m.comment !== undefined) e.comment = m.comment;
  if (m.packets !== undefined) e.packets = BigInt(m.packets);
  if (m.bytes !== undefined) e.bytes = BigInt(m.bytes);
  return e;
}

/** Checks and parses the desired state. A member given as the exact text of a member the kernel
 * already holds (same set, same kind) is taken from the read-back instead of parsed again. */
function validate(desired: Map<string, DesiredSet>, prefix: string, actual: Map<string, IpsetSet>): Wanted[] {
  const problems: string[] = [];
  const temp = tempNamePattern(prefix);
  const out: Wanted[] = [];
  for (const [name, d] of desired) {
    if (!name.startsWith(prefix)) problems.push(`set ${name}: name does not start with the prefix "${prefix}"`);
    if (temp.test(name)) problems.push(`set ${name}: name is reserved for temporary sets`);
    if (Buffer.byteLength(name) > NAME_MAX || name.length === 0) problems.push(`set ${name}: name must be 1 to ${NAME_MAX} bytes`);
    if (!isSetType(d.type)) {
      problems.push(`set ${name}: unsupported type "${d.type}"`);
      continue;
    }
    if (d.type === 'bitmap:port' && !d.options?.range) problems.push(`set ${name}: bitmap:port needs options.range`);
    const family = familyOf(d.type, d.family);
    const options = normalizeOptions(d.type, d.options);
    const members = new Map<string, Element>();
    const cur = actual.get(name);
    const known = cur && specOf(cur.type, cur.family, cur.options) === specOf(d.type, family, options) ? new Map(cur.members.map((e) => [e.key, e])) : undefined;
    for (const m of d.members) {
      const hit = typeof m === 'string' ? known?.get(m) : undefined;
      if (hit && (!options.comment || hit.comment === undefined)) {
        members.set(m as string, hit);
        continue;
      }
      try {
        const e = toElement(d.type, family, m);
        if (e.timeout !== undefined && options.timeout === undefined) throw new ElementSyntaxError(e.key, 'member timeout needs a set with options.timeout');
        if (e.comment !== undefined && !options.comment) throw new ElementSyntaxError(e.key, 'member comment needs a set with options.comment');
        if (options.range && e.port !== undefined && (e.port < options.range.from || e.port > options.range.to)) {
          throw new ElementSyntaxError(e.key, `port is outside the set's range ${options.range.from}-${options.range.to}`);
        }
        members.set(e.key, e);
      } catch (err) {
        if (!(err instanceof ElementSyntaxError)) throw err;
        problems.push(`set ${name}: ${err.message}`);
      }
    }
    out.push({ name, type: d.type, family, options, members });
  }
  if (problems.length > 0) throw new SyncInputError(problems);
  return out;
}

function memberChanges(w: Wanted, actual: IpsetSet): { add: Element[]; del: Element[] } {
  const have = new Map(actual.members.map((m) => [m.key, m]));
  const add: Element[] = [];
  for (const [key, e] of w.members) {
    const cur = have.get(key);
    if (!cur || (w.options.comment && (cur.comment ?? '') !== (e.comment ?? ''))) add.push(e);
  }
  const del = actual.members.filter((m) => !w.members.has(m.key));
  return { add, del };
}

/** Lists come after the sets they hold when filling, and before them when emptying. */
const listsLast = <T extends { type: string }>(xs: T[]): T[] => [...xs.filter((x) => x.type !== 'list:set'), ...xs.filter((x) => x.type === 'list:set')];

/** One temporary set per kind of set (type, family, options), reused for the whole run. */
class TempSets {
  private readonly byKey = new Map<string, { name: string; type: SetType }>();
  private readonly used = new Set<string>();

  constructor(private readonly prefix: string) {}

  /** The temporary set for a wanted set's kind; the first use creates it, later ones flush what
   * the previous swap left in it. */
  take(w: Wanted): { name: string; create: boolean; flush: boolean } {
    const key = tempKey(w);
    const have = this.byKey.get(key);
    if (have) return { name: have.name, create: false, flush: true };
    let n = 0;
    let name: string;
    do {
      const hash = createHash('sha256').update(`${key}#${n++}`).digest('hex').slice(0, TEMP_HASH_LEN);
      name = `${this.prefix}${TEMP_MARK}${hash}`;
    } while (this.used.has(name));
    this.used.add(name);
    this.byKey.set(key, { name, type: w.type });
    return { name, create: true, flush: false };
  }

  /** After a swap across kinds the temporary set holds the old kind: the caller destroys it. */
  forget(w: Wanted): void {
    this.byKey.delete(tempKey(w));
  }

  all(): { name: string; type: SetType }[] {
    return listsLast([...this.byKey.values()]);
  }
}

function createOp(name: string, w: Wanted): IpsetOp {
  return { op: 'create', name, type: w.type, family: w.family, options: w.options };
}

function addOp(name: string, w: Wanted, elements: Element[]): IpsetOp[] {
  return elements.length > 0 ? [{ op: 'add', name, type: w.type, elements, exist: true }] : [];
}

export async function syncSets(
  client: IpsetClient,
  desired: Map<string, DesiredSet> | Record<string, DesiredSet>,
  opts: SyncOptions,
): Promise<SyncResult> {
  const { prefix } = opts;
  const mode = opts.mode ?? 'incremental';
  const prune = opts.prune ?? true;
  if (Buffer.byteLength(prefix) > NAME_MAX - TEMP_MARK.length - TEMP_HASH_LEN) {
    throw new SyncInputError([`prefix "${prefix}" is too long: temporary names need ${TEMP_MARK.length + TEMP_HASH_LEN} more bytes within ${NAME_MAX}`]);
  }
  const desiredMap = desired instanceof Map ? desired : new Map(Object.entries(desired));
  const isTemp = tempNamePattern(prefix);
  const before = { ...client.sent };
  const inScope = (name: string) => name.startsWith(prefix) && (prune || desiredMap.has(name) || isTemp.test(name));
  const state = await client.list({ include: inScope });
  const actual = new Map(state.sets.map((s) => [s.name, s]));
  const otherTypes = new Map(state.otherTypes.map((s) => [s.name, s]));
  const wantedList = validate(desiredMap, prefix, actual);
  const wanted = new Map(wantedList.map((w) => [w.name, w]));
  const result: SyncResult = {
    created: [],
    updated: [],
    replaced: [],
    destroyed: [],
    retained: [],
    unchanged: 0,
    leftoversRemoved: [],
    added: 0,
    deleted: 0,
    messages: { read: 0, mutating: 0 },
    failures: [],
  };


  const record = async (ops: IpsetOp[]): Promise<Set<number>> => {
    const failures = await client.run(ops);
    result.failures.push(...failures.map((f) => f.error));
    return new Set(failures.map((f) => f.index));
  };

  const leftovers = [...actual.values(), ...otherTypes.values()].map((s) => s.name).filter((n) => isTemp.test(n));
  const fill: IpsetOp[] = leftovers.map((name) => ({ op: 'destroy', name, exist: true }));
  result.leftoversRemoved.push(...leftovers);

  const respec: Wanted[] = [];
  const changed: { w: Wanted; add: Element[]; del: Element[] }[] = [];
  for (const w of listsLast(wantedList)) {
    const cur = actual.get(w.name);
    if (!cur && !otherTypes.has(w.name)) {
      fill.push(createOp(w.name, w), ...addOp(w.name, w, [...w.members.values()]));
      result.created.push(w.name);
      result.added += w.members.size;
      continue;
    }
    if (!cur || specOf(cur.type, cur.family, cur.options) !== specOf(w.type, w.family, w.options)) {
      respec.push(w);
      continue;
    }
    const diff = memberChanges(w, cur);
    if (diff.add.length === 0 && diff.del.length === 0) result.unchanged++;
    else changed.push({ w, ...diff });
  }

  const temps = new TempSets(prefix);
  const drain: IpsetOp[] = [];
  if (mode === 'incremental') {
    for (const { w, add } of changed) {
      fill.push(...addOp(w.name, w, add));
      result.added += add.length;
    }
    for (const { w, del } of listsLast(changed.map((c) => ({ ...c, type: c.w.type }))).reverse()) {
      if (del.length > 0) drain.push({ op: 'del', name: w.name, type: w.type, elements: del, exist: true });
      result.deleted += del.length;
    }
    result.updated.push(...changed.map((c) => c.w.name));
  }
  await record(fill);

  if (mode === 'replace') {
    for (const { w, add, del } of changed) {
      if (await replaceBySwap(w)) {
        result.replaced.push(w.name);
        result.added += add.length;
        result.deleted += del.length;
      }
    }
  }
  for (const w of respec) {
    if (await changeSpec(w)) result.replaced.push(w.name);
  }

  // Temporaries go first: a swapped-out list:set in one still holds its members.
  for (const t of temps.all()) drain.push({ op: 'destroy', name: t.name, exist: true });
  const present = [...actual.values()].map((s) => ({ name: s.name, type: s.type as string }));
  present.push(...[...otherTypes.values()].map((s) => ({ name: s.name, type: s.typeName })));
  const doomed = prune ? listsLast(present.filter((s) => !wanted.has(s.name) && !isTemp.test(s.name))).reverse() : [];
  const destroyAt = new Map<number, string>();
  for (const s of doomed) {
    destroyAt.set(drain.length, s.name);
    drain.push({ op: 'destroy', name: s.name, exist: true });
  }
  const failures = await client.run(drain);
  const failed = new Set(failures.map((f) => f.index));
  for (const f of failures) {
    const name = destroyAt.get(f.index);
    if (name && (f.error.kind === 'in-use' || f.error.kind === 'referenced')) result.retained.push(name);
    else result.failures.push(f.error);
  }
  for (const [i, name] of destroyAt) if (!failed.has(i)) result.destroyed.push(name);

  result.messages = { read: client.sent.read - before.read, mutating: client.sent.mutating - before.mutating };
  return result;

  /** Builds the wanted content in a temporary set and swaps it in; false if anything failed. */
  async function replaceBySwap(w: Wanted): Promise<boolean> {
    const t = temps.take(w);
    const prep: IpsetOp[] = [];
    if (t.create) prep.push(createOp(t.name, w));
    if (t.flush) prep.push({ op: 'flush', name: t.name });
    prep.push(...addOp(t.name, w, [...w.members.values()]));
    if ((await record(prep)).size > 0) return false;
    return (await record([{ op: 'swap', name: t.name, with: w.name }])).size === 0;
  }

  /** A set whose type or options differ: swapped when the kernel allows it (same type and
   * family); otherwise, if nothing references the old set, destroyed and the new one renamed in. */
  async function changeSpec(w: Wanted): Promise<boolean> {
    const t = temps.take(w);
    const prep: IpsetOp[] = [];
    if (t.create) prep.push(createOp(t.name, w));
    if (t.flush) prep.push({ op: 'flush', name: t.name });
    prep.push(...addOp(t.name, w, [...w.members.values()]));
    if ((await record(prep)).size > 0) return false;
    temps.forget(w);
    const swap = await client.run([{ op: 'swap', name: t.name, with: w.name }]);
    if (swap.length === 0) {
      await record([{ op: 'destroy', name: t.name, exist: true }]);
      return true;
    }
    if (swap[0].error.kind !== 'type-mismatch') {
      result.failures.push(swap[0].error);
      await record([{ op: 'destroy', name: t.name, exist: true }]);
      return false;
    }
    const refs = actual.get(w.name)?.header.references ?? otherTypes.get(w.name)?.references ?? 0;
    if (refs > 0) {
      result.failures.push(swap[0].error);
      await record([{ op: 'destroy', name: t.name, exist: true }]);
      return false;
    }
    const moved = await record([
      { op: 'destroy', name: w.name },
      { op: 'rename', name: t.name, to: w.name },
    ]);
    if (moved.size > 0) await record([{ op: 'destroy', name: t.name, exist: true }]);
    return moved.size === 0;
  }
}
