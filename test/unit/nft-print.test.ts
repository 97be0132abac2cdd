/** The rule printer against its goldens (test/helpers/printer-goldens.ts): each expression kind,
 * and each shape the fold carries state across, prints as it did; every kind has one. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatRuleBody } from '../../src/nft/format';
import { Expr } from '../../src/nft/types';
import { PRINTER_GOLDENS } from '../helpers/printer-goldens';

for (const g of PRINTER_GOLDENS) {
  test(`${g.kind}: ${g.text}`, () => {
    assert.equal(formatRuleBody(g.exprs), g.text);
  });
}

/** Every kind of expression, opaque included: a kind added to Expr does not compile here. */
const KINDS: { [K in Expr['type']]: true } = {
  payload: true, meta: true, cmp: true, bitwise: true, range: true, lookup: true, immediate: true, counter: true, ct: true, limit: true,
  log: true, reject: true, nat: true, numgen: true, byteorder: true, hash: true, objref: true, masq: true, fib: true, dynset: true, opaque: true,
};

test('every expression kind has a golden', () => {
  assert.deepEqual([...new Set(PRINTER_GOLDENS.map((g) => g.kind))].sort(), Object.keys(KINDS).sort());
});
