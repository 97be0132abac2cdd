/** The labels nfkube writes into rule comments, and reads back from them: one codec for the
 * renderer (which writes them) and the metrics bridge (which attributes kernel counters by them).
 *
 *   accept  `<ns>/<policy> <direction>[<entry>]`    a policy chain's counted accept
 *   jump    `<ns>/<policy>`                          a combination chain's jump to a policy chain
 *   deny    `default deny <direction>`               a combination chain's default deny
 *   audit   `audit <direction>`                      its audit accepts
 * (Denies and audit accepts are counted per pod address in the counter sets, src/policy/render/tail.ts.)
 *
 * Names come from cluster objects, so a label is made safe before it is written:
 * - sanitised: control characters (the kernel keeps a comment only up to its first NUL), lone
 *   surrogates (UTF-8 cannot carry them), whitespace (the separator) and `"` `\` (nft's quoting)
 *   become `?`, so what is read back equals what was written;
 * - bounded in bytes: nft refuses to parse a comment over 128 bytes (NFTNL_UDATA_COMMENT_MAXLEN),
 *   the kernel stores at most 255. Only the name is cut, at a code point boundary, and ends in
 *   `…` and 8 hex digits of a hash of the whole name, so the label still parses, and two long
 *   names that share a beginning still label different rows. */
import { hash } from 'node:crypto';
import type { Direction } from '../engine/ir';


export type RuleLabel =
  | { kind: 'accept'; policy: string; direction: Direction; entry: number }
  | { kind: 'jump'; policy: string }
  | { kind: 'deny'; direction: Direction }
  /** Audit mode's accept before the deny: what it let through. */
  | { kind: 'audit'; direction: Direction };

/** The longest comment nft itself will parse back (libnftnl NFTNL_UDATA_COMMENT_MAXLEN). */
export const LABEL_MAX_BYTES = 128;

const UNSAFE = /[\p{Cc}\p{Cs}\s"\\]/gu;
const TRUNCATED = '…';

/** `text` with every character that would not survive a round trip through the kernel, or that
 * would break a label's or nft's syntax, replaced by `?`. */
export function sanitizeLabelText(text: string): string {
  // Object names are printable ASCII nearly always: then there is nothing to replace.
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c <= 0x20 || c >= 0x7f || c === 0x22 || c === 0x5c) return text.replace(UNSAFE, '?');
  }
  return text;
}

export function utf8Length(text: string): number {
  return Buffer.byteLength(text, 'utf8');
}

/** The longest prefix of `text` that is at most `maxBytes` bytes of UTF-8 and ends on a code
 * point boundary (a surrogate pair is never split). `text` must be well-formed. */
export function truncateUtf8(text: string, maxBytes: number): string {
  if (utf8Length(text) <= maxBytes) return text;
  let bytes = 0;
  let end = 0;
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    const n = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    if (bytes + n > maxBytes) break;
    bytes += n;
    end += ch.length;
  }
  return text.slice(0, end);
}

/** A sanitised name that fits `budget` bytes: cut with a marker and a hash when it does not. */
function boundedName(name: string, budget: number): string {
  const safe = sanitizeLabelText(name);
  if (utf8Length(safe) <= budget) return safe;
  const tail = TRUNCATED + hash('sha1', name, 'hex').slice(0, 8);
  return truncateUtf8(safe, Math.max(0, budget - utf8Length(tail))) + tail;
}

const DENY_PREFIX = 'default deny ';
const AUDIT_PREFIX = 'audit ';

export function formatLabel(label: RuleLabel): string {
  switch (label.kind) {
    case 'accept': {
      const suffix = ` ${label.direction}[${label.entry}]`;
      return boundedName(label.policy, LABEL_MAX_BYTES - suffix.length) + suffix;
    }
    case 'jump':
      return boundedName(label.policy, LABEL_MAX_BYTES);
    case 'deny':
    case 'audit':
      return `${label.kind === 'deny' ? DENY_PREFIX : AUDIT_PREFIX}${label.direction}`;
  }
}

const ACCEPT = /^(\S+) (ingress|egress)\[(\d+)\]$/u;
const DENY = /^default deny (ingress|egress)$/u;
const AUDIT = /^audit (ingress|egress)$/u;
const JUMP = /^\S*\/\S*$/u;

/** The label a comment carries, or undefined when the comment is not one nfkube writes. Names
 * come back as written: sanitised, and truncated when they were long. */
export function parseLabel(comment: string): RuleLabel | undefined {
  const d = DENY.exec(comment);
  if (d) return { kind: 'deny', direction: d[1] as Direction };
  const au = AUDIT.exec(comment);
  if (au) return { kind: 'audit', direction: au[1] as Direction };
  const a = ACCEPT.exec(comment);
  if (a) return { kind: 'accept', policy: a[1], direction: a[2] as Direction, entry: Number(a[3]) };
  if (JUMP.test(comment)) return { kind: 'jump', policy: comment };
  return undefined;
}
