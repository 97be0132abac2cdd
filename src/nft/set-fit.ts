/** Values that do not fit the set they are meant for, which the kernel would accept or refuse
 * without saying why: element keys and data whose length is not their set's types', and address
 * matches whose family is not the set's (`ip6 saddr @v4set` commits, and never matches). */
import { formatElement } from './format';
import { Expr, NftSet, NftTypeName, SetElement } from './types';
import { dataLength, keyLength, typeText } from './values';

/** A value that does not fit the set it is meant for. Nothing was sent. */
export class SetTypeError extends Error {
  constructor(
    /** `inet demo peers` */
    readonly set: string,
    /** The element (or the rule's match, e.g. `ip6 saddr`) that does not fit. */
    readonly element: string,
    /** The set's type, e.g. `ipv4_addr` or `ipv4_addr . inet_service`. */
    readonly setType: string,
    /** The value's type or size, e.g. `ipv6_addr` or `16 bytes`. */
    readonly valueType: string,
    detail?: string,
  ) {
    super(`set ${set}: ${element} is ${valueType}, but the set's ${detail ?? 'key'} type is ${setType}`);
    this.name = 'SetTypeError';
  }
}

const setName = (s: NftSet) => `${s.family} ${s.table} ${s.name}`;

/** What a byte length most likely holds, for messages. */
function sizeName(n: number): string {
  const guess = ({ 4: 'ipv4_addr', 16: 'ipv6_addr', 6: 'ether_addr', 2: 'inet_service', 1: 'inet_proto' } as Record<number, string>)[n];
  return `${n} bytes${guess ? ` (${guess}?)` : ''}`;
}

function describeElement(set: NftSet, e: SetElement): string {
  try {
    return `element ${formatElement({ key: set.key }, { key: e.key, keyEnd: e.keyEnd })}`;
  } catch {
    return `element 0x${e.key.toString('hex')}`;
  }
}

/** Each element's key (and range end) is as long as the set's key type, and a map's elements
 * carry data of its data type. */
export function checkElements(set: NftSet, elements: SetElement[], removing = false): void {
  const klen = keyLength(set.key);
  const keyType = set.key.join(' . ');
  const dataLen = set.data && set.data !== 'verdict' ? dataLength(set.data) : 0;
  // Runs over every element of every batch: no allocation on the path where all is well.
  for (let i = 0; i < elements.length; i++) {
    const e = elements[i];
    const bad = e.key.length !== klen ? e.key : e.keyEnd !== undefined && e.keyEnd.length !== klen ? e.keyEnd : undefined;
    if (bad) throw new SetTypeError(setName(set), `element 0x${e.key.toString('hex')}`, `${keyType} (${klen} bytes)`, sizeName(bad.length));
    if (removing) continue;
    if (!set.data) {
      if (e.data || e.verdict) throw new SetTypeError(setName(set), describeElement(set, e), 'none (a set, not a map)', e.verdict ? 'a verdict' : sizeName(e.data!.length), 'data');
    } else if (set.data === 'verdict') {
      if (!e.verdict) throw new SetTypeError(setName(set), describeElement(set, e), 'verdict', e.data ? sizeName(e.data.length) : 'missing', 'data');
    } else if (!e.data || e.data.length !== dataLen) {
      throw new SetTypeError(setName(set), describeElement(set, e), `${typeText(set.data)} (${dataLen} bytes)`, e.data ? sizeName(e.data.length) : 'missing', 'data');
    }
  }
}

/** Network-header loads whose type is known: the address matches nft writes. */
const ADDRESS_LOADS: { offset: number; len: number; name: string; type: NftTypeName }[] = [
  { offset: 12, len: 4, name: 'ip saddr', type: 'ipv4_addr' },
  { offset: 16, len: 4, name: 'ip daddr', type: 'ipv4_addr' },
  { offset: 8, len: 16, name: 'ip6 saddr', type: 'ipv6_addr' },
  { offset: 24, len: 16, name: 'ip6 daddr', type: 'ipv6_addr' },
];
const ADDRESS_TYPES = new Set<NftTypeName>(['ipv4_addr', 'ipv6_addr']);

function addressLoad(offset: number, len: number): (typeof ADDRESS_LOADS)[number] | undefined {
  for (const a of ADDRESS_LOADS) if (a.offset === offset && a.len === len) return a;
  return undefined;
}

/** An address loaded into a register and then looked up in a set whose (first) key field is an
 * address of the other family. */
export function checkRuleLookups(exprs: Expr[], setOf: (name: string) => NftSet | undefined): void {
  // Most rules of a batch look nothing up: they need no register tracking at all.
  let lookups = false;
  for (let i = 0; i < exprs.length && !lookups; i++) lookups = exprs[i].type === 'lookup';
  if (!lookups) return;
  const loaded = new Map<number, (typeof ADDRESS_LOADS)[number]>();
  for (const e of exprs) {
    if (e.type === 'payload' && e.dreg !== undefined) {
      const known = e.base === 'network' ? addressLoad(e.offset, e.len) : undefined;
      if (known) loaded.set(e.dreg, known);
      else loaded.delete(e.dreg);
    } else if (e.type === 'lookup') {
      const src = loaded.get(e.sreg);
      const set = setOf(e.set);
      if (src && set && ADDRESS_TYPES.has(set.key[0]) && set.key[0] !== src.type) {
        throw new SetTypeError(setName(set), src.name, set.key.join(' . '), src.type);
      }
    } else if ('dreg' in e && typeof e.dreg === 'number') {
      loaded.delete(e.dreg);
    }
  }
}

/** The sets checkRuleLookups resolves for a rule: those it looks up, when it loads an address. */
export function setsResolvedByLookups(exprs: Expr[]): string[] {
  if (!exprs.some((e) => e.type === 'payload' && e.base === 'network' && addressLoad(e.offset, e.len))) return [];
  const names: string[] = [];
  for (const e of exprs) if (e.type === 'lookup') names.push(e.set);
  return names;
}
