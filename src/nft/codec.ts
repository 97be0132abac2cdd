/** Pure encode/decode of nf_tables object messages (tables, chains, rules, sets, elements, gen). */
import { AttrMap, AttrWriter, parseAttrs } from '../netlink/attr';
import { DecodeError } from '../netlink/errors';
import * as C from './constants';
import { decodeData, decodeValue, encodeValue, encodeVerdict } from './expr/data';
import { decodeExprListAttr, encodeExprList } from './expr';
import { Chain, ChainType, Family, HookName, NFPROTO, NFT_TYPE, NftSet, NftTypeName, Rule, SetElement, Table } from './types';
import { decrement, increment, keyLength, TYPE_LEN } from './values';

const FAMILY_BY_NUMBER = new Map(Object.entries(NFPROTO).map(([k, v]) => [v, k as Family]));

export function familyFromNumber(n: number): Family {
  const f = FAMILY_BY_NUMBER.get(n);
  if (!f) throw new DecodeError(`unknown nfproto family ${n}`);
  return f;
}

// linux/netfilter.h NF_INET_*, NF_NETDEV_*; linux/netfilter_arp.h NF_ARP_IN, NF_ARP_OUT, NF_ARP_FORWARD.
const INET_HOOKS: HookName[] = ['prerouting', 'input', 'forward', 'output', 'postrouting', 'ingress'];
const NETDEV_HOOKS: HookName[] = ['ingress', 'egress'];
const ARP_HOOKS: HookName[] = ['input', 'output', 'forward'];

function hooksOf(family: Family): HookName[] {
  return family === 'netdev' ? NETDEV_HOOKS : family === 'arp' ? ARP_HOOKS : INET_HOOKS;
}

function hookNumber(family: Family, hook: HookName): number {
  const n = hooksOf(family).indexOf(hook);
  if (n < 0) throw new Error(`hook ${hook} does not exist in family ${family}`);
  return n;
}

function hookName(family: Family, n: number): HookName {
  const h = hooksOf(family)[n];
  if (!h) throw new DecodeError(`unknown hook number ${n} in family ${family}`);
  return h;
}

// --- tables ---------------------------------------------------------------------------------

// Encoders write a message's attributes into the caller's writer (one buffer per batch).

export function encodeTable(w: AttrWriter, t: Table): void {
  w.str(C.NFTA_TABLE_NAME, t.name);
  if (t.flags !== undefined) w.be32(C.NFTA_TABLE_FLAGS, t.flags);
  // The kernel keeps a table's user data from its creation: an update does not change it.
  if (t.comment !== undefined) w.bytes(C.NFTA_TABLE_USERDATA, commentUdata(UDATA_TABLE_COMMENT, t.comment, 'table comment'));
}

export function encodeTableRef(w: AttrWriter, t: { name: string }): void {
  w.str(C.NFTA_TABLE_NAME, t.name);
}

export function decodeTable(family: number, payload: Buffer): Table {
  const a = AttrMap.parse(payload, 'table');
  const table: Table = {
    family: familyFromNumber(family),
    name: a.required(a.str(C.NFTA_TABLE_NAME), 'NFTA_TABLE_NAME'),
    flags: a.be32(C.NFTA_TABLE_FLAGS),
    handle: a.be64(C.NFTA_TABLE_HANDLE),
    use: a.be32(C.NFTA_TABLE_USE),
  };
  const udata = a.bytes(C.NFTA_TABLE_USERDATA);
  const comment = udata && decodeComment(udata, UDATA_TABLE_COMMENT);
  if (comment !== undefined) table.comment = comment;
  const owner = a.be32(C.NFTA_TABLE_OWNER);
  if (owner !== undefined) table.owner = owner;
  return table;
}

// --- chains ---------------------------------------------------------------------------------

