import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as C from '../../src/nft/constants';
import { canonicalExprs, sameRuleBody } from '../../src/nft/canonical';
import { Expr } from '../../src/nft/types';

const l4proto: Expr = { type: 'meta', key: C.NFT_META_L4PROTO, dreg: C.NFT_REG_1 };
const lookup: Expr = { type: 'lookup', set: 'ports', sreg: C.NFT_REG_1 };
const byteorder = (len: number, size: number, dreg: number = C.NFT_REG_1): Expr => ({ type: 'byteorder', sreg: C.NFT_REG_1, dreg, op: 'hton', len, size });

test('an in-place byteorder that converts no whole word (nft 1.0.6 after meta l4proto) compares as absent', () => {
  assert.ok(sameRuleBody({ exprs: [l4proto, byteorder(1, 2), lookup] }, { exprs: [l4proto, lookup] }));
  assert.deepEqual(canonicalExprs([l4proto, byteorder(1, 2), lookup]), canonicalExprs([l4proto, lookup]));
});

test('a byteorder that converts something, or moves the value to another register, is kept', () => {
  assert.ok(!sameRuleBody({ exprs: [l4proto, byteorder(2, 2), lookup] }, { exprs: [l4proto, lookup] }));
  assert.ok(!sameRuleBody({ exprs: [l4proto, byteorder(4, 4), lookup] }, { exprs: [l4proto, lookup] }));
  assert.ok(!sameRuleBody({ exprs: [l4proto, byteorder(1, 2, C.NFT_REG_2), lookup] }, { exprs: [l4proto, lookup] }));
});
