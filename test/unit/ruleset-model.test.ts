/** RulesetModel's element identity: elementKey spells a key (and a range end) in lower-case hex,
 * whatever its length, and one range whose end is its start is the same element as its start. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { elementKey } from '../../src/ruleset/model';
import { mulberry32 } from '../helpers/prng';

test('elementKey is the hex of the key, and of the range end when it differs', () => {
  const rand = mulberry32(13);
  const bytes = (n: number) => Buffer.from(Array.from({ length: n }, () => Math.floor(rand() * 256)));
  for (let len = 1; len <= 40; len++) {
    for (let k = 0; k < 20; k++) {
      const key = bytes(len);
      assert.equal(elementKey({ key }), key.toString('hex'));
      const end = bytes(len);
      const expected = end.equals(key) ? key.toString('hex') : `${key.toString('hex')}-${end.toString('hex')}`;
      assert.equal(elementKey({ key, keyEnd: end }), expected);
      assert.equal(elementKey({ key, keyEnd: Buffer.from(key) }), key.toString('hex'));
    }
  }
  assert.equal(elementKey({ key: Buffer.from([0, 0x0f, 0xf0, 0xff]) }), '000ff0ff');
});
