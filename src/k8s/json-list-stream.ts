/** A JSON List (a LIST page as an API server sends it) split into its items while its bytes
 * arrive, each item parsed and handed on as soon as its last byte is in.
 *
 * json-list.ts splits a List already read whole. For a LIST page that meant holding the page's
 * bytes (3.6 MB for 500 Pods as a real API server returns them) and its chunks until the last
 * item was normalized: long enough to be promoted to V8's old generation, where they stayed as
 * garbage until a full GC. Measured by paged LIST at 5k Pods, 45 MB of array buffers were alive
 * at the peak (by WatchList, 3 MB). Here a chunk is read once and dropped; only the bytes of an
 * item cut by a chunk's end, and the List's envelope (everything but its items), are kept.
 *
 * The scan counts brackets outside strings (strings skipped with the native search); each item's
 * bytes are then parsed by JSON.parse itself, which checks every byte. What is not a plain List
 * (not an object, a truncated text, two `items` members, a member name of the List spelt with
 * escapes, an empty element) is an error: the items already handed on are the caller's to drop. */
import { CLOSE_BRACE, CLOSE_BRACKET, COLON, COMMA, isSpace, OPEN_BRACE, OPEN_BRACKET, QUOTE, BACKSLASH } from './json-list';

/** What the scan is inside of, outside strings. */
const enum Place {
  /** Before the List's opening brace. */
  Start,
  /** In the List object (depth 1), or deeper in one of its members other than `items`. */
  Envelope,
  /** In the `items` array (depth 2), or deeper in one of its elements. */
  Items,
  /** Past the List's closing brace: only whitespace may follow. */
  Done,
}

const ITEMS_KEY = Buffer.from('items');

export class JsonListStream {
  private place = Place.Start;
  /** Nesting depth: 1 in the List object, 2 in its items array. */
  private depth = 0;
  private inString = false;
  /** Backslashes ending the string's bytes so far (their parity says if a quote is escaped). */
  private backslashes = 0;
  /** At depth 1: a member's value is next (after its `:`), not its name. */
  private afterColon = false;
  /** The bytes of the member name being read at depth 1 (kept only while they may be `items`). */
  private key: number[] | undefined;
  private lastKey = '';
  private sawItems = false;
  /** The envelope's bytes (the List with its items array left empty). */
  private readonly envelope: Buffer[] = [];
  /** The current item's bytes from earlier chunks, and whether one has started. */
  private itemParts: Buffer[] = [];
  private inItem = false;
  /** An object or array item was handed on at its closing bracket: a `,` or `]` comes next. */
  private itemClosed = false;
  /** In the items array: a `,` was read since the last element (an element must follow). */
  private afterComma = false;
  private items = 0;
  /** The absolute offset of the current chunk's first byte. */
  private offset = 0;

  constructor(private readonly onItem: (item: unknown) => void) {}

  /** Scans one chunk, handing on each item that ends in it; throws on a text that is not a List
   * (SyntaxError naming the item or the offset). */
  push(chunk: Buffer): void {
    let envelopeFrom = this.place === Place.Items ? -1 : 0;
    let itemFrom = this.inItem ? 0 : -1;
    const length = chunk.length;
    for (let i = 0; i < length; i++) {
      if (this.inString) {
        i = this.stringEnd(chunk, i);
        if (i < 0) break;
        continue;
      }
      if (this.place === Place.Items && this.depth > 2) {
        i = this.skipInItem(chunk, i);
        if (i === length) break;
      }
      const c = chunk[i];
      if (isSpace(c)) continue;
      if (this.place === Place.Items && this.depth === 2) {
        // Between elements of the items array: a `,` or `]` ends the one before it.
        if (c === COMMA || c === CLOSE_BRACKET) {
          if (this.inItem) this.endItem(chunk, itemFrom, i);
          else if (!this.itemClosed && (c === COMMA || this.afterComma)) this.fail(i, `items[${this.items}] is empty`);
          this.itemClosed = false;
          itemFrom = -1;
          this.afterComma = c === COMMA;
          if (c === CLOSE_BRACKET) {
            this.depth = 1;
            this.place = Place.Envelope;
            envelopeFrom = i;
          }
          continue;
        }
        if (this.itemClosed) throw this.itemError(i, 'follows the item before it without a comma');
        if (!this.inItem) {
          this.inItem = true;
          itemFrom = i;
        }
      }
      if (this.place === Place.Start) {
        if (c !== OPEN_BRACE) this.fail(i, 'not a JSON object');
        this.place = Place.Envelope;
      } else if (this.place === Place.Done) this.fail(i, 'text after the List');
      switch (c) {
        case QUOTE:
          this.inString = true;
          this.backslashes = 0;
          if (this.depth === 1 && !this.afterColon) this.key = [];
          break;
        case OPEN_BRACE:
        case OPEN_BRACKET:
          this.depth++;
          if (this.depth === 2 && this.place === Place.Envelope && c === OPEN_BRACKET && this.afterColon && this.lastKey === 'items') {
            if (this.sawItems) this.fail(i, 'two `items` members');
            this.sawItems = true;
            this.place = Place.Items;
            this.afterComma = false;
            this.keepEnvelope(chunk, envelopeFrom, i + 1);
            envelopeFrom = -1;
          }
          break;
        case CLOSE_BRACE:
        case CLOSE_BRACKET:
          if (--this.depth === 0) this.place = Place.Done;
          else if (this.depth === 1 && this.place === Place.Items) throw this.itemError(i, 'closes more brackets than it opens');
          else if (this.depth === 2 && this.place === Place.Items && this.inItem) {
            // An object or array item is whole at its closing bracket: handed on now, not when the
            // next item's bytes arrive (a server may pause between items).
            this.endItem(chunk, itemFrom, i + 1);
            itemFrom = -1;
            this.itemClosed = true;
          }
          break;
        case COLON:
          if (this.depth === 1) this.afterColon = true;
          break;
        case COMMA:
          if (this.depth === 1) this.afterColon = false;
          break;
      }
    }
    if (this.inItem) this.itemParts.push(chunk.subarray(itemFrom < 0 ? 0 : itemFrom));
    if (envelopeFrom >= 0) this.keepEnvelope(chunk, envelopeFrom, length);
    this.offset += length;
  }

