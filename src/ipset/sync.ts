/** `syncSets`: brings every kernel set whose name starts with a prefix to a desired state, with no
 * moment where a member kept across the change is missing, and work proportional to the change.
 *
 * - incremental: create missing sets, add new members before deleting old ones (one ordered
 *   stream of messages: the kernel applies them in order), destroy sets no longer wanted.
 * - replace: each changed set is rebuilt in a temporary set and swapped in atomically; one
 *   temporary set per (type, family, options) is reused for the whole run.
 * In both modes a change of type or options is a swap, and an unchanged set sends nothing.
 *
 * A run compares with what the kernel holds, read in one dump. A long-lived caller may instead
 * pass the state its previous run left (`cache`), which saves the dump.
 *
 * A run in steps: `validate` checks and parses the desired state (nothing sent when it is
 * invalid), `planRun` compares it with the present sets, and a `SyncRun` applies the plan
 * (fill, replace by swap, drain) and owns the result it reports. */
import { familyOf, SET_NAME_MAX, setNameFits } from './codec';
import { IpsetClient, IpsetOp, MessageCounts } from './client';
import * as C from './constants';
import { ElementSyntaxError, parseElement } from './element';
import { IpsetError } from './errors';
import { DesiredSet, Element, isSetType, MemberInput, SetFamily, SetOptions, SetType, supportsNomatch } from './types';

export type SyncMode = 'incremental' | 'replace';

/** node:crypto is loaded when a temporary set is first named, not with the module: loading it
 * was a tenth of the CPU of `nfkube ipset restore` into empty sets, which names none. */
function sha256Hex(text: string): string {
  const { createHash } = require('node:crypto') as typeof import('node:crypto');
  return createHash('sha256').update(text).digest('hex');
}

/** A set as the reconciler compares it: its kind, and its members by key. */
export interface KnownSet {
  name: string;
  type: SetType;
  family: SetFamily;
  options: SetOptions;
  /** Everything that must match for the set to be kept (specOf). */
  spec: string;
  members: Map<string, Element>;
  /** The member texts the set was made from, in the caller's order, when they were exactly its
   * keys (canonical, no duplicates, no extensions): the same texts in the same order next time
   * mean the same set, found without a look-up per member. A run updates it in place. */
  order?: string[];
}

/** What a run left under its prefix: the sets it made match the desired state, and the sets it
 * could not destroy yet. Only the reconciler reads it. */
export class SyncState {
  private usedByRun = false;

  constructor(
    readonly prefix: string,
    readonly prune: boolean,
    readonly sets: ReadonlyMap<string, KnownSet>,
    readonly retained: readonly { name: string; typeName: string }[],
  ) {}

  /** A run updates the member maps it was given, so a state serves one run only. */
  get used(): boolean {
    return this.usedByRun;
  }

  markUsed(): void {
    this.usedByRun = true;
  }
}

export interface SyncOptions {
  /** Only sets whose names start with this are read or written. */
  prefix: string;
  mode?: SyncMode;
  /** Destroy prefixed sets that are not desired (default true). */
  prune?: boolean;
  /** The `state` of this caller's previous run (same prefix and prune): the run compares with it
   * instead of reading the kernel. A state serves one run (which updates it into the state it
   * returns); a run refused as SyncInputError leaves it unused. Give it only while nothing else
   * changes the prefixed sets; a run with a failure returns no state, so the next one reads. */
  cache?: SyncState;
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
  /** The prefixed sets as this run left them, to pass as the next run's `cache`; absent when
   * anything failed. */
  state?: SyncState;
}

