/** element: members of one set, as element lists (NFTA_SET_ELEM_LIST_*, NFTA_SET_ELEM_*). */
import { AttrMap, AttrWriter, parseAttrs } from '../../netlink/attr';
import { DecodeError } from '../../netlink/errors';
import * as C from '../constants';
import { decodeData, decodeValue, encodeValue, encodeVerdict } from '../expr/data';
import { formatElement } from '../format';
import * as fit from '../set-fit';
import { NftSet, SetElement } from '../types';
import { dataLength, decrement, increment, keyLength, typeText } from '../values';
import { isRemoval, ObjectCodec, objectVerbs, tableReference } from './codec';
import { decodeStatefulExprs } from './set';

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
  const list = beginElementList(w, set);
  while (i < elems.length && w.length - list < MAX_ELEMENT_LIST_BYTES) {
    const e = elems[i++];
    writeElement(w, e.key, e.keyEnd, e.flags, withKeysOnly ? undefined : e);
  }
  w.endNest(list);
  return i;
}

/** encodeSetElements for the ranges of a single-field interval set, each written as the start and
 * end elements kernelElements makes of it, without making them (a full sync writes hundreds of
 * thousands); a range's two elements stay in one message. */
export function encodeSetRanges(w: AttrWriter, set: { table: string; name: string; id?: number }, ranges: SetElement[], from: number, withKeysOnly = false): number {
  let i = from;
  const list = beginElementList(w, set);
  while (i < ranges.length && w.length - list < MAX_ELEMENT_LIST_BYTES) {
    const e = ranges[i++];
    writeElement(w, e.key, undefined, undefined, withKeysOnly ? undefined : e);
    const after = increment(e.keyEnd ?? e.key);
    if (after) writeElement(w, after, undefined, C.NFT_SET_ELEM_INTERVAL_END, undefined);
  }
  w.endNest(list);
  return i;
}

function beginElementList(w: AttrWriter, set: { table: string; name: string; id?: number }): number {
  w.str(C.NFTA_SET_ELEM_LIST_TABLE, set.table).str(C.NFTA_SET_ELEM_LIST_SET, set.name);
  if (set.id !== undefined) w.be32(C.NFTA_SET_ELEM_LIST_SET_ID, set.id);
  return w.beginNest(C.NFTA_SET_ELEM_LIST_ELEMENTS);
}

/** One NFTA_LIST_ELEM; `value` supplies the data or verdict (none for keys only). */
function writeElement(w: AttrWriter, key: Buffer, keyEnd: Buffer | undefined, flags: number | undefined, value: SetElement | undefined): void {
  const begin = w.beginNest(C.NFTA_LIST_ELEM);
  encodeValue(w, C.NFTA_SET_ELEM_KEY, key, 'element key');
  if (keyEnd) encodeValue(w, C.NFTA_SET_ELEM_KEY_END, keyEnd, 'element key end');
  if (flags) w.be32(C.NFTA_SET_ELEM_FLAGS, flags);
  if (value?.verdict) encodeVerdict(w, C.NFTA_SET_ELEM_DATA, value.verdict, 'element data');
  else if (value?.data) encodeValue(w, C.NFTA_SET_ELEM_DATA, value.data, 'element data');
  w.endNest(begin);
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
      const exprs = decodeStatefulExprs(e, C.NFTA_SET_ELEM_EXPR, C.NFTA_SET_ELEM_EXPRESSIONS);
      if (exprs) elem.exprs = exprs;
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
  const dataLen = set.data && set.data !== 'verdict' ? dataLength(set.data) : undefined;
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
                ? `data of ${e.data.length} bytes, the map's ${typeText(set.data!)} takes ${dataLen}`
                : undefined;
    if (problem) throw new DecodeError(`set ${set.table} ${set.name}: element ${e.key.toString('hex')}: ${problem}`);
  }
}

export const element: ObjectCodec<'element'> = {
  verbs: objectVerbs(C.NFT_MSG_NEWSETELEM, C.NFT_MSG_DELSETELEM, C.NFT_MSG_DESTROYSETELEM),

  family: (op) => op.set.family,

  empty: (op) => op.elements.length === 0,

  sizeHint: (op) => 64 * op.elements.length,

  encode(w, op, batch) {
    const removing = isRemoval(op.verb);
    // Without the set's id: elements name their set by name.
    const ref = { table: op.set.table, name: op.set.name };
    const ranges = (op.set.flags ?? 0) & C.NFT_SET_INTERVAL && op.set.key.length === 1;
    const elems = ranges ? op.elements : kernelElements(op.set, op.elements);
    const write = ranges ? encodeSetRanges : encodeSetElements;
    for (let i = write(w, ref, elems, 0, removing); i < elems.length; ) {
      batch.next();
      i = write(w, ref, elems, i, removing);
    }
  },

  describe: (op) => `elements of set ${op.set.family} ${op.set.table} ${op.set.name}`,

  format(op) {
    const s = op.set;
    return `${op.verb} element ${s.family} ${s.table} ${s.name} { ${op.elements.map((e) => formatElement(s, e)).join(', ')} }`;
  },

  references: (op) => [tableReference(op.set.family, op.set.table), { kind: 'set', family: op.set.family, table: op.set.table, name: op.set.name, role: 'the set' }],

  defines: () => undefined,

  // The operation carries its set's declaration: nothing to resolve.
  check: (op) => fit.checkElements(op.set, op.elements, isRemoval(op.verb)),
};