export function encodeChain(w: AttrWriter, c: Chain): void {
  w.str(C.NFTA_CHAIN_TABLE, c.table).str(C.NFTA_CHAIN_NAME, c.name);
  if (c.base) {
    const base = c.base;
    const hook = w.beginNest(C.NFTA_CHAIN_HOOK);
    w.be32(C.NFTA_HOOK_HOOKNUM, hookNumber(c.family, base.hook));
    w.be32(C.NFTA_HOOK_PRIORITY, base.priority);
    if (base.device) w.str(C.NFTA_HOOK_DEV, base.device);
    w.endNest(hook);
    w.be32(C.NFTA_CHAIN_POLICY, base.policy === 'accept' ? C.NF_ACCEPT : C.NF_DROP);
    w.str(C.NFTA_CHAIN_TYPE, base.type);
  }
}

export function encodeChainRef(w: AttrWriter, c: { table: string; name: string }): void {
  w.str(C.NFTA_CHAIN_TABLE, c.table).str(C.NFTA_CHAIN_NAME, c.name);
}

export function decodeChain(family: number, payload: Buffer): Chain {
  const a = AttrMap.parse(payload, 'chain');
  const fam = familyFromNumber(family);
  const chain: Chain = {
    family: fam,
    table: a.required(a.str(C.NFTA_CHAIN_TABLE), 'NFTA_CHAIN_TABLE'),
    name: a.required(a.str(C.NFTA_CHAIN_NAME), 'NFTA_CHAIN_NAME'),
    handle: a.be64(C.NFTA_CHAIN_HANDLE),
    flags: a.be32(C.NFTA_CHAIN_FLAGS),
    use: a.be32(C.NFTA_CHAIN_USE),
  };
  const hook = a.nested(C.NFTA_CHAIN_HOOK);
  if (hook) {
    const policy = a.be32(C.NFTA_CHAIN_POLICY);
    chain.base = {
      hook: hookName(fam, hook.required(hook.be32(C.NFTA_HOOK_HOOKNUM), 'NFTA_HOOK_HOOKNUM')),
      priority: hook.required(hook.be32(C.NFTA_HOOK_PRIORITY), 'NFTA_HOOK_PRIORITY') | 0,
      type: (a.str(C.NFTA_CHAIN_TYPE) ?? 'filter') as ChainType,
      policy: policy === C.NF_DROP ? 'drop' : 'accept',
    };
    const dev = hook.str(C.NFTA_HOOK_DEV);
    if (dev !== undefined) chain.base.device = dev;
  }
  return chain;
}

// --- rules ----------------------------------------------------------------------------------

// nft's userdata TLVs (libnftnl udata.h NFTNL_UDATA_RULE_COMMENT, NFTNL_UDATA_TABLE_COMMENT):
// type u8, len u8, value.
const UDATA_RULE_COMMENT = 0;
const UDATA_TABLE_COMMENT = 0;

// Rules of one policy entry, and pod chains' jumps to one policy, carry the same comment: a
// batch encodes each text once. Bounded, as comments name policies that come and go.
const COMMENT_CACHE_MAX = 4096;
const encodedComments = new Map<string, Uint8Array>();
const utf8 = new TextEncoder();

function encodeComment(comment: string): Uint8Array {
  let udata = encodedComments.get(comment);
  if (udata) return udata;
  // Type, length (set below), the text and its NUL, encoded in one pass.
  udata = utf8.encode(`\0\0${comment}\0`);
  const length = udata.length - 2;
  if (length > 255) throw new Error(`rule comment longer than 254 bytes: "${comment.slice(0, 40)}..."`);
  udata[0] = UDATA_RULE_COMMENT;
  udata[1] = length;
  if (encodedComments.size >= COMMENT_CACHE_MAX) encodedComments.clear();
  encodedComments.set(comment, udata);
  return udata;
}

/** One comment TLV: the text and its NUL, at most 255 bytes. */
function commentUdata(type: number, comment: string, what: string): Buffer {
  const text = Buffer.from(`${comment}\0`);
  if (text.length > 255) throw new Error(`${what} longer than 254 bytes: "${comment.slice(0, 40)}..."`);
  return Buffer.concat([Buffer.from([type, text.length]), text]);
}

function decodeComment(udata: Buffer, commentType: number): string | undefined {
  for (let pos = 0; pos + 2 <= udata.length; ) {
    const type = udata[pos];
    const len = udata[pos + 1];
    if (pos + 2 + len > udata.length) return undefined;
    if (type === commentType) {
      const v = udata.subarray(pos + 2, pos + 2 + len);
      const nul = v.indexOf(0);
      return v.toString('utf8', 0, nul < 0 ? v.length : nul);
    }
    pos += 2 + len;
  }
  return undefined;
}