/** Desired state that cannot be applied as given; lists every problem, nothing was sent. */
export class SyncInputError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid desired ipset state:\n  ${problems.join('\n  ')}`);
    this.name = 'SyncInputError';
  }
}

/** A set present under the prefix; `known` is absent for types this codec does not model. */
interface PresentSet {
  name: string;
  typeName: string;
  references: number;
  known?: KnownSet;
}

const TEMP_MARK = '~nfk';
const TEMP_HASH_LEN = 6;

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function tempNamePattern(prefix: string): RegExp {
  return new RegExp(`^${escapeRegExp(prefix)}${TEMP_MARK}[0-9a-f]{${TEMP_HASH_LEN}}$`);
}

/** tempNamePattern as a test that rejects most names by their start, before the expression
 * runs: a run tests every set's name. */
function tempNameTest(prefix: string): (name: string) => boolean {
  const pattern = tempNamePattern(prefix);
  const start = prefix + TEMP_MARK;
  return (name) => name.startsWith(start) && pattern.test(name);
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

function tempKey(w: KnownSet): string {
  return `${w.spec}/${w.options.hashsize ?? ''}`;
}

/** The prefixed sets the kernel holds, read in one dump; `include` narrows it further. */
async function readPresent(client: IpsetClient, include: (name: string) => boolean): Promise<Map<string, PresentSet>> {
  const listed = await client.list({ include });
  const present = new Map<string, PresentSet>();
  for (const s of listed.sets) {
    const members = new Map<string, Element>();
    for (const m of s.members) members.set(m.key, m);
    const known: KnownSet = { name: s.name, type: s.type, family: s.family, options: s.options, spec: specOf(s.type, s.family, s.options), members };
    present.set(s.name, { name: s.name, typeName: s.type, references: s.header.references, known });
  }
  for (const s of listed.otherTypes) present.set(s.name, { name: s.name, typeName: s.typeName, references: s.references });
  return present;
}

/** The sets a previous run left, as it recorded them. References are not recorded: the kernel
 * refuses what they forbid. */
function presentFromCache(cache: SyncState): Map<string, PresentSet> {
  const present = new Map<string, PresentSet>();
  for (const known of cache.sets.values()) present.set(known.name, { name: known.name, typeName: known.type, references: 0, known });
  for (const r of cache.retained) present.set(r.name, { name: r.name, typeName: r.typeName, references: 0 });
  return present;
}

function withExtensions(type: SetType, family: SetFamily, m: Exclude<MemberInput, string>): Element {
  const e = parseElement(type, family, m.elem);
  if (m.timeout !== undefined) e.timeout = m.timeout;
  if (m.comment !== undefined) e.comment = m.comment;
  if (m.packets !== undefined) e.packets = BigInt(m.packets);
  if (m.bytes !== undefined) e.bytes = BigInt(m.bytes);
  if (m.nomatch) e.nomatch = true;
  return e;
}

/** The same texts in the same order as the set was made from: the same set. */
function sameOrder(order: readonly string[] | undefined, members: readonly MemberInput[]): boolean {
  if (!order || order.length !== members.length) return false;
  for (let i = 0; i < order.length; i++) if (members[i] !== order[i]) return false;
  return true;
}

/** A set whose caller kept its member order, changed at a few positions: only the texts at
 * changed positions are looked up, and the set's member map and order are updated, not rebuilt.
 * Members at unchanged positions are kept; the previous order has each key once, so a member
 * that left a changed position is gone unless it came back at another changed position. Returns
 * undefined when most positions changed (the general comparison is then cheaper), and reports
 * member problems like validate. */
function changedInPlace(cur: KnownSet, order: string[], texts: readonly string[], parse: (m: string) => Element | undefined): Checked | undefined {
  const common = Math.min(order.length, texts.length);
  const at: number[] = [];
  for (let i = 0; i < common; i++) if (texts[i] !== order[i]) at.push(i);
  const arrived: string[] = [];
  const left: string[] = [];
  for (const i of at) {
    arrived.push(texts[i]);
    left.push(order[i]);
  }
  for (let i = common; i < texts.length; i++) arrived.push(texts[i]);
  for (let i = common; i < order.length; i++) left.push(order[i]);
  if (arrived.length + left.length > texts.length / 2) return undefined;
  const leftKeys = new Set(left);
  const arrivedKeys = new Set<string>();
  const add: Element[] = [];
  let keepsOrder = true;
  for (const m of arrived) {
    const known = cur.members.get(m);
    const e = known ?? parse(m);
    if (!e) continue;
    const key = e.key;
    if (key !== m) keepsOrder = false;
    const held = known !== undefined || cur.members.has(key);
    // Twice in the list, or also at an unchanged position: a duplicate.
    if (arrivedKeys.has(key) || (held && !leftKeys.has(key))) keepsOrder = false;
    else if (!held) add.push(e);
    arrivedKeys.add(key);
  }
  const del: Element[] = [];
  for (const k of left) if (!arrivedKeys.has(k)) del.push(cur.members.get(k) as Element);
  const newOrder = !keepsOrder ? undefined : texts.length === order.length ? { at, texts } : texts.slice();
  return { w: cur, parsed: add, changes: { add, del, order: newOrder } };
}

/** A desired set checked and parsed; `parsed` are the members that were not known keys of the
 * set as it is, the only ones that can be additions. */
interface Checked {
  w: KnownSet;
  parsed: Element[];
  /** Found by comparing positions with the set's previous order (changedInPlace); `w` is then
   * the previous set, its members and order to be updated by applyInPlace: the texts at
   * positions `at`, a new order, or none when the texts are no longer exactly its keys. */
  changes?: { add: Element[]; del: Element[]; order: { at: number[]; texts: readonly string[] } | string[] | undefined };
}

/** Updates the sets changedInPlace compared, once the whole desired state is known valid. */
function applyInPlace(checked: Checked[]): void {
  for (const { w, changes } of checked) {
    if (!changes) continue;
    for (const e of changes.del) w.members.delete(e.key);
    for (const e of changes.add) w.members.set(e.key, e);
    const { order } = changes;
    if (order === undefined || Array.isArray(order)) w.order = order;
    else for (const i of order.at) (w.order as string[])[i] = order.texts[i];
  }
}

/** Checks and parses the desired state. A member given as the key of a member the set already
 * holds (same kind of set) is canonical and valid, so it is taken as is, not parsed again. */
function validate(desired: Map<string, DesiredSet>, prefix: string, present: Map<string, PresentSet>): Checked[] {
  const problems: string[] = [];
  const isTemp = tempNameTest(prefix);
  const out: Checked[] = [];
  // Most sets of a run share their type, family and (absent) options: worked out once each.
  const kinds = new Map<string, { family: SetFamily; options: SetOptions; spec: string }>();
  const kindOf = (d: DesiredSet & { type: SetType }) => {
    const id = d.options === undefined ? `${d.type}/${d.family}` : undefined;
    const had = id === undefined ? undefined : kinds.get(id);
    if (had) return had;
    const family = familyOf(d.type, d.family);
    const options = normalizeOptions(d.type, d.options);
    const kind = { family, options, spec: specOf(d.type, family, options) };
    if (id !== undefined) kinds.set(id, kind);
    return kind;
  };
  for (const [name, d] of desired) {
    if (!name.startsWith(prefix)) problems.push(`set ${name}: name does not start with the prefix "${prefix}"`);
    if (isTemp(name)) problems.push(`set ${name}: name is reserved for temporary sets`);
    if (!setNameFits(name)) problems.push(`set ${name}: name must be 1 to ${SET_NAME_MAX} bytes`);
    if (!isSetType(d.type)) {
      problems.push(`set ${name}: unsupported type "${d.type}"`);
      continue;
    }
    if (d.type === 'bitmap:port' && !d.options?.range) problems.push(`set ${name}: bitmap:port needs options.range`);
    const { family, options, spec } = kindOf(d);
    const cur = present.get(name)?.known;
    const sameKind = cur?.spec === spec ? cur : undefined;
    /** The member, or undefined with the problem recorded. */
    const parse = (m: MemberInput): Element | undefined => {
      try {
        const e = typeof m === 'string' ? parseElement(d.type, family, m) : withExtensions(d.type, family, m);
        if (e.timeout !== undefined && options.timeout === undefined) throw new ElementSyntaxError(e.key, 'member timeout needs a set with options.timeout');
        if (e.comment !== undefined && !options.comment) throw new ElementSyntaxError(e.key, 'member comment needs a set with options.comment');
        if (e.nomatch && !supportsNomatch(d.type)) throw new ElementSyntaxError(e.key, `${d.type} members cannot be nomatch (hash:net, hash:net,port and hash:ip,port,net can)`);
        // A bitmap:port key is the port number.
        if (options.range && (Number(e.key) < options.range.from || Number(e.key) > options.range.to)) {
          throw new ElementSyntaxError(e.key, `port is outside the set's range ${options.range.from}-${options.range.to}`);
        }
        return e;
      } catch (err) {
        if (!(err instanceof ElementSyntaxError)) throw err;
        problems.push(`set ${name}: ${err.message}`);
        return undefined;
      }
    };
    const order = sameKind?.order;
    if (sameKind && order && d.members.every((m) => typeof m === 'string')) {
      if (sameOrder(order, d.members)) {
        out.push({ w: sameKind, parsed: [] });
        continue;
      }
      const inPlace = changedInPlace(sameKind, order, d.members as string[], parse);
      if (inPlace) {
        out.push(inPlace);
        continue;
      }
    }
    const known = sameKind?.members;
    const members = new Map<string, Element>();
    const parsed: Element[] = [];
    let canonical = !options.comment;
    for (const m of d.members) {
      if (typeof m === 'string') {
        const hit = known?.get(m);
        // A plain text means a plain member: one held as nomatch is added again without it.
        if (hit && !hit.nomatch && (!options.comment || hit.comment === undefined)) {
          members.set(m, hit);
          continue;
        }
      }
      const e = parse(m);
      if (!e) continue;
      members.set(e.key, e);
      parsed.push(e);
      if (e.key !== m) canonical = false;
    }
    const w: KnownSet = { name, type: d.type, family, options, spec, members };
    if (canonical && members.size === d.members.length) w.order = d.members.slice() as string[];
    out.push({ w, parsed });
  }
  if (problems.length > 0) throw new SyncInputError(problems);
  return out;
}

