/** The streaming List splitter (src/k8s/json-list-stream.ts) that reads LIST pages: fed in chunks
 * cut anywhere (inside strings, between a backslash and the quote it escapes, inside a multi-byte
 * character), its items and envelope equal JSON.parse of the whole text; every text that is not
 * a plain List (truncated, not an object, deep nesting cut short, a syntax error in an item, two
 * `items`) throws a SyntaxError saying where, never hangs, and hands over no item past the fault. */
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { JsonListStream } from '../../src/k8s/json-list-stream';
import { mulberry32 } from '../helpers/prng';
import { randomString, randomValue } from '../helpers/random-json';

/** The text's UTF-8 bytes fed in chunks of random sizes (1 byte up to `maxChunk`). */
function streamed(text: string, rand: () => number, maxChunk: number): { envelope: Record<string, unknown>; items: unknown[] } {
  const items: unknown[] = [];
  const stream = new JsonListStream((item) => items.push(item));
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.length; ) {
    const n = 1 + Math.floor(rand() * maxChunk);
    stream.push(bytes.subarray(at, at + n));
    at += n;
  }
  return { envelope: stream.end(), items };
}

/** What JSON.parse of the whole text gives, items apart (the envelope keeps an empty array). */
function whole(text: string): { envelope: Record<string, unknown>; items: unknown[] } {
  const { items, ...rest } = JSON.parse(text) as { items: unknown[] };
  return { envelope: { ...rest, items: [] }, items };
}