export interface RuleEncodeOptions {
  /** NFTA_RULE_ID, to learn the handle from the echo. */
  id?: number;
  /** Leaves out the rule's handle (a new rule) or its position (a replacement, named by handle). */
  without?: 'handle' | 'position';
}

const NO_RULE_OPTIONS: RuleEncodeOptions = {};

export function encodeRule(w: AttrWriter, r: Rule, opts: RuleEncodeOptions = NO_RULE_OPTIONS): void {
  w.str(C.NFTA_RULE_TABLE, r.table).str(C.NFTA_RULE_CHAIN, r.chain);
  if (r.handle !== undefined && opts.without !== 'handle') w.be64(C.NFTA_RULE_HANDLE, r.handle);
  if (r.position !== undefined && opts.without !== 'position') w.be64(C.NFTA_RULE_POSITION, r.position);
  encodeExprList(w, C.NFTA_RULE_EXPRESSIONS, r.exprs);
  if (r.comment !== undefined) w.bytes(C.NFTA_RULE_USERDATA, encodeComment(r.comment));
  if (opts.id !== undefined) w.be32(C.NFTA_RULE_ID, opts.id);
}

export function encodeRuleRef(w: AttrWriter, r: { table: string; chain: string; handle: bigint }): void {
  w.str(C.NFTA_RULE_TABLE, r.table).str(C.NFTA_RULE_CHAIN, r.chain).be64(C.NFTA_RULE_HANDLE, r.handle);
}

export function decodeRule(family: number, payload: Buffer): Rule {
  const a = AttrMap.parse(payload, 'rule');
  const exprs = a.get(C.NFTA_RULE_EXPRESSIONS);
  const rule: Rule = {
    family: familyFromNumber(family),
    table: a.required(a.str(C.NFTA_RULE_TABLE), 'NFTA_RULE_TABLE'),
    chain: a.required(a.str(C.NFTA_RULE_CHAIN), 'NFTA_RULE_CHAIN'),
    handle: a.be64(C.NFTA_RULE_HANDLE),
    exprs: exprs ? decodeExprListAttr(exprs) : [],
  };
  const udata = a.bytes(C.NFTA_RULE_USERDATA);
  if (udata) {
    const comment = decodeComment(udata, UDATA_RULE_COMMENT);
    if (comment !== undefined) rule.comment = comment;
  }
  return rule;
}

// --- sets -----------------------------------------------------------------------------------

// nftables src/datatype.h: concatenated type ids are built 6 bits per field.
const TYPE_BITS = 6;
const TYPE_BY_ID = new Map<number, NftTypeName>(Object.entries(NFT_TYPE).map(([k, v]) => [v, k as NftTypeName]));

function keyTypeId(fields: NftTypeName[]): number {
  return fields.reduce((id, f) => (id * (1 << TYPE_BITS) + NFT_TYPE[f]) >>> 0, 0);
}

/** The fields of a key type id. `fieldCount` comes from NFTA_SET_DESC_CONCAT, which nft sends
 * only for interval concatenations: without it the id is read 6 bits at a time until nothing is
 * left (every type id is non-zero and below 64), and the fields must add up to the key length. */
function keyFieldsFromId(typeId: number, fieldCount: number | undefined, keyLen: number | undefined): NftTypeName[] {
  const fields: NftTypeName[] = [];
  let id = typeId;
  for (let i = 0; fieldCount === undefined ? id > 0 || i === 0 : i < fieldCount; i++) {
    const t = TYPE_BY_ID.get(id & ((1 << TYPE_BITS) - 1));
    if (!t) throw new DecodeError(`set key type ${typeId} has an unknown field type`);
    fields.unshift(t);
    id = Math.floor(id / (1 << TYPE_BITS));
  }
  if (fieldCount === undefined && keyLen !== undefined && fields.length > 1 && keyLength(fields) !== keyLen) {
    throw new DecodeError(`set key type ${typeId} (${fields.join(' . ')}) does not fit its key length ${keyLen}`);
  }
  return fields;
}