/** What to add and delete to turn a set of the same kind into the wanted one. Members taken
 * from the set itself need no look-up: only parsed ones can be new. */
function memberChanges({ w, parsed, changes }: Checked, actual: KnownSet): { add: Element[]; del: Element[] } {
  if (changes) return changes;
  const add: Element[] = [];
  for (const e of parsed) {
    const cur = actual.members.get(e.key);
    const differs = !cur || !cur.nomatch !== !e.nomatch || (w.options.comment && (cur.comment ?? '') !== (e.comment ?? ''));
    if (differs && w.members.get(e.key) === e) add.push(e);
  }
  const del: Element[] = [];
  // Every wanted member is present; with equal counts nothing else is.
  if (add.length === 0 && w.members.size === actual.members.size) return { add, del };
  for (const e of actual.members.values()) if (!w.members.has(e.key)) del.push(e);
  return { add, del };
}

/** Lists come after the sets they hold when filling, and before them when emptying. */
function listsLast<T>(xs: Iterable<T>, typeOf: (x: T) => string): T[] {
  const sets: T[] = [];
  const lists: T[] = [];
  for (const x of xs) (typeOf(x) === 'list:set' ? lists : sets).push(x);
  return [...sets, ...lists];
}

/** One temporary set per kind of set (type, family, options), reused for the whole run. */
class TempSets {
  private readonly byKey = new Map<string, { name: string; type: SetType }>();
  private readonly used = new Set<string>();