  /** The envelope (every member of the List but its items), once the text is complete. */
  end(): Record<string, unknown> {
    if (this.place !== Place.Done || this.inString) this.fail(0, 'the List is cut short');
    let envelope: unknown;
    try {
      envelope = JSON.parse(Buffer.concat(this.envelope).toString('utf8'));
    } catch (err) {
      throw new SyntaxError(`the List's envelope: ${(err as Error).message}`);
    }
    const items = (envelope as { items?: unknown }).items;
    if (!this.sawItems && items !== undefined && items !== null) throw new SyntaxError('the List\'s `items` is not an array');
    return envelope as Record<string, unknown>;
  }

  /** A copy: the chunk itself is not kept for the few envelope bytes in it. */
  private keepEnvelope(chunk: Buffer, from: number, to: number): void {
    if (to > from) this.envelope.push(Buffer.from(chunk.subarray(from, to)));
  }

  /** Deep in an item (most of a page's bytes), only quotes and brackets count: the offset of the
   * next quote, or of the bracket that closes the item's own, or the chunk's end. */
  private skipInItem(chunk: Buffer, from: number): number {
    let depth = this.depth;
    let i = from;
    const length = chunk.length;
    for (; i < length; i++) {
      const c = chunk[i];
      if (c < OPEN_BRACKET) {
        if (c === QUOTE) break;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) depth++;
      else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (depth === 3) break;
        depth--;
      }
    }
    this.depth = depth;
    return i;
  }

  /** In a string at chunk[i]: past its closing quote (the index of that quote), or -1 when it
   * goes on into the next chunk. Reads a depth-1 member name on the way. */
  private stringEnd(chunk: Buffer, from: number): number {
    let q = chunk.indexOf(QUOTE, from);
    for (;;) {
      const to = q < 0 ? chunk.length : q;
      let run = 0;
      while (to - run - 1 >= from && chunk[to - run - 1] === BACKSLASH) run++;
      // A run reaching back to where this scan started continues the one before it.
      if (to - run === from) run += this.backslashes;
      if (q < 0) {
        this.collectKey(chunk, from, chunk.length);
        this.backslashes = run;
        return -1;
      }
      if (run % 2 === 0) break;
      q = chunk.indexOf(QUOTE, q + 1);
    }
    this.collectKey(chunk, from, q);
    this.inString = false;
    if (this.key) {
      this.lastKey = Buffer.from(this.key).equals(ITEMS_KEY) ? 'items' : '';
      this.key = undefined;
    }
    return q;
  }

  /** A List member's name is compared as written: one spelt with escapes might be `items`, and
   * only the whole parse would know. */
  private collectKey(chunk: Buffer, from: number, to: number): void {
    const key = this.key;
    if (!key) return;
    for (let i = from; i < to; i++) {
      if (chunk[i] === BACKSLASH) this.fail(i, 'a member name of the List is written with escapes');
      // Longer than `items`: only its length matters.
      if (key.length <= ITEMS_KEY.length) key.push(chunk[i]);
    }
  }

  private endItem(chunk: Buffer, from: number, to: number): void {
    // JSON.parse takes the whitespace around an item.
    const parts = this.itemParts;
    const text = parts.length === 0 ? chunk.toString('utf8', from, to) : Buffer.concat([...parts, chunk.subarray(from, to)]).toString('utf8');
    this.itemParts = [];
    this.inItem = false;
    let item: unknown;
    try {
      item = JSON.parse(text);
    } catch (err) {
      throw this.itemError(to, (err as Error).message);
    }
    this.items++;
    this.onItem(item);
  }

  private itemError(at: number, why: string): SyntaxError {
    return new SyntaxError(`items[${this.items}] (before offset ${this.offset + at}): ${why}`);
  }

  private fail(at: number, why: string): never {
    throw new SyntaxError(`not a JSON List at offset ${this.offset + at}: ${why}`);
  }
}
