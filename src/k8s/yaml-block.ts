/** The block-style YAML that kubectl, `yaml.stringify` and most people write, read in one pass.
 *
 * Manifests are nearly always block mappings and sequences of plain or quoted one-line scalars,
 * with `{}` and `[]` for empty collections, comments on lines of their own and `---` between
 * documents. This parser takes exactly that subset, at a small multiple of JSON.parse (js-yaml,
 * character by character, is 6x; bench/manifest-parse.bench.ts), and gives up on anything
 * else: a tab, a non-ASCII or control character, flow collections that are not empty, block
 * scalars, multi-line or escaped scalars, anchors, aliases, tags, directives, complex or
 * duplicate keys, a trailing comment, and any indentation it does not expect. Giving up is
 * `undefined`: the caller parses the text with the full parser, so what is accepted and every
 * error stays the full parser's.
 *
 * For what it accepts the result is js-yaml's (core schema) to the value: plain scalars are
 * resolved by js-yaml's own core-schema types (null, bool, int, float), in js-yaml's order.
 *
 * Asked for only some fields of each object (FieldsOf), it builds only those. The rest (a Pod's
 * images, probes, env and status conditions; all of a kind the agent does not read) is parsed
 * all the same, with every check that decides what is in the subset, so what it accepts and
 * declines does not change, but no value of it is made (no strings copied, no scalars resolved,
 * no maps or lists): most of a Pod manifest is never read. */
import type { Schema } from 'js-yaml';

interface ScalarType {
  resolve(data: string): boolean;
  construct(data: string): unknown;
}

/** js-yaml's implicit types of a schema (null, bool, int, float for the core schema). */
export function implicitTypes(schema: Schema): readonly ScalarType[] | undefined {
  const types = (schema as unknown as { compiledImplicit?: ScalarType[] }).compiledImplicit;
  return Array.isArray(types) && types.every((t) => typeof t.resolve === 'function' && typeof t.construct === 'function') ? types : undefined;
}

/** The fields of a mapping to build: `true` builds a value whole; a tree builds only the keys it
 * names of a mapping, and applies alike to each entry of a sequence; a scalar is built as is. */
export interface FieldTree {
  readonly [key: string]: FieldTree | true;
}

/** The fields to build of an object of `kind` (a document's top-level mapping, or an entry of
 * its `items`: a List's objects), or undefined for all of it. Only the keys after `kind` are
 * chosen (kubectl and yaml.stringify write it first); `kind` itself is always built. */
export type FieldsOf = (kind: string) => FieldTree | undefined;

/** What to build of a value: all of it (true), the fields a tree names, nothing (SKIP: parsed
 * and checked only); ROOT: an object whose `kind` chooses; ITEMS: a list of such objects. */
const SKIP = null;
const ROOT: FieldTree = Object.freeze({});
const ITEMS: FieldTree = Object.freeze({});
type Want = FieldTree | true | typeof SKIP;

/** Keys of a skipped mapping kept in a list (checked for duplicates) up to this many, then in
 * a set: a hostile mapping of many keys must not make the check quadratic. */
const SKIPPED_KEYS_IN_LIST = 16;
const NO_KEYS: Readonly<Record<string, unknown>> = Object.freeze({});

/** Thrown inside the parser when the text leaves the subset; never escapes it. */
class Unsupported {}
const UNSUPPORTED = new Unsupported();

/** Anything but a printable ASCII character or a newline leaves the subset. */
const OUTSIDE_SUBSET = /[^\n\x20-\x7e]/;

/** Keys seen, in slots by a hash of their text: a cache (a key whose slot holds another only
 * costs a slice), of a fixed size, so a long-running agent's never grows. */
const KEY_SLOTS = 4096; // the top 12 bits of a 32-bit slot hash
const KEYS: (string | undefined)[] = new Array<string | undefined>(KEY_SLOTS).fill(undefined);
/** The string table's copy of `key`: a property name comes back internalized. */
function internalized(key: string): string {
  return Object.keys({ [key]: 0 })[0];
}
/** text[from, to) as a string that does not keep text alive. V8 makes a substring of 13 or more
 * characters a slice of its parent: a pod name kept by the cluster state would keep the whole
 * file's text. Flattening a one-character-longer concatenation copies just the value. */