  constructor(private readonly prefix: string) {}

  /** The temporary set for a wanted set's kind; the first use creates it, later ones flush what
   * the previous swap left in it. */
  take(w: KnownSet): { name: string; create: boolean } {
    const key = tempKey(w);
    const have = this.byKey.get(key);
    if (have) return { name: have.name, create: false };
    let n = 0;
    let name: string;
    do {
      const hash = sha256Hex(`${key}#${n++}`).slice(0, TEMP_HASH_LEN);
      name = `${this.prefix}${TEMP_MARK}${hash}`;
    } while (this.used.has(name));
    this.used.add(name);
    this.byKey.set(key, { name, type: w.type });
    return { name, create: true };
  }

  /** After a swap across kinds the temporary set holds the old kind: the caller destroys it. */
  forget(w: KnownSet): void {
    this.byKey.delete(tempKey(w));
  }

  all(): { name: string; type: SetType }[] {
    return listsLast(this.byKey.values(), (t) => t.type);
  }
}

/** A changed set, with its member changes: applied member by member, or rebuilt by swap. */
interface Replacement {
  w: KnownSet;
  add: Element[];
  del: Element[];
}

/** The changed sets of one kind, in the order they go through its temporary set. */
interface TempQueue {
  temp: { name: string; create: boolean };
  todo: Replacement[];
  /** Filled in the previous round, to be swapped in by the next. */
  filled?: Replacement;
}