export function setFlags(s: NftSet): number {
  let flags = s.flags ?? 0;
  if (s.data) flags |= C.NFT_SET_MAP;
  if (s.key.length > 1) flags |= C.NFT_SET_CONCAT;
  return flags;
}

/** `id` (NFTA_SET_ID) defaults to the set's own. */
export function encodeSet(w: AttrWriter, s: NftSet, id = s.id): void {
  w.str(C.NFTA_SET_TABLE, s.table).str(C.NFTA_SET_NAME, s.name);
  w.be32(C.NFTA_SET_FLAGS, setFlags(s));
  w.be32(C.NFTA_SET_KEY_TYPE, keyTypeId(s.key));
  w.be32(C.NFTA_SET_KEY_LEN, keyLength(s.key));
  if (s.data === 'verdict') {
    w.be32(C.NFTA_SET_DATA_TYPE, C.NFT_DATA_VERDICT);
  } else if (s.data) {
    w.be32(C.NFTA_SET_DATA_TYPE, NFT_TYPE[s.data]);
    w.be32(C.NFTA_SET_DATA_LEN, TYPE_LEN[s.data]);
  }
  if (s.timeout !== undefined) w.be64(C.NFTA_SET_TIMEOUT, s.timeout);
  // No NFTA_SET_DESC_SIZE: the kernel treats it as the set's maximum, and nfkube's sets grow.
  if (s.key.length > 1) {
    const desc = w.beginNest(C.NFTA_SET_DESC);
    const concat = w.beginNest(C.NFTA_SET_DESC_CONCAT);
    for (const f of s.key) {
      const field = w.beginNest(C.NFTA_LIST_ELEM);
      w.be32(C.NFTA_SET_FIELD_LEN, TYPE_LEN[f]);
      w.endNest(field);
    }
    w.endNest(concat);
    w.endNest(desc);
  }
  if (id !== undefined) w.be32(C.NFTA_SET_ID, id);
}

export function encodeSetRef(w: AttrWriter, s: { table: string; name: string }): void {
  w.str(C.NFTA_SET_TABLE, s.table).str(C.NFTA_SET_NAME, s.name);
}

export function decodeSet(family: number, payload: Buffer): NftSet {
  const a = AttrMap.parse(payload, 'set');
  let fieldCount: number | undefined;
  const desc = a.nested(C.NFTA_SET_DESC);
  const concat = desc?.get(C.NFTA_SET_DESC_CONCAT);
  if (concat) fieldCount = parseAttrs(concat.buf, concat.start, concat.end).length;
  const rawFlags = a.be32(C.NFTA_SET_FLAGS) ?? 0;
  const set: NftSet = {
    family: familyFromNumber(family),
    table: a.required(a.str(C.NFTA_SET_TABLE), 'NFTA_SET_TABLE'),
    name: a.required(a.str(C.NFTA_SET_NAME), 'NFTA_SET_NAME'),
    handle: a.be64(C.NFTA_SET_HANDLE),
    key: keyFieldsFromId(a.required(a.be32(C.NFTA_SET_KEY_TYPE), 'NFTA_SET_KEY_TYPE'), fieldCount, a.be32(C.NFTA_SET_KEY_LEN)),
    flags: rawFlags & ~(C.NFT_SET_MAP | C.NFT_SET_CONCAT),
  };
  // The kernel stores a key length and a type id it never interprets: a length that does not fit
  // the types would make every key read as something it is not.
  const keyLen = a.be32(C.NFTA_SET_KEY_LEN);
  if (keyLen !== undefined && keyLength(set.key) !== keyLen) {
    throw new DecodeError(`set ${set.name}: key length ${keyLen} does not fit its key type ${set.key.join(' . ')} (${keyLength(set.key)} bytes)`);
  }
  const dataType = a.be32(C.NFTA_SET_DATA_TYPE);
  if (dataType !== undefined) {
    const data = dataType === C.NFT_DATA_VERDICT ? 'verdict' : TYPE_BY_ID.get(dataType);
    if (!data) throw new DecodeError(`set ${set.name}: unknown data type ${dataType}`);
    const dataLen = a.be32(C.NFTA_SET_DATA_LEN);
    if (data !== 'verdict' && dataLen !== undefined && dataLen !== TYPE_LEN[data]) {
      throw new DecodeError(`set ${set.name}: data length ${dataLen} does not fit its data type ${data} (${TYPE_LEN[data]} bytes)`);
    }
    set.data = data;
  }
  const timeout = a.be64(C.NFTA_SET_TIMEOUT);
  if (timeout !== undefined) set.timeout = timeout;
  return set;
}