function ownCopy(text: string, from: number, to: number): string {
  return to - from < 13 ? text.slice(from, to) : (text.slice(from, to) + ' ').slice(0, -1);
}
const DECIMAL = /^[0-9]+$/;
/** Characters of none of the core schema's int (0x, 0o, 0b, `_`) or float (`.`, e, sign)
 * forms; .inf and .nan cannot start with a digit. */
const NOT_NUMERIC = /[^0-9a-fA-F._xXoObB+-]/;

const SPACE = 0x20;
const DASH = 0x2d;
const COLON = 0x3a;
const HASH = 0x23;
const QUOTE = 0x22;
const APOSTROPHE = 0x27;

/** Plain scalars whose first character is none of these are strings under the core schema:
 * the null, bool, int and float forms all start with one (digits, sign, `.`, `~`, n, t, f). */
function mayResolve(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || c === 0x2b || c === DASH || c === 0x2e || c === 0x7e || c === 0x6e || c === 0x4e || c === 0x74 || c === 0x54 || c === 0x66 || c === 0x46;
}

/** Characters that may not start a plain scalar here (indicators, and the ones this subset
 * leaves to the full parser: `-`, `?`, `:` followed by a space are handled by the caller). */
function startsOutsidePlain(c: number): boolean {
  switch (c) {
    case 0x26: // & anchor
    case 0x2a: // * alias
    case 0x21: // ! tag
    case 0x7c: // | literal block
    case 0x3e: // > folded block
    case 0x25: // % directive
    case 0x40: // @ reserved
    case 0x60: // ` reserved
    case 0x2c: // , flow
    case 0x5b: // [ flow
    case 0x5d: // ]
    case 0x7b: // { flow
    case 0x7d: // }
    case HASH:
    case 0x3f: // ? complex key
    case COLON:
    case QUOTE:
    case APOSTROPHE:
      return true;
    default:
      return false;
  }
}

class BlockParser {
  /** The current line: where its content starts, its indentation (the column of its content)
   * and where it ends (its newline, or the end of the text). indent is -1 at the end. */
  private start = 0;
  private indent = 0;
  private end = 0;
  /** Where the line after the current one starts. */
  private next = 0;

  constructor(
    private readonly text: string,
    private readonly types: readonly ScalarType[],
    private readonly fieldsOf?: FieldsOf,
  ) {}

  documents(): unknown[] {
    const docs: unknown[] = [];
    const text = this.text;
    // js-yaml reads documents while more than the final newline is left.
    const length = text.length === 0 || text.charCodeAt(text.length - 1) === 0x0a ? text.length : text.length + 1;
    this.next = 0;
    // js-yaml skips the first line's leading spaces before it looks for a document: a text of
    // spaces alone has none.
    let lead = 0;
    while (text.charCodeAt(lead) === SPACE) lead++;
    if (lead >= length - 1) return docs;
    let position = 0;
    while (position < length - 1) {
      this.skipToContent(position);
      if (this.isSeparator()) this.skipToContent(this.next);
      if (this.indent < 0 || this.isSeparator()) docs.push(null);
      else {
        docs.push(this.block(this.indent, this.fieldsOf ? ROOT : true));
        if (this.indent >= 0 && !this.isSeparator()) throw UNSUPPORTED;
      }
      // At the end, or at the separator before the next document.
      position = this.indent < 0 ? length : this.start;
    }
    return docs;
  }

  /** Moves to the first line at or after `from` with content (not blank, not a comment). */
  private skipToContent(from: number): void {
    const text = this.text;
    let pos = from;
    while (pos < text.length) {
      let nl = text.indexOf('\n', pos);
      if (nl < 0) nl = text.length;
      let i = pos;
      while (i < nl && text.charCodeAt(i) === SPACE) i++;
      if (i < nl && text.charCodeAt(i) !== HASH) {
        this.start = i;
        this.indent = i - pos;
        this.end = nl;
        this.next = nl + 1;
        return;
      }
      pos = nl + 1;
    }
    this.start = this.end = this.next = text.length;
    this.indent = -1;
  }