function addOp(name: string, w: KnownSet, elements: Element[]): IpsetOp[] {
  return elements.length > 0 ? [{ op: 'add', name, type: w.type, elements, exist: true }] : [];
}

/** The temporary set emptied (created on first use) and filled with the wanted members. */
function fillTempOps(t: { name: string; create: boolean }, w: KnownSet): IpsetOp[] {
  const first: IpsetOp = t.create ? { op: 'create', name: t.name, type: w.type, family: w.family, options: w.options } : { op: 'flush', name: t.name };
  return [first, ...addOp(t.name, w, [...w.members.values()])];
}

function destroyOp(name: string): IpsetOp {
  return { op: 'destroy', name, exist: true };
}

/** What a run must do, found by comparing the desired sets with the present ones; nothing sent. */
interface SyncPlan {
  /** Temporary sets an interrupted run left. */
  leftovers: string[];
  /** Desired sets not present, lists last. */
  missing: KnownSet[];
  /** Present sets of the same kind whose members differ, lists last. */
  changed: Replacement[];
  /** Present sets whose type or options differ (or of a type this codec does not model). */
  respec: KnownSet[];
  unchanged: number;
  /** Prefixed sets no longer desired (when pruning), in the order to destroy them. */
  doomed: PresentSet[];
}

function planRun(checked: Checked[], present: Map<string, PresentSet>, wanted: Map<string, KnownSet>, prune: boolean, isTemp: (name: string) => boolean): SyncPlan {
  const plan: SyncPlan = { leftovers: [...present.keys()].filter(isTemp), missing: [], changed: [], respec: [], unchanged: 0, doomed: [] };
  for (const c of listsLast(checked, (x) => x.w.type)) {
    const { w } = c;
    const cur = present.get(w.name);
    if (!cur) {
      plan.missing.push(w);
    } else if (!cur.known || cur.known.spec !== w.spec) {
      plan.respec.push(w);
    } else {
      const diff = memberChanges(c, cur.known);
      if (diff.add.length === 0 && diff.del.length === 0) plan.unchanged++;
      else plan.changed.push({ w, ...diff });
    }
  }
  if (prune) {
    const unwanted = [...present.values()].filter((s) => !wanted.has(s.name) && !isTemp(s.name));
    plan.doomed = listsLast(unwanted, (s) => s.typeName).reverse();
  }
  return plan;
}

/** One run of syncSets once the desired state is known valid: sends the plan and owns what the
 * result reports. */
