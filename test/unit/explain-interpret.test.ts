/** The explain interpreter's evaluators, one per expression kind: what each does to the rule's
 * registers and verdict for one flow, and that a kind nfkube's table does not use is refused by
 * name, never guessed. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as b from '../../src/nft/build';
import * as C from '../../src/nft/constants';
import { EvalContext, evaluateExpr, packetHeaders, Registers, Unsupported } from '../../src/explain/interpret';
import { FlowPacket } from '../../src/explain/flow';
import { Expr, NftSet, SetElement } from '../../src/nft/types';
import { ipv4 } from '../../src/net/ip-bytes';
import { hostU32 } from '../../src/nft/values';

const FLOW: FlowPacket = { family: 'ipv4', src: '198.18.0.1', dst: '198.18.0.2', protocol: 'tcp', sport: 40000, dport: 80 };
const be16 = (n: number) => Buffer.from([n >> 8, n & 0xff]);

function context(sets: Record<string, { set: NftSet; elements: SetElement[] }> = {}): EvalContext {
  return { packet: FLOW, headers: packetHeaders(FLOW), regs: new Registers(), set: (name) => sets[name] };
}

/** Runs the expressions in order as one rule does: false as soon as one does not match. */
function run(exprs: Expr[], cx = context()): ReturnType<typeof evaluateExpr> {
  let last: ReturnType<typeof evaluateExpr> = true;
  for (const e of exprs) {
    last = evaluateExpr(e, cx);
    if (last === false) return false;
  }
  return last;
}

const set = (name: string, more: Partial<NftSet> = {}): NftSet => ({ family: 'inet', table: 't', name, key: ['ipv4_addr'], ...more });

test('payload, meta and cmp read the flow: addresses, protocol, ports, family', () => {
  assert.equal(run([...b.matchAddr('ip saddr', '198.18.0.1')]), true);
  assert.equal(run([...b.matchAddr('ip daddr', '198.18.0.1')]), false);
  assert.equal(run([...b.matchPort('tcp', 'th dport', 80)]), true);
  assert.equal(run([...b.matchPort('udp', 'th dport', 80)]), false);
  assert.equal(run([...b.nfproto('ipv6')]), false);
  assert.equal(run([{ type: 'payload', base: 'transport', offset: 0, len: 2, dreg: 1 }, { type: 'cmp', sreg: 1, op: 'gt', data: be16(1024) }]), true);
});

test('range, bitwise and ct: a port interval, an address prefix, a new connection', () => {
  assert.equal(run([...b.matchPort('tcp', 'th dport', 8000, 8100)]), false);
  assert.equal(run([...b.l4proto('tcp'), { type: 'payload', base: 'transport', offset: 2, len: 2, dreg: 1 }, { type: 'range', sreg: 1, op: 'neq', from: be16(8000), to: be16(8100) }]), true);
  const prefix = [{ type: 'payload', base: 'network', offset: 12, len: 4, dreg: 1 }, { type: 'bitwise', sreg: 1, dreg: 1, len: 4, mask: Buffer.from([255, 254, 0, 0]), xor: Buffer.alloc(4) }, { type: 'cmp', sreg: 1, op: 'eq', data: ipv4('198.18.0.0') }] as Expr[];
  assert.equal(run(prefix), true);
  assert.equal(run([...b.ctState(['new'])]), true);
  assert.equal(run([...b.ctState(['established', 'related'])]), false);
});

test('lookup: set membership (and its inversion), a verdict map, a data map into a register', () => {
  const sets = {
    peers: { set: set('peers'), elements: [{ key: ipv4('198.18.0.1') }] },
    ranges: { set: set('ranges', { flags: C.NFT_SET_INTERVAL }), elements: [{ key: ipv4('198.18.0.0'), keyEnd: ipv4('198.18.0.9') }] },
    vm: { set: set('vm', { data: 'verdict' }), elements: [{ key: ipv4('198.18.0.2'), verdict: { kind: 'jump' as const, chain: 'x' } }] },
    dm: { set: set('dm', { data: 'mark' }), elements: [{ key: ipv4('198.18.0.2'), data: hostU32(7) }] },
  };
  assert.equal(run([...b.matchAddrInSet('ip saddr', 'peers')], context(sets)), true);
  assert.equal(run([...b.matchAddrInSet('ip saddr', 'peers', true)], context(sets)), false);
  assert.equal(run([...b.matchAddrInSet('ip daddr', 'ranges')], context(sets)), true);
  assert.deepEqual(run([...b.loadAddr('ip daddr'), b.vmap('vm')], context(sets)), { kind: 'jump', chain: 'x' });
  assert.equal(run([...b.loadAddr('ip saddr'), b.vmap('vm')], context(sets)), false);
  const cx = context(sets);
  assert.equal(run([...b.loadAddr('ip daddr'), { type: 'lookup', set: 'dm', sreg: 1, dreg: 8 }], cx), true);
  assert.deepEqual(cx.regs.read(8, 4), hostU32(7));
  assert.throws(() => run([...b.matchAddrInSet('ip saddr', 'absent')], context(sets)), /set absent is referenced but not in the table/);
});

test('immediate, reject and the statements that leave the verdict alone', () => {
  assert.deepEqual(run([b.counter(), b.log(1, 'p '), b.limit(1, 1), b.accept()]), { kind: 'accept' });
  assert.deepEqual(run([b.rejectAdminProhibited()]), { kind: 'reject' });
  const cx = context();
  assert.equal(run([{ type: 'immediate', dreg: 1, data: hostU32(5) }], cx), true);
  assert.deepEqual(cx.regs.read(1, 4), hostU32(5));
  assert.equal(run([...b.loadAddr('ip saddr'), b.updateSet('seen')]), true);
  assert.throws(() => run([...b.loadAddr('ip saddr'), { type: 'dynset', set: 'seen', op: 'delete', sregKey: 1 }]), /dynset delete/);
});

test('kinds the interpreter does not evaluate, and fields a flow does not define, are refused by name', () => {
  const refused: Expr[] = [
    { type: 'nat', natType: 'dnat', family: 2, regAddrMin: 1 },
    { type: 'numgen', dreg: 1, modulus: 2, ngType: 'random' },
    { type: 'byteorder', sreg: 1, dreg: 1, op: 'hton', len: 4, size: 4 },
    { type: 'hash', hashType: 'sym', dreg: 1, modulus: 2 },
    { type: 'objref', objType: 1, name: 'c' },
    { type: 'masq' },
    { type: 'fib', dreg: 1, result: C.NFT_FIB_RESULT_ADDRTYPE, flags: C.NFTA_FIB_F_DADDR },
    { type: 'opaque', name: 'xt', data: Buffer.alloc(0) },
  ];
  for (const e of refused) {
    const name = e.type === 'opaque' ? 'opaque' : e.type;
    assert.throws(() => evaluateExpr(e, context()), (err: unknown) => err instanceof Unsupported && err.message === `expression ${name}`, name);
  }
  assert.throws(() => run([{ type: 'payload', base: 'network', offset: 8, len: 1, dreg: 1 }]), /ip ttl, network header bytes 8-8/);
  assert.throws(() => run([{ type: 'meta', key: C.NFT_META_MARK, dreg: 1 }]), /meta key 3/);
  assert.throws(() => run([{ type: 'ct', key: C.NFT_CT_MARK, dreg: 1 }]), /ct key 3/);
});