  /** A `---` line (a `...` or `--- content` line leaves the subset). */
  private isSeparator(): boolean {
    if (this.indent !== 0) return false;
    const text = this.text;
    const s = this.start;
    const c = text.charCodeAt(s);
    if (c === 0x2e && text.startsWith('...', s)) throw UNSUPPORTED;
    if (c !== DASH || !text.startsWith('---', s)) return false;
    for (let i = s + 3; i < this.end; i++) if (text.charCodeAt(i) !== SPACE) throw UNSUPPORTED;
    return true;
  }

  /** True when the current line is a sequence entry (`-` then a space or the line's end). */
  private atEntry(): boolean {
    return this.text.charCodeAt(this.start) === DASH && (this.start + 1 === this.end || this.text.charCodeAt(this.start + 1) === SPACE);
  }

  /** The collection whose first line is the current one, at its indentation n. */
  private block(n: number, want: Want): unknown {
    return this.atEntry() ? this.sequence(n, want) : this.mapping(n, want);
  }

  /** The list, or undefined when want is SKIP. */
  private sequence(n: number, want: Want): unknown[] | undefined {
    const list: unknown[] | undefined = want === SKIP ? undefined : [];
    // A List's entries are objects whose kind chooses; a document that is a list is built whole.
    const entryWant = want === ITEMS ? ROOT : want === ROOT ? true : want;
    const text = this.text;
    while (this.indent === n && this.atEntry() && !this.isSeparator()) {
      let i = this.start + 1;
      while (i < this.end && text.charCodeAt(i) === SPACE) i++;
      if (i === this.end) {
        // `-` alone: the entry is the block below it, or null.
        this.skipToContent(this.next);
        // js-yaml files an entry of an outer sequence that follows a null entry under the inner
        // one (the `yaml` package does not): the full parser decides.
        if (this.indent >= 0 && this.indent < n && this.atEntry()) throw UNSUPPORTED;
        const entry = this.indent > n ? this.block(this.indent, entryWant) : null;
        list?.push(entry);
      } else if (text.charCodeAt(i) === DASH && (i + 1 === this.end || text.charCodeAt(i + 1) === SPACE)) {
        throw UNSUPPORTED; // `- - x`: a sequence in a sequence on one line
      } else if (this.keyEnd(i) >= 0) {
        // `- key: value`: a mapping whose keys stand in the column of this one.
        this.indent = i - (this.start - n);
        this.start = i;
        const entry = this.mapping(this.indent, entryWant);
        list?.push(entry);
      } else {
        const entry = this.inlineValue(i, list !== undefined);
        list?.push(entry);
        this.skipToContent(this.next);
      }
    }
    if (this.indent > n) throw UNSUPPORTED;
    return list;
  }