class SyncRun {
  private readonly result: SyncResult = {
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
  /** Destroys of sets no longer wanted: a refusal because the set is in use means "retained". */
  private readonly doomed = new Map<IpsetOp, string>();
  private readonly temps: TempSets;

  constructor(
    private readonly client: IpsetClient,
    private readonly prefix: string,
    private readonly mode: SyncMode,
    private readonly present: Map<string, PresentSet>,
  ) {
    this.temps = new TempSets(prefix);
  }

  /** Applies the plan: fills (new sets, leftovers gone, additions) before drains (removals and
   * destroys), so no member kept across the change is ever missing. */
  async apply(plan: SyncPlan): Promise<SyncResult> {
    const { result, mode } = this;
    const fill: IpsetOp[] = plan.leftovers.map(destroyOp);
    result.leftoversRemoved.push(...plan.leftovers);
    for (const w of plan.missing) {
      fill.push({ op: 'create', name: w.name, type: w.type, family: w.family, options: w.options }, ...addOp(w.name, w, [...w.members.values()]));
      result.created.push(w.name);
      result.added += w.members.size;
    }
    result.unchanged = plan.unchanged;

    const drain: IpsetOp[] = [];
    if (mode === 'incremental') {
      for (const { w, add } of plan.changed) fill.push(...addOp(w.name, w, add));
      for (const { w, del } of listsLast(plan.changed, (c) => c.w.type).reverse()) {
        if (del.length > 0) drain.push({ op: 'del', name: w.name, type: w.type, elements: del, exist: true });
      }
      for (const c of plan.changed) this.count(c);
      result.updated.push(...plan.changed.map((c) => c.w.name));
    }
    const destroys = plan.doomed.map((s) => {
      const op = destroyOp(s.name);
      this.doomed.set(op, s.name);
      return op;
    });

    if (mode === 'incremental' && plan.respec.length === 0) {
      // Nothing waits for an answer: one ordered stream, additions before removals.
      await this.send([...fill, ...drain, ...destroys]);
    } else {
      await this.send(fill);
      if (mode === 'replace') await this.replace(plan.changed);
      for (const w of plan.respec) {
        if (await this.changeSpec(w)) result.replaced.push(w.name);
      }
      // Temporaries go first: a swapped-out list:set in one still holds its members.
      await this.send([...drain, ...this.temps.all().map((t) => destroyOp(t.name)), ...destroys]);
    }
    return result;
  }

  private count(r: Replacement): void {
    this.result.added += r.add.length;
    this.result.deleted += r.del.length;
  }

  /** Sends `ops` and records their failures; returns the indexes of the failed ones. */
  private async send(ops: IpsetOp[]): Promise<Set<number>> {
    const { result } = this;
    const failures = await this.client.run(ops);
    for (const f of failures) {
      const name = this.doomed.get(ops[f.index]);
      if (name !== undefined && (f.error.kind === 'in-use' || f.error.kind === 'referenced')) result.retained.push(name);
      else result.failures.push(f.error);
    }
    const failed = new Set(failures.map((f) => f.index));
    ops.forEach((op, i) => {
      const name = this.doomed.get(op);
      if (name !== undefined && !failed.has(i)) result.destroyed.push(name);
    });
    return failed;
  }

  /** Rebuilds each changed set in its kind's temporary set and swaps it in. A swap waits for the
   * answer to its fill (a partly filled set must never be swapped in), so each round sends, per
   * temporary set, the swap of the set filled in the previous round and the fill of the next. */
  private async replace(sets: Replacement[]): Promise<void> {
    const queues = new Map<string, TempQueue>();
    for (const r of sets) {
      const t = this.temps.take(r.w);
      const q = queues.get(t.name) ?? { temp: t, todo: [] };
      q.todo.push(r);
      queues.set(t.name, q);
    }
    for (;;) {
      const ops: IpsetOp[] = [];
      const swaps: { at: number; r: Replacement }[] = [];
      const fills: { from: number; to: number; q: TempQueue; r: Replacement }[] = [];
      for (const q of queues.values()) {
        if (q.filled) {
          swaps.push({ at: ops.length, r: q.filled });
          ops.push({ op: 'swap', name: q.temp.name, with: q.filled.w.name });
          q.filled = undefined;
        }
        const r = q.todo.shift();
        if (!r) continue;
        const from = ops.length;
        ops.push(...fillTempOps(q.temp, r.w));
        q.temp = { name: q.temp.name, create: false };
        fills.push({ from, to: ops.length, q, r });
      }
      if (ops.length === 0) return;
      const failed = await this.send(ops);
      for (const f of fills) {
        let ok = true;
        for (let i = f.from; i < f.to; i++) if (failed.has(i)) ok = false;
        if (ok) f.q.filled = f.r;
      }
      for (const { at, r } of swaps) {
        if (failed.has(at)) continue;
        this.result.replaced.push(r.w.name);
        this.count(r);
      }
    }
  }

  /** A set whose type or options differ: swapped when the kernel allows it (same type and
   * family); otherwise, if nothing references the old set, destroyed and the new one renamed in. */
  private async changeSpec(w: KnownSet): Promise<boolean> {
    const t = this.temps.take(w);
    if ((await this.send(fillTempOps(t, w))).size > 0) return false;
    this.temps.forget(w);
    const swap = await this.client.run([{ op: 'swap', name: t.name, with: w.name }]);
    if (swap.length === 0) {
      await this.send([destroyOp(t.name)]);
      return true;
    }
    if (swap[0].error.kind !== 'type-mismatch' || (this.present.get(w.name)?.references ?? 0) > 0) {
      this.result.failures.push(swap[0].error);
      await this.send([destroyOp(t.name)]);
      return false;
    }
    const moved = await this.send([
      { op: 'destroy', name: w.name },
      { op: 'rename', name: t.name, to: w.name },
    ]);
    if (moved.size > 0) await this.send([destroyOp(t.name)]);
    return moved.size === 0;
  }
}

export async function syncSets(
  client: IpsetClient,
  desired: Map<string, DesiredSet> | Record<string, DesiredSet>,
  opts: SyncOptions,
): Promise<SyncResult> {
  const { prefix, cache } = opts;
  const mode = opts.mode ?? 'incremental';
  const prune = opts.prune ?? true;
  if (Buffer.byteLength(prefix) > SET_NAME_MAX - TEMP_MARK.length - TEMP_HASH_LEN) {
    throw new SyncInputError([`prefix "${prefix}" is too long: temporary names need ${TEMP_MARK.length + TEMP_HASH_LEN} more bytes within ${SET_NAME_MAX}`]);
  }
  if (cache && (cache.prefix !== prefix || cache.prune !== prune)) {
    throw new SyncInputError([`cache is the state of a run with prefix "${cache.prefix}" and prune ${cache.prune}, not "${prefix}" and ${prune}`]);
  }
  if (cache?.used) throw new SyncInputError(['cache: this state was already used by a run; pass the state that run returned']);
  const desiredMap = desired instanceof Map ? desired : new Map(Object.entries(desired));
  const isTemp = tempNameTest(prefix);
  const before = { ...client.sent };
  const inScope = (name: string) => name.startsWith(prefix) && (prune || desiredMap.has(name) || isTemp(name));
  const present = cache ? presentFromCache(cache) : await readPresent(client, inScope);
  const checked = validate(desiredMap, prefix, present);
  cache?.markUsed();
  applyInPlace(checked);
  const wanted = new Map(checked.map((c) => [c.w.name, c.w]));

  const plan = planRun(checked, present, wanted, prune, isTemp);
  const result = await new SyncRun(client, prefix, mode, present).apply(plan);
  result.messages = { read: client.sent.read - before.read, mutating: client.sent.mutating - before.mutating };
  if (result.failures.length === 0) {
    const retained = plan.doomed.filter((s) => result.retained.includes(s.name)).map((s) => ({ name: s.name, typeName: s.typeName }));
    result.state = new SyncState(prefix, prune, wanted, retained);
  }
  return result;
}