// --- set elements ---------------------------------------------------------------------------

/** Single-field interval sets (rbtree) take [start, end+1) as two elements, the second flagged
 * NFT_SET_ELEM_INTERVAL_END; concatenations (pipapo) take NFTA_SET_ELEM_KEY_END inclusive. */
export function kernelElements(set: NftSet, elems: SetElement[]): SetElement[] {
  const interval = ((set.flags ?? 0) & C.NFT_SET_INTERVAL) !== 0;
  if (!interval || set.key.length > 1) {
    return interval ? elems.map((e) => ({ ...e, keyEnd: e.keyEnd ?? e.key })) : elems;
  }
  const out: SetElement[] = [];
  for (const e of elems) {
    const start: SetElement = { key: e.key };
    if (e.data) start.data = e.data;
    if (e.verdict) start.verdict = e.verdict;
    out.push(start);
    const after = increment(e.keyEnd ?? e.key);
    if (after) out.push({ key: after, flags: C.NFT_SET_ELEM_INTERVAL_END });
  }
  return out;
}

/** Inverse of kernelElements: pairs rbtree start/end elements back into inclusive ranges. */
export function userElements(set: NftSet, elems: SetElement[]): SetElement[] {
  const interval = ((set.flags ?? 0) & C.NFT_SET_INTERVAL) !== 0;
  if (!interval) return elems;
  if (set.key.length > 1) {
    return elems.map((e) => {
      const out: SetElement = { ...e };
      if (e.keyEnd && e.keyEnd.equals(e.key)) delete out.keyEnd;
      return out;
    });
  }
  // Where one range ends right before the next begins, its end and the next start share a key:
  // the end sorts first (an end's key is always above its own start).
  const sorted = [...elems].sort((x, y) => Buffer.compare(x.key, y.key) || ((y.flags ?? 0) & 1) - ((x.flags ?? 0) & 1));
  const out: SetElement[] = [];
  for (let i = 0; i < sorted.length; i++) {
    const e = sorted[i];
    if ((e.flags ?? 0) & C.NFT_SET_ELEM_INTERVAL_END) continue;
    const next = sorted[i + 1];
    const start: SetElement = { key: e.key };
    if (e.data) start.data = e.data;
    if (e.verdict) start.verdict = e.verdict;
    let last: Buffer;
    if (next && (next.flags ?? 0) & C.NFT_SET_ELEM_INTERVAL_END) {
      last = decrement(next.key) ?? next.key;
      i++;
    } else {
      last = Buffer.alloc(e.key.length, 0xff);
    }
    if (!last.equals(e.key)) start.keyEnd = last;
    out.push(start);
  }
  return out;
}

// Nested attribute lengths are 16-bit: keep every element list well under 64 KiB.
const MAX_ELEMENT_LIST_BYTES = 60_000;

/** Writes one element-list message payload for a set, starting at elems[from]; returns the index
 * of the first element left for the next message (nested attribute lengths are 16-bit). Element
 * lists are the bulk of a large sync, so the loop uses no closures. */
