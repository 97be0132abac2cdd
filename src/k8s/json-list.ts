/** A JSON `kind: *List` document (a manifests file, a LIST page) parsed one item at a time, from
 * its bytes.
 *
 * `JSON.parse` of a whole List builds every item's raw object before the first is read: at 5k
 * Services x 50 endpoints (a 22 MB List) that is ~100 MB of objects alive together, promoted to
 * V8's old generation and left there as garbage until its next full GC, which set the agent's peak
 * RSS. Split first, each item's raw object lives only until it is normalized, in the young
 * generation. Each item is decoded from the bytes on its own: the whole text never becomes one
 * string (a 3.6 MB LIST page of Pods as an API server sends them would sit in V8's large-object
 * space until a full GC, forty of them at 20k Pods).
 *
 * The split is one pass over the bytes that finds the top-level object's members and the `items`
 * array's elements, skipping strings with the native search; each element is then parsed by
 * `JSON.parse` itself, so every byte is still checked by it. Anything the pass does not take as a
 * plain List (not an object, no `items` array or two of them, a `kind` not ending in `List`,
 * nesting deeper than maxDepth, a truncated text) gives undefined, and the caller parses the text
 * whole, which reports its errors as before. */

/** A List split into its envelope (every member but `items`, parsed) and its items' places. */
export interface JsonListSplit {
  envelope: Record<string, unknown>;
  /** Start and end byte offsets of each item, in pairs. */
  spans: number[];
}

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const COMMA = 0x2c;
export const COLON = 0x3a;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;

/** The List split of UTF-8 `text`, or undefined when it is not one the pass takes (see above).
 * Structural characters are ASCII, never part of a multi-byte character: byte offsets serve. */
export function splitJsonList(text: Buffer, maxDepth: number): JsonListSplit | undefined {
  let i = skipSpace(text, 0);
  if (text[i] !== OPEN_BRACE) return undefined;
  i = skipSpace(text, i + 1);
  let itemsAt = -1;
  let itemsEnd = -1;
  const spans: number[] = [];
  if (text[i] !== CLOSE_BRACE) {
    for (;;) {
      if (text[i] !== QUOTE) return undefined;
      const keyEnd = stringEnd(text, i);
      if (keyEnd < 0) return undefined;
      // A key spelt with escapes may be `items` too: the whole parse decides.
      if (hasBackslash(text, i, keyEnd)) return undefined;
      const isItems = keyEnd - i === 7 && text.toString('latin1', i, keyEnd) === '"items"';
      i = skipSpace(text, keyEnd);
      if (text[i] !== COLON) return undefined;
      i = skipSpace(text, i + 1);
      if (isItems && text[i] === OPEN_BRACKET) {
        // A second `items` member: JSON.parse keeps the last one; the whole parse decides.
        if (itemsAt >= 0) return undefined;
        itemsAt = i;
        i = itemElements(text, i, maxDepth, spans);
        itemsEnd = i;
      } else {
        i = valueEnd(text, i, 1, maxDepth);
      }
      if (i < 0) return undefined;
      i = skipSpace(text, i);
      const c = text[i];
      if (c === CLOSE_BRACE) break;
      if (c !== COMMA) return undefined;
      i = skipSpace(text, i + 1);
    }
  }
  if (itemsAt < 0 || skipSpace(text, i + 1) !== text.length) return undefined;
  let envelope: unknown;
  try {
    envelope = JSON.parse(`${text.toString('utf8', 0, itemsAt)}[]${text.toString('utf8', itemsEnd)}`);
  } catch {
    return undefined;
  }
  const kind = (envelope as { kind?: unknown }).kind;
  if (typeof kind !== 'string' || !kind.endsWith('List')) return undefined;
  return { envelope: envelope as Record<string, unknown>, spans };
}

/** Each item of a split List, decoded and parsed when reached; a syntax error names the item. */
export function* jsonListItems(text: Buffer, spans: readonly number[]): Generator<unknown> {
  for (let k = 0; k < spans.length; k += 2) {
    try {
      yield JSON.parse(text.toString('utf8', spans[k], spans[k + 1]));
    } catch (err) {
      if (!(err instanceof SyntaxError)) throw err;
      throw new SyntaxError(`items[${k / 2}] (at offset ${spans[k]}): ${err.message}`);
    }
  }
}

/** The elements of the array opening at `at` (its items, at depth 2) into spans; the offset past
 * its `]`, or -1. */
function itemElements(text: Buffer, at: number, maxDepth: number, spans: number[]): number {
  let i = skipSpace(text, at + 1);
  if (text[i] === CLOSE_BRACKET) return i + 1;
  for (;;) {
    const end = valueEnd(text, i, 2, maxDepth);
    if (end < 0) return -1;
    spans.push(i, end);
    i = skipSpace(text, end);
    const c = text[i];
    if (c === CLOSE_BRACKET) return i + 1;
    if (c !== COMMA) return -1;
    i = skipSpace(text, i + 1);
  }
}

/** The offset past the value starting at `at`, found at nesting `depth`; -1 when it is cut short
 * or nests deeper than maxDepth. Brackets are only counted: JSON.parse of the value checks that
 * they match. */
function valueEnd(text: Buffer, at: number, depth: number, maxDepth: number): number {
  const first = text[at];
  if (first === QUOTE) return stringEnd(text, at);
  if (first !== OPEN_BRACE && first !== OPEN_BRACKET) return scalarEnd(text, at);
  if (depth + 1 > maxDepth) return -1;
  let open = 1;
  const length = text.length;
  for (let i = at + 1; i < length; i++) {
    const c = text[i];
    // Most characters (spaces, digits, letters of true/false/null, `:` and `,`) are none of the
    // four brackets nor a quote: the first comparison passes those below `[`.
    if (c < OPEN_BRACKET) {
      if (c !== QUOTE) continue;
      i = stringEnd(text, i) - 1;
      if (i < 0) return -1;
    } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
      if (depth + ++open > maxDepth) return -1;
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      if (--open === 0) return i + 1;
    }
  }
  return -1;
}

/** The offset past the string whose opening quote is at `at` (the first quote not escaped by an
 * odd run of backslashes, found by the native search), or -1. */
function stringEnd(text: Buffer, at: number): number {
  let i = at;
  for (;;) {
    i = text.indexOf(QUOTE, i + 1);
    if (i < 0) return -1;
    let b = i - 1;
    while (text[b] === BACKSLASH) b--;
    if ((i - b) % 2 === 1) return i + 1;
  }
}

/** The offset past a number, true, false or null (or whatever stands there: JSON.parse judges it). */
function scalarEnd(text: Buffer, at: number): number {
  let i = at;
  const length = text.length;
  while (i < length) {
    const c = text[i];
    if (c === COMMA || c === CLOSE_BRACKET || c === CLOSE_BRACE || isSpace(c)) break;
    i++;
  }
  return i > at ? i : -1;
}

function hasBackslash(text: Buffer, from: number, to: number): boolean {
  for (let i = from; i < to; i++) if (text[i] === BACKSLASH) return true;
  return false;
}

function skipSpace(text: Buffer, at: number): number {
  let i = at;
  while (isSpace(text[i])) i++;
  return i;
}

/** JSON's four whitespace characters. */
export function isSpace(c: number): boolean {
  return c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09;
}