  /** The map (of the fields want names), or undefined when want is SKIP. */
  private mapping(n: number, want: Want): Record<string, unknown> | undefined {
    const map: Record<string, unknown> | undefined = want === SKIP ? undefined : {};
    /** Keys not built, kept only to refuse a duplicate (js-yaml does). */
    let skipped: string[] | Set<string> | undefined;
    const root = want === ROOT;
    // An object's fields are all built until its kind says which (ITEMS: not an object's).
    let fields: Want = root || want === ITEMS ? true : want;
    const text = this.text;
    while (this.indent === n && !this.isSeparator()) {
      if (this.atEntry()) throw UNSUPPORTED;
      const colon = this.mappingKeyEnd(this.start);
      if (colon < 0) throw UNSUPPORTED;
      const key = this.key(this.start, colon);
      // What to build of the value: an object's `items` may be a List's objects, its `kind`
      // chooses the rest.
      const sub: Want = fields === true ? (root && key === 'items' ? ITEMS : true) : fields === SKIP ? SKIP : root && key === 'kind' ? true : Object.hasOwn(fields, key) ? fields[key] : SKIP;
      // js-yaml refuses duplicate keys (a key Object.prototype has leaves the subset too). A key
      // before `kind` is built, the same key after it may not be: a skipped key is looked for in
      // both.
      // Without a map, NO_KEYS stands in for a fresh one: Object.prototype's keys are refused
      // alike, so skipping changes nothing of what is taken.
      if ((map ?? NO_KEYS)[key] !== undefined) throw UNSUPPORTED;
      if (sub === SKIP) {
        if (skipped === undefined) skipped = [key];
        else if (Array.isArray(skipped)) {
          if (skipped.includes(key)) throw UNSUPPORTED;
          skipped.push(key);
          if (skipped.length > SKIPPED_KEYS_IN_LIST) skipped = new Set(skipped);
        } else {
          if (skipped.has(key)) throw UNSUPPORTED;
          skipped.add(key);
        }
      }
      let value: unknown;
      let i = colon + 1;
      while (i < this.end && text.charCodeAt(i) === SPACE) i++;
      if (i === this.end) {
        // `key:` alone: the block below it (a sequence may stand in the key's column), or null.
        this.skipToContent(this.next);
        if (this.indent > n) value = this.block(this.indent, sub);
        else if (this.indent === n && this.atEntry() && !this.isSeparator()) value = this.sequence(n, sub);
        else value = null;
      } else {
        value = this.inlineValue(i, sub !== SKIP);
        this.skipToContent(this.next);
      }
      if (sub === SKIP) continue;
      map![key] = value;
      if (root && key === 'kind' && typeof value === 'string') fields = this.fieldsOf!(value) ?? true;
    }
    if (this.indent > n) throw UNSUPPORTED;
    return map;
  }

  /** Where the `:` ending the implicit key that starts at `from` is (a `:` followed by a space
   * or the line's end), or -1 when the line has none. */
  private keyEnd(from: number): number {
    const text = this.text;
    const c = text.charCodeAt(from);
    if (c === QUOTE || c === APOSTROPHE) {
      // A quoted key leaves the subset; a quoted scalar is not a key.
      const close = text.indexOf(String.fromCharCode(c), from + 1);
      if (close > 0 && close < this.end && text.charCodeAt(close + 1) === COLON) throw UNSUPPORTED;
      return -1;
    }
    // Within the line only: a search past it would cost a scan to the next colon in the text
    // for every `- value` entry, quadratic in a long list without colons.
    const end = this.end;
    for (let i = from; i < end; i++) if (text.charCodeAt(i) === COLON && (i + 1 === end || text.charCodeAt(i + 1) === SPACE)) return i;
    return -1;
  }

  /** keyEnd of a line that must hold a key (a mapping's): the colons are found by the native
   * search. One past the line's end means the line has no key, and the text leaves the subset,
   * so the search past it happens once. */
  private mappingKeyEnd(from: number): number {
    const text = this.text;
    const c = text.charCodeAt(from);
    if (c === QUOTE || c === APOSTROPHE) return this.keyEnd(from);
    const end = this.end;
    for (let i = text.indexOf(':', from); i >= 0 && i < end; i = text.indexOf(':', i + 1)) if (i + 1 === end || text.charCodeAt(i + 1) === SPACE) return i;
    return -1;
  }

