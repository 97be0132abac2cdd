/** The rule printer against its goldens (test/helpers/printer-goldens.ts): each expression kind,
 * and each shape the fold carries state across, prints as it did; every kind has one. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { formatElement, formatRuleBody } from '../../src/nft/format';
import { Expr } from '../../src/nft/types';
import { ipv4 } from '../../src/net/ip-bytes';
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

test('a link-layer address prints as nft parses it, in rules and in set elements (an address bound to its MAC)', () => {
  const mac = Buffer.from([0x02, 0, 0, 0, 0, 0x1f]);
  const key = Buffer.concat([ipv4('198.18.0.5'), mac, Buffer.alloc(2)]);
  assert.equal(formatElement({ key: ['ipv4_addr', 'ether_addr'] }, { key }), '198.18.0.5 . 02:00:00:00:00:1f');
});
