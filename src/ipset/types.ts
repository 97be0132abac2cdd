/** The ipset object model: plain data shared by the codec, the client and the reconciler. */

export const SET_TYPES = [
  'hash:ip',
  'hash:net',
  'hash:ip,port',
  'hash:net,port',
  'hash:ip,port,ip',
  'hash:ip,port,net',
  'list:set',
  'bitmap:port',
] as const;
export type SetType = (typeof SET_TYPES)[number];

/** `inet`/`inet6` for hash types; `unspec` for list:set and bitmap:port, which have no family. */
export type SetFamily = 'inet' | 'inet6' | 'unspec';

export function isSetType(s: string): s is SetType {
  return (SET_TYPES as readonly string[]).includes(s);
}

export function isHashType(type: SetType): boolean {
  return type.startsWith('hash:');
}

/** The types whose members may carry `nomatch`: those with a network (cidr) part, as in the
 * kernel's hash:net* types and the ipset tool, which refuses the flag for every other type. */
export function supportsNomatch(type: SetType): boolean {
  return type === 'hash:net' || type === 'hash:net,port' || type === 'hash:ip,port,net';
}

/** Creation options. `hashsize` is a hint the kernel rounds and grows, so it is not compared. */
export interface SetOptions {
  hashsize?: number;
  maxelem?: number;
  /** Default timeout in seconds for members; enables per-member timeouts. */
  timeout?: number;
  counters?: boolean;
  comment?: boolean;
  /** bitmap:port only (required there). */
  range?: { from: number; to: number };
  /** list:set only. */
  size?: number;
}

/** What the kernel adds to a set's header when it is read back. */
export interface SetHeaderInfo {
  revision: number;
  references: number;
  elements: number;
  memsize: number;
  bucketsize?: number;
  initval?: number;
}

/** One member: its canonical text (what `ipset save` prints for it, which is also how members
 * compare; see element.ts) and its optional extensions. */
export interface Element {
  key: string;
  timeout?: number;
  comment?: string;
  packets?: bigint;
  bytes?: bigint;
  /** IPSET_FLAG_NOMATCH: the member is an exception (a lookup that lands on it does not match);
   * only the types with a network part take it (supportsNomatch). */
  nomatch?: boolean;
}

/** A set as read from the kernel. */
export interface IpsetSet {
  name: string;
  type: SetType;
  family: SetFamily;
  options: SetOptions;
  header: SetHeaderInfo;
  members: Element[];
}

/** A member as callers give it: the `ipset save` text, or that text with extensions. */
export type MemberInput = string | { elem: string; timeout?: number; comment?: string; packets?: number | bigint; bytes?: number | bigint; nomatch?: boolean };

/** One desired set for the reconciler and the restore command. */
export interface DesiredSet {
  type: SetType;
  /** Default `inet` for hash types; ignored for list:set and bitmap:port. */
  family?: 'inet' | 'inet6';
  options?: SetOptions;
  members: MemberInput[];
}