  /** The plain key from `from` to `colon`, when it is a string as written. Manifests repeat a
   * small vocabulary of keys: a key seen before is taken from KEYS, already internalized, so
   * storing it is V8's fast path. Its slot is chosen by its length and three of its characters,
   * not a hash of all: each character is then visited once, to compare. */
  private key(from: number, colon: number): string {
    const text = this.text;
    const length = colon - from;
    const slot = (Math.imul(length, 0x9e3779b1) ^ Math.imul(text.charCodeAt(from), 0x85ebca6b) ^ Math.imul(text.charCodeAt(from + (length >> 1)), 0xc2b2ae35) ^ text.charCodeAt(colon - 1)) >>> 20;
    const known = KEYS[slot];
    if (known !== undefined && known.length === colon - from) {
      // Compared a character at a time: startsWith at an offset was the parser's costliest line.
      let i = 0;
      while (i < known.length && known.charCodeAt(i) === text.charCodeAt(from + i)) i++;
      if (i === known.length) return known;
    }
    if (colon === from || startsOutsidePlain(text.charCodeAt(from)) || text.charCodeAt(colon - 1) === SPACE) throw UNSUPPORTED;
    const key = text.slice(from, colon);
    if (key.includes(' #') || key === '-' || key === '__proto__' || key === '<<') throw UNSUPPORTED;
    if (mayResolve(key.charCodeAt(0)) && this.resolve(key) !== key) throw UNSUPPORTED;
    const internal = internalized(key);
    KEYS[slot] = internal;
    return internal;
  }

  /** The one-line scalar (or `{}` / `[]`) from `from` to the end of the current line; when not
   * `build`, only checked (what is returned is not the value). */
  private inlineValue(from: number, build: boolean): unknown {
    const text = this.text;
    let end = this.end;
    while (text.charCodeAt(end - 1) === SPACE) end--;
    const c = text.charCodeAt(from);
    if (c === QUOTE) {
      const close = text.indexOf('"', from + 1);
      if (close !== end - 1) throw UNSUPPORTED;
      const value = build ? ownCopy(text, from + 1, close) : text.slice(from + 1, close);
      if (value.includes('\\')) throw UNSUPPORTED;
      return value;
    }
    if (c === APOSTROPHE) {
      // Inside, a quote is written twice; the first lone one closes the scalar, at the end.
      let close = text.indexOf("'", from + 1);
      while (close >= 0 && close < end - 1 && text.charCodeAt(close + 1) === APOSTROPHE) close = text.indexOf("'", close + 2);
      if (close !== end - 1) throw UNSUPPORTED;
      if (!build) return undefined;
      const inner = ownCopy(text, from + 1, close);
      return inner.includes("'") ? inner.replace(/''/g, "'") : inner;
    }
    if (c === 0x7b || c === 0x5b) {
      if (end - from === 2 && text.charCodeAt(from + 1) === c + 2) return build ? (c === 0x7b ? {} : []) : undefined;
      throw UNSUPPORTED;
    }
    if (startsOutsidePlain(c) || (c === DASH && (from + 1 === end || text.charCodeAt(from + 1) === SPACE))) throw UNSUPPORTED;
    const value = build ? ownCopy(text, from, end) : text.slice(from, end);
    // `: ` would make it a key, ` #` a comment, a final `:` a key too.
    if ((value.includes(' ') && (value.includes(': ') || value.includes(' #'))) || text.charCodeAt(end - 1) === COLON) throw UNSUPPORTED;
    return build && mayResolve(c) ? this.resolve(value) : value;
  }

  private resolve(plain: string): unknown {
    const c = plain.charCodeAt(0);
    if (c >= 0x30 && c <= 0x39) {
      // Starting with a digit: a decimal integer js-yaml reads as parseInt does (no leading zero,
      // exact in a double), or a string when a character no int or float form has is in it.
      if (c !== 0x30 && plain.length <= 15 && DECIMAL.test(plain)) return Number(plain);
      if (NOT_NUMERIC.test(plain)) return plain;
    }
    for (const type of this.types) if (type.resolve(plain)) return type.construct(plain);
    return plain;
  }
}

/** The documents of `text` (null for an empty one) as js-yaml with `schema` gives them (with
 * fieldsOf, only the fields it names of each object), or undefined when the text is not in the
 * subset this parser takes. Never throws. */
export function blockYamlDocuments(text: string, types: readonly ScalarType[], fieldsOf?: FieldsOf): unknown[] | undefined {
  if (OUTSIDE_SUBSET.test(text)) return undefined;
  try {
    return new BlockParser(text, types, fieldsOf).documents();
  } catch {
    // UNSUPPORTED, or a stack overflow on absurd nesting: the full parser decides.
    return undefined;
  }
}
