/** The JSON List splitter (src/k8s/json-list.ts): on every List it takes, the envelope and the
 * items parsed one by one equal JSON.parse of the whole text; everything else (truncated, too
 * deep, not a List, keys the whole parse would read differently) is left to the whole parse,
 * never thrown; an item's syntax error is named by its index. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { jsonListItems, splitJsonList } from '../../src/k8s/json-list';
import { mulberry32 } from '../helpers/prng';
import { randomString, randomValue } from '../helpers/random-json';

function parsedItems(text: string): { envelope: Record<string, unknown>; items: unknown[] } | undefined {
  const bytes = Buffer.from(text);
  const split = splitJsonList(bytes, 1000);
  return split && { envelope: split.envelope, items: [...jsonListItems(bytes, split.spans)] };
}

/** The split of a text's UTF-8 bytes. */
const split = (text: string, maxDepth = 1000) => splitJsonList(Buffer.from(text), maxDepth);

/** What JSON.parse of the whole text gives, items apart. */
function whole(text: string): { envelope: Record<string, unknown>; items: unknown[] } {
  const { items, ...rest } = JSON.parse(text) as { items: unknown[] };
  return { envelope: { ...rest, items: [] }, items };
}

describe('splitJsonList', () => {
  test('random Lists, compact and indented: the envelope and items equal the whole parse', () => {
    const rand = mulberry32(28);
    for (let n = 0; n < 300; n++) {
      const items = Array.from({ length: Math.floor(rand() * 6) }, () => randomValue(rand, 4));
      // Members of the List object are named without escapes (a name spelt with one is left to
      // the whole parse, below); names inside items are anything.
      const doc = { apiVersion: 'v1', [`m${n}`]: randomValue(rand, 3), kind: rand() < 0.5 ? 'List' : 'PodList', items, metadata: { continue: randomString(rand) } };
      for (const text of [JSON.stringify(doc), JSON.stringify(doc, null, rand() < 0.5 ? 2 : '\t'), ` \r\n${JSON.stringify(doc)}\n `]) {
        const got = parsedItems(text);
        assert.ok(got, text);
        assert.deepEqual(got, whole(text), text);
      }
    }
  });

  test('an empty List and one of scalars', () => {
    assert.deepEqual(parsedItems('{"kind":"List","items":[]}'), { envelope: { kind: 'List', items: [] }, items: [] });
    assert.deepEqual(parsedItems('{"items":[1,-2.5e3,true,null,"x"] ,"kind":"List"}')?.items, [1, -2.5e3, true, null, 'x']);
  });

  test('a text cut short anywhere is left to the whole parse', () => {
    const text = JSON.stringify({ kind: 'List', metadata: { resourceVersion: '7' }, items: [{ a: '"]}\\' }, [1, { b: [] }], 'x'] }, null, 1);
    for (let end = 0; end < text.length; end++) assert.equal(split(text.slice(0, end)), undefined, `cut at ${end}`);
  });

  test('nesting: up to maxDepth is split, one level more is left to the whole parse', () => {
    // The List object and its items array are two levels; an item of depth d makes 2 + d.
    const nested = (d: number) => `${'['.repeat(d)}${']'.repeat(d)}`;
    const text = (d: number) => `{"kind":"List","items":[{"a":1},${nested(d)}]}`;
    assert.ok(split(text(8), 10));
    assert.equal(split(text(9), 10), undefined);
    assert.equal(split(`{"kind":"List","m":{"a":${nested(9)}},"items":[]}`, 10), undefined);
    // A deep run with no end is refused once too deep, not scanned to the end first.
    assert.equal(split(`{"kind":"List","items":[${'['.repeat(1_000_000)}`), undefined);
  });

  test('a huge string of escaped quotes and backslashes', () => {
    const big = '\\"'.repeat(2_000_000) + '"}]';
    const text = JSON.stringify({ kind: 'List', items: [{ s: big }, 'tail'] });
    const got = parsedItems(text);
    assert.equal((got?.items[0] as { s: string }).s, big);
    assert.equal(got?.items[1], 'tail');
  });

  test('texts that are not a List it takes are left to the whole parse', () => {
    for (const text of [
      '',
      '   ',
      '[{"kind":"List","items":[]}]',
      '"List"',
      '{"kind":"Pod","items":[{"a":1}]}', // a kind not ending in List: an object with an items field
      '{"items":[{"a":1}]}', // no kind
      '{"kind":7,"items":[]}',
      '{"kind":"List","items":{"a":1}}', // items not an array
      '{"kind":"List"}', // no items
      '{"kind":"List","items":[1],"items":[2]}', // JSON.parse keeps the last
      '{"kind":"List","items":[1],"\\u0069tems":[2]}', // an escaped key the whole parse reads as items
      '{"kind":"List","items":[1]} x', // trailing text
      '{"kind":"List","items":[1]}}',
      '{"kind":"List" "items":[1]}',
      '{"kind":"List","items":[1 2]}',
      '{"kind":"List","items":[1,]}x',
      '{"kind":"List",items:[1]}',
      '{"kind":"List","items":[1],}',
      '{"kind":"Li\\u0073t","items":[1],"x":tru}', // the envelope itself does not parse
    ]) {
      assert.equal(split(text), undefined, text);
    }
  });

  test('an item that does not parse is named by its index, after the items before it', () => {
    const text = Buffer.from('{"kind":"List","items":[{"a":1},{"b":[2}],{"c":3}]}');
    const spans = splitJsonList(text, 1000)?.spans;
    assert.ok(spans, 'brackets are only counted by the split');
    const items = jsonListItems(text, spans);
    assert.deepEqual(items.next().value, { a: 1 });
    assert.throws(() => items.next(), (err: Error) => err instanceof SyntaxError && /^items\[1\] \(at offset 32\): /.test(err.message));
    assert.throws(() => JSON.parse(text.toString()), SyntaxError);
    const bad = Buffer.from('{"kind":"List","items":[tru, "x"]}');
    assert.throws(() => [...jsonListItems(bad, splitJsonList(bad, 1000)!.spans)], /^SyntaxError: items\[0\]/);
  });
});