describe('JsonListStream', () => {
  test('random Lists in random chunks: the envelope and items equal the whole parse', () => {
    const rand = mulberry32(2810);
    for (let n = 0; n < 400; n++) {
      const items = Array.from({ length: Math.floor(rand() * 6) }, () => randomValue(rand, 4));
      const doc = { apiVersion: 'v1', [`m${n}`]: randomValue(rand, 3), kind: 'PodList', metadata: { continue: randomString(rand) }, items, after: randomValue(rand, 2) };
      for (const text of [JSON.stringify(doc), JSON.stringify(doc, null, rand() < 0.5 ? 2 : '\t'), ` \r\n${JSON.stringify(doc)}\n `]) {
        for (const maxChunk of [1, 3, 17, 1 << 20]) assert.deepEqual(streamed(text, rand, maxChunk), whole(text), text);
      }
    }
  });

  test('a string of backslashes cut at every byte: escaped and closing quotes are told apart', () => {
    const rand = mulberry32(7);
    const item = { metadata: { name: 'a\\\\\\"b\\', labels: { '\\': '"\\"', 'é\u2028': '\\\\' } } };
    const text = JSON.stringify({ kind: 'List', items: [item, item, 'x\\"', 7, null] });
    for (let cut = 1; cut < Buffer.byteLength(text); cut++) {
      const items: unknown[] = [];
      const stream = new JsonListStream((i) => items.push(i));
      const bytes = Buffer.from(text);
      stream.push(bytes.subarray(0, cut));
      stream.push(bytes.subarray(cut));
      assert.deepEqual({ envelope: stream.end(), items }, whole(text), `cut at ${cut}`);
    }
    assert.deepEqual(streamed(text, rand, 2), whole(text));
  });

  test('empty and missing items; huge strings', () => {
    const rand = mulberry32(9);
    for (const text of ['{"kind":"PodList","items":[]}', '{"kind":"PodList","items":[ ]}', '{"kind":"PodList","metadata":{"items":[1]}}', '{"items":null}']) {
      const got = streamed(text, rand, 4);
      assert.deepEqual(got.items, []);
    }
    const huge = 'x'.repeat(3 << 20);
    const text = JSON.stringify({ kind: 'PodList', metadata: { continue: huge }, items: [{ a: huge }, { b: `"${huge}\\` }] });
    assert.deepEqual(streamed(text, rand, 1 << 16), whole(text));
  });

  test('an object item is handed on at its closing bracket, before the bytes after it arrive', () => {
    const items: unknown[] = [];
    const stream = new JsonListStream((i) => items.push(i));
    stream.push(Buffer.from('{"kind":"PodList","items":[{"a":1},{"a":[2]}'));
    assert.deepEqual(items, [{ a: 1 }, { a: [2] }]);
    stream.push(Buffer.from(' ,  [3]]}'));
    assert.deepEqual(items, [{ a: 1 }, { a: [2] }, [3]]);
    assert.deepEqual(stream.end(), { kind: 'PodList', items: [] });
  });

  test('hostile texts throw a SyntaxError saying where; items before the fault only', () => {
    const rand = mulberry32(11);
    const cases: [string, RegExp, number][] = [
      ['', /cut short/, 0],
      ['[1,2]', /offset 0: not a JSON object/, 0],
      ['"PodList"', /not a JSON object/, 0],
      // An object item is whole at its closing bracket: both are handed on before the cut.
      ['{"kind":"PodList","items":[{"a":1},{"a":2}', /cut short/, 2],
      ['{"kind":"PodList","items":[{"a":1} {"a":2}]}', /items\[1\] \(before offset \d+\): follows the item before it without a comma/, 1],
      ['{"kind":"PodList","items":[{"a":"unterminated}]}', /cut short/, 0],
      ['{"kind":"PodList","items":[{"a":1},{"a":2]},{"a":3}]}', /^SyntaxError: items\[1\]/, 1],
      ['{"kind":"PodList","items":[{"a":1},,{"a":3}]}', /items\[1\] is empty/, 1],
      ['{"kind":"PodList","items":[{"a":1},]}', /items\[1\] is empty/, 1],
      ['{"kind":"PodList","items":[],"items":[{"a":1}]}', /two `items` members/, 0],
      ['{"kind":"PodList","it\\u0065ms":[{"a":1}]}', /written with escapes/, 0],
      ['{"kind":"PodList","items":[]}x', /text after the List/, 0],
      ['{"kind":"PodList","items":[]}}', /text after the List/, 0],
      ['{"kind":PodList,"items":[{"a":1}]}', /envelope/, 1],
      ['{"kind":"PodList","items":"[1]"}', /not an array/, 0],
      [`{"kind":"PodList","items":[${'['.repeat(100_000)}`, /cut short/, 0],
      [`{"kind":"PodList","items":[${'['.repeat(100_000)}${']'.repeat(100_000)}]}`, /^(?!)/, 1],
    ];
    for (const [text, error, before] of cases) {
      for (const maxChunk of [1, 5, 1 << 20]) {
        const items: unknown[] = [];
        const run = () => {
          const stream = new JsonListStream((i) => items.push(i));
          const bytes = Buffer.from(text);
          for (let at = 0; at < bytes.length; ) {
            const n = 1 + Math.floor(rand() * maxChunk);
            stream.push(bytes.subarray(at, at + n));
            at += n;
          }
          return stream.end();
        };
        if (error.source === '^(?!)') assert.doesNotThrow(run, text.slice(0, 60));
        else assert.throws(run, (err: unknown) => err instanceof SyntaxError && error.test(String(err)), `${text.slice(0, 60)} in chunks of ${maxChunk}`);
        assert.equal(items.length, before, text.slice(0, 60));
      }
    }
  });

  test('every prefix of a List either throws or is whole: a truncated page never passes', () => {
    const text = JSON.stringify({ kind: 'PodList', metadata: { resourceVersion: '5' }, items: [{ a: '\\"' }, [1, { b: 'é' }], 'q'] });
    for (let n = 0; n < Buffer.byteLength(text) - 1; n++) {
      const stream = new JsonListStream(() => undefined);
      assert.throws(() => {
        stream.push(Buffer.from(text).subarray(0, n));
        stream.end();
      }, SyntaxError, `prefix of ${n} bytes`);
    }
  });
});