export function encodeSetElements(w: AttrWriter, set: { table: string; name: string; id?: number }, elems: SetElement[], from: number, withKeysOnly = false): number {
  let i = from;
  w.str(C.NFTA_SET_ELEM_LIST_TABLE, set.table).str(C.NFTA_SET_ELEM_LIST_SET, set.name);
  if (set.id !== undefined) w.be32(C.NFTA_SET_ELEM_LIST_SET_ID, set.id);
  const list = w.beginNest(C.NFTA_SET_ELEM_LIST_ELEMENTS);
  while (i < elems.length && w.length - list < MAX_ELEMENT_LIST_BYTES) {
    const e = elems[i++];
    const begin = w.beginNest(C.NFTA_LIST_ELEM);
    encodeValue(w, C.NFTA_SET_ELEM_KEY, e.key, 'element key');
    if (e.keyEnd) encodeValue(w, C.NFTA_SET_ELEM_KEY_END, e.keyEnd, 'element key end');
    if (e.flags) w.be32(C.NFTA_SET_ELEM_FLAGS, e.flags);
    if (!withKeysOnly) {
      if (e.verdict) encodeVerdict(w, C.NFTA_SET_ELEM_DATA, e.verdict, 'element data');
      else if (e.data) encodeValue(w, C.NFTA_SET_ELEM_DATA, e.data, 'element data');
    }
    w.endNest(begin);
  }
  w.endNest(list);
  return i;
}

export function decodeSetElements(payload: Buffer): { table: string; set: string; elements: SetElement[] } {
  const a = AttrMap.parse(payload, 'setelem');
  const elements: SetElement[] = [];
  const list = a.get(C.NFTA_SET_ELEM_LIST_ELEMENTS);
  if (list) {
    for (const item of parseAttrs(list.buf, list.start, list.end)) {
      const e = item.attrs('element');
      const key = e.nested(C.NFTA_SET_ELEM_KEY);
      if (!key) throw new DecodeError('element without NFTA_SET_ELEM_KEY');
      const elem: SetElement = { key: decodeValue(key, 'element key') };
      const keyEnd = e.nested(C.NFTA_SET_ELEM_KEY_END);
      if (keyEnd) {
        elem.keyEnd = decodeValue(keyEnd, 'element key end');
      }
      const data = e.nested(C.NFTA_SET_ELEM_DATA);
      if (data) {
        const v = decodeData(data, 'element data');
        if ('value' in v) elem.data = v.value;
        else elem.verdict = v.verdict;
      }
      const flags = e.be32(C.NFTA_SET_ELEM_FLAGS);
      if (flags) elem.flags = flags;
      elements.push(elem);
    }
  }
  return {
    table: a.required(a.str(C.NFTA_SET_ELEM_LIST_TABLE), 'NFTA_SET_ELEM_LIST_TABLE'),
    set: a.required(a.str(C.NFTA_SET_ELEM_LIST_SET), 'NFTA_SET_ELEM_LIST_SET'),
    elements,
  };
}

/** Checks elements read back against their set's declared types: keys and range ends of the key
 * length, map data of the data type's length, verdicts only in verdict maps. The kernel enforces
 * each of these for what it stores, so bytes that break one are an unreadable reply
 * (DecodeError), never a value that a formatter or the diff would read as something else. */
export function checkElements(set: NftSet, elems: SetElement[]): void {
  const keyLen = keyLength(set.key);
  const dataLen = set.data && set.data !== 'verdict' ? TYPE_LEN[set.data] : undefined;
  for (const e of elems) {
    const problem =
      e.key.length !== keyLen
        ? `key of ${e.key.length} bytes, the set's ${set.key.join(' . ')} takes ${keyLen}`
        : e.keyEnd && e.keyEnd.length !== keyLen
          ? `range end of ${e.keyEnd.length} bytes, the set's ${set.key.join(' . ')} takes ${keyLen}`
          : e.verdict && set.data !== 'verdict'
            ? 'a verdict in a set that is not a verdict map'
            : e.data && dataLen === undefined
              ? `data in a set that is not a ${set.data === 'verdict' ? 'data ' : ''}map`
              : e.data && e.data.length !== dataLen
                ? `data of ${e.data.length} bytes, the map's ${set.data} takes ${dataLen}`
                : undefined;
    if (problem) throw new DecodeError(`set ${set.table} ${set.name}: element ${e.key.toString('hex')}: ${problem}`);
  }
}

// --- generation -----------------------------------------------------------------------------

export function decodeGeneration(payload: Buffer): number {
  const a = AttrMap.parse(payload, 'gen');
  return a.required(a.be32(C.NFTA_GEN_ID), 'NFTA_GEN_ID');
}
