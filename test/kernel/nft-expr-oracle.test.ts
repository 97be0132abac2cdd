/** Cross-checks the expression codec against nft itself: nft's own netlink bytes (from
 * `nft --debug=mnl`) must decode to the expected typed expressions and re-encode byte for byte,
 * our debug text must equal nft's `--debug=netlink` lines, and the kernel's read-back of the same
 * rules must decode without anything left opaque. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AttrMap, AttrWriter, NLA_F_NESTED, NLA_F_NET_BYTEORDER, parseAttrs } from '../../src/netlink/attr';
import { encodeNfMessage, nfMsgType, NFNL_SUBSYS_NFTABLES, NLM_F_DUMP, NLM_F_REQUEST } from '../../src/netlink/message';
import * as C from '../../src/nft/constants';
import { decodeExprList, describeExpr, encodeExprList } from '../../src/nft/expr';
import { Expr, NFPROTO } from '../../src/nft/types';
import { withSandbox } from '../helpers/netns';

interface DumpedMessage {
  type: number;
  /** Attributes after nfgenmsg, reassembled byte for byte from the dump. */
  payload: Buffer;
}

/** Parses libmnl's mnl_nlmsg_fprintf output (what `nft --debug=mnl` prints): per message a
 * header block, the 4-byte nfgenmsg, then attribute header lines `|len|flags|type|` and 4-byte
 * data lines, which together are the message's bytes in order. */
function parseMnlDump(text: string): DumpedMessage[] {
  const lines = text.replace(/\x1b\[[0-9;]*m/g, '').split('\n');
  const out: DumpedMessage[] = [];
  let cur: { type: number; length: number; chunks: Buffer[] } | undefined;
  const finish = () => {
    if (!cur) return;
    const payload = Buffer.concat(cur.chunks);
    assert.equal(16 + 4 + payload.length, cur.length + ((4 - (cur.length % 4)) % 4), `message type ${cur.type}: reassembled length`);
    out.push({ type: cur.type, payload });
    cur = undefined;
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];
    let m: RegExpMatchArray | null;
    if ((m = line.match(/^\|\s+(\d+)\s+\|\t\| message length \|/))) {
      finish();
      const t = lines[i + 1].match(/^\|\s+(\d+) \|/);
      assert.ok(t, `type line after message length: ${lines[i + 1]}`);
      cur = { type: Number(t[1]), length: Number(m[1]), chunks: [] };
    } else if (!cur) {
      continue;
    } else if ((m = line.match(/^\|\s*(\d+)\|([N-])([B-])\|\s*(\d+)\|\t\|len \|flags\| type\|/))) {
      const h = Buffer.alloc(4);
      h.writeUInt16LE(Number(m[1]), 0);
      h.writeUInt16LE(Number(m[4]) | (m[2] === 'N' ? NLA_F_NESTED : 0) | (m[3] === 'B' ? NLA_F_NET_BYTEORDER : 0), 2);
      cur.chunks.push(h);
    } else if ((m = line.match(/^\| ([0-9a-f]{2}) ([0-9a-f]{2}) ([0-9a-f]{2}) ([0-9a-f]{2})  \|\t\|      data      \|/))) {
      cur.chunks.push(Buffer.from(m.slice(1, 5).join(''), 'hex'));
    }
  }
  finish();
  return out;
}

const hex = (s: string) => Buffer.from(s, 'hex');
const metaLoad = (key: number, dreg = 1): Expr => ({ type: 'meta', key, dreg });
const metaSet = (key: number, sreg = 1): Expr => ({ type: 'meta', key, sreg });
const cmp = (op: 'eq' | 'neq' | 'lt' | 'lte' | 'gt' | 'gte', data: string, sreg = 1): Expr => ({ type: 'cmp', sreg, op, data: hex(data) });
const load = (base: 'network' | 'transport', offset: number, len: number, dreg = 1): Expr => ({ type: 'payload', base, offset, len, dreg });
const verdict = (kind: 'accept' | 'drop' | 'continue' | 'return'): Expr => ({ type: 'immediate', dreg: 0, verdict: { kind } });
const ipv4 = [metaLoad(C.NFT_META_NFPROTO), cmp('eq', '02')];
const tcp = [metaLoad(C.NFT_META_L4PROTO), cmp('eq', '06')];

/** Each rule as nft syntax, with the expressions nft sends for it. */
const RULES: [string, Expr[]][] = [
  [
    'ip saddr 198.18.0.1 tcp dport 22 counter packets 0 bytes 0 accept',
    [...ipv4, load('network', 12, 4), cmp('eq', 'c6120001'), ...tcp, load('transport', 2, 2), cmp('eq', '0016'), { type: 'counter', packets: 0n, bytes: 0n }, verdict('accept')],
  ],
  [
    'tcp dport < 1024 tcp dport > 10 tcp dport <= 1000 tcp dport >= 11 tcp dport != 500 drop',
    [
      ...tcp,
      ...[['lt', '0400'], ['gt', '000a'], ['lte', '03e8'], ['gte', '000b'], ['neq', '01f4']].flatMap(([op, v]) => [load('transport', 2, 2), cmp(op as 'lt', v)]),
      verdict('drop'),
    ],
  ],
  [
    'ip saddr 198.18.0.0/15 ct state established,related accept',
    [
      ...ipv4,
      load('network', 12, 4),
      { type: 'bitwise', sreg: 1, dreg: 1, len: 4, mask: hex('fffe0000'), xor: hex('00000000') },
      cmp('eq', 'c6120000'),
      { type: 'ct', key: C.NFT_CT_STATE, dreg: 1 },
      // ct state is a host-order bitmask: established (2) | related (4).
      { type: 'bitwise', sreg: 1, dreg: 1, len: 4, mask: hex('06000000'), xor: hex('00000000') },
      cmp('neq', '00000000'),
      verdict('accept'),
    ],
  ],
  ['tcp sport != 3000-4000 continue', [...tcp, load('transport', 0, 2), { type: 'range', sreg: 1, op: 'neq', from: hex('0bb8'), to: hex('0fa0') }, verdict('continue')]],
  [
    'ip saddr @s ip daddr != @s return',
    [...ipv4, load('network', 12, 4), { type: 'lookup', set: 's', setId: 1, sreg: 1 }, load('network', 16, 4), { type: 'lookup', set: 's', setId: 1, sreg: 1, invert: true }, verdict('return')],
  ],
  ['meta mark set ip saddr map @m', [...ipv4, load('network', 12, 4), { type: 'lookup', set: 'm', setId: 2, sreg: 1, dreg: 1 }, metaSet(C.NFT_META_MARK)]],
  ['ip saddr vmap @vm', [...ipv4, load('network', 12, 4), { type: 'lookup', set: 'vm', setId: 3, sreg: 1, dreg: 0 }]],
  ['jump c2', [{ type: 'immediate', dreg: 0, verdict: { kind: 'jump', chain: 'c2' } }]],
  ['goto c2', [{ type: 'immediate', dreg: 0, verdict: { kind: 'goto', chain: 'c2' } }]],
  ['meta mark set 0x12345678', [{ type: 'immediate', dreg: 1, data: hex('78563412') }, metaSet(C.NFT_META_MARK)]],
  ['counter packets 5 bytes 10', [{ type: 'counter', packets: 5n, bytes: 10n }]],
  [
    'ct original ip saddr 198.18.0.9 ct mark set 1',
    [{ type: 'ct', key: C.NFT_CT_SRC_IP, dreg: 1, direction: 0 }, cmp('eq', 'c6120009'), { type: 'immediate', dreg: 1, data: hex('01000000') }, { type: 'ct', key: C.NFT_CT_MARK, sreg: 1 }],
  ],
  ['limit rate 10/second burst 3 packets', [{ type: 'limit', rate: 10n, unit: 1n, burst: 3, limitType: 'pkts', flags: 0 }]],
  ['limit rate over 1 mbytes/second burst 2 mbytes', [{ type: 'limit', rate: 1048576n, unit: 1n, burst: 2097152, limitType: 'bytes', flags: C.NFT_LIMIT_F_INV }]],
  ['log prefix "x" level info', [{ type: 'log', prefix: 'x', level: 6 }]],
  ['log group 2 snaplen 100 queue-threshold 5', [{ type: 'log', group: 2, snaplen: 100, qthreshold: 5 }]],
  ['log flags all', [{ type: 'log', flags: 0x2f }]],
  ['reject with tcp reset', [...tcp, { type: 'reject', rejectType: C.NFT_REJECT_TCP_RST, icmpCode: 0 }]],
  ['reject with icmpx type admin-prohibited', [{ type: 'reject', rejectType: C.NFT_REJECT_ICMPX_UNREACH, icmpCode: C.NFT_REJECT_ICMPX_ADMIN_PROHIBITED }]],
  ['meta mark set numgen inc mod 2 offset 10', [{ type: 'numgen', dreg: 1, modulus: 2, ngType: 'inc', offset: 10 }, metaSet(C.NFT_META_MARK)]],
  ['meta mark set numgen random mod 4', [{ type: 'numgen', dreg: 1, modulus: 4, ngType: 'random', offset: 0 }, metaSet(C.NFT_META_MARK)]],
  [
    'meta mark set jhash ip saddr mod 2 seed 0xdeadbeef offset 100',
    [...ipv4, load('network', 12, 4, 2), { type: 'hash', hashType: 'jenkins', sreg: 2, dreg: 1, len: 4, modulus: 2, seed: 0xdeadbeef, offset: 100 }, metaSet(C.NFT_META_MARK)],
  ],
  ['meta mark set symhash mod 2', [{ type: 'hash', hashType: 'sym', dreg: 1, modulus: 2, offset: 0 }, metaSet(C.NFT_META_MARK)]],
  ['counter name "c1"', [{ type: 'objref', objType: C.NFT_OBJECT_COUNTER, name: 'c1' }]],
  ['counter name ip saddr map { 198.18.0.1 : "c1" }', [...ipv4, load('network', 12, 4), { type: 'objref', setSreg: 1, setName: '__objmap%d', setId: 5 }]],
  [
    'tcp dport set 80',
    [...tcp, { type: 'immediate', dreg: 1, data: hex('0050') }, { type: 'payload', base: 'transport', offset: 2, len: 2, sreg: 1, csumType: C.NFT_PAYLOAD_CSUM_INET, csumOffset: 16 }],
  ],
  ['meta mark set meta mark << 2', [metaLoad(C.NFT_META_MARK), { type: 'bitwise', sreg: 1, dreg: 1, len: 4, op: 'lshift', shift: 2 }, metaSet(C.NFT_META_MARK)]],
  [
    'ip6 saddr 2001:db8::1',
    [metaLoad(C.NFT_META_NFPROTO), cmp('eq', '0a'), load('network', 8, 16), cmp('eq', '20010db8000000000000000000000001')],
  ],
  ['fib saddr type local accept', [{ type: 'fib', dreg: 1, result: C.NFT_FIB_RESULT_ADDRTYPE, flags: C.NFTA_FIB_F_SADDR }, cmp('eq', '02000000'), verdict('accept')]],
  ['fib daddr type local', [{ type: 'fib', dreg: 1, result: C.NFT_FIB_RESULT_ADDRTYPE, flags: C.NFTA_FIB_F_DADDR }, cmp('eq', '02000000')]],
  ['update @d { ip saddr }', [...ipv4, load('network', 12, 4), { type: 'dynset', set: 'd', setId: 4, op: 'update', sregKey: 1 }]],
  // nft sends zero counts as absent attributes, which the kernel also reads as zero.
  ['counter', [{ type: 'counter', packets: 0n, bytes: 0n }]],
  ['limit rate over 1 mbytes/second', [{ type: 'limit', rate: 1048576n, unit: 1n, burst: 0, limitType: 'bytes', flags: C.NFT_LIMIT_F_INV }]],
];

const NAT_RULES: [string, string, Expr[]][] = [
  [
    'n',
    'ip daddr 198.18.0.1 tcp dport 8080 dnat ip to 198.18.0.2:80',
    [
      ...ipv4,
      load('network', 16, 4),
      cmp('eq', 'c6120001'),
      ...tcp,
      load('transport', 2, 2),
      cmp('eq', '1f90'),
      { type: 'immediate', dreg: 1, data: hex('c6120002') },
      { type: 'immediate', dreg: 2, data: hex('0050') },
      { type: 'nat', natType: 'dnat', family: NFPROTO.ip, regAddrMin: 1, regProtoMin: 2, flags: 2 /* NF_NAT_RANGE_PROTO_SPECIFIED */ },
    ],
  ],
  [
    'p',
    'ip daddr 198.18.0.3 snat ip to 198.18.0.1-198.18.0.5 persistent',
    [
      ...ipv4,
      load('network', 16, 4),
      cmp('eq', 'c6120003'),
      { type: 'immediate', dreg: 1, data: hex('c6120001') },
      { type: 'immediate', dreg: 2, data: hex('c6120005') },
      // NF_NAT_RANGE_PERSISTENT (8); no MAP_IPS flag, nft leaves that implied by addr_max.
      { type: 'nat', natType: 'snat', family: NFPROTO.ip, regAddrMin: 1, regAddrMax: 2, flags: 8 },
    ],
  ],
  ['p', 'masquerade fully-random', [{ type: 'masq', flags: 0x10 }]],
];

const SCRIPT = `table inet t {
  set s { type ipv4_addr; }
  map m { type ipv4_addr : mark; }
  map vm { type ipv4_addr : verdict; }
  set d { type ipv4_addr; flags dynamic,timeout; timeout 1h; }
  counter c1 { }
  chain c2 { }
  chain c {
${RULES.map(([r]) => `    ${r}`).join('\n')}
  }
  chain n {
    type nat hook prerouting priority 0;
${NAT_RULES.filter(([c]) => c === 'n').map(([, r]) => `    ${r}`).join('\n')}
  }
  chain p {
    type nat hook postrouting priority 0;
${NAT_RULES.filter(([c]) => c === 'p').map(([, r]) => `    ${r}`).join('\n')}
  }
}
`;

const EXPECTED: Expr[][] = [...RULES.map(([, e]) => e), ...NAT_RULES.map(([, , e]) => e)];

/** The raw NFTA_RULE_EXPRESSIONS attribute (header included) of a rule message payload. */
function ruleExpressions(payload: Buffer): { whole: Buffer; inner: Buffer } {
  const a = parseAttrs(payload).find((x) => x.type === C.NFTA_RULE_EXPRESSIONS);
  assert.ok(a, 'rule without NFTA_RULE_EXPRESSIONS');
  const start = a.data.byteOffset - payload.byteOffset - 4;
  return { whole: payload.subarray(start, start + 4 + a.data.length), inner: a.data };
}

/** nft's libnftnl lines for expressions: "  [ cmp eq reg 1 0x00000002 ]". */
const exprLines = (out: string) => out.split('\n').filter((l) => /^  \[ .* \]$/.test(l)).map((l) => l.trim());

test("nft's own rule bytes decode to the expected expressions and re-encode byte for byte", async () => {
  await withSandbox(async (sb) => {
    const out = sb.run('nft', ['--debug=mnl,netlink', '-f', '-'], SCRIPT);
    const rules = parseMnlDump(out).filter((m) => m.type === nfMsgType(NFNL_SUBSYS_NFTABLES, C.NFT_MSG_NEWRULE));
    assert.equal(rules.length, EXPECTED.length);
    const described: string[] = [];
    rules.forEach((m, i) => {
      const { whole, inner } = ruleExpressions(m.payload);
      const exprs = decodeExprList(inner);
      assert.deepEqual(exprs, EXPECTED[i], `rule ${i}: ${RULES[i]?.[0] ?? NAT_RULES[i - RULES.length][1]}`);
      const w = new AttrWriter();
      encodeExprList(w, C.NFTA_RULE_EXPRESSIONS, exprs);
      assert.equal(w.finish().toString('hex'), whole.toString('hex'), `rule ${i} re-encoded`);
      described.push(...exprs.map(describeExpr));
    });
    const nftLines = exprLines(out);
    assert.equal(described.length, nftLines.length);
    described.forEach((d, i) => {
      if (!d.includes(' opaque ')) assert.equal(d, nftLines[i]);
    });
  });
});

test('the kernel read-back of the same rules decodes with nothing opaque and describes as nft lists it', async () => {
  await withSandbox(async (sb) => {
    sb.run('nft', ['-f', '-'], SCRIPT);
    const listed = exprLines(sb.run('nft', ['--debug=netlink', 'list', 'table', 'inet', 't']));
    const msgs = await sb.socket.dump(
      encodeNfMessage({ type: nfMsgType(NFNL_SUBSYS_NFTABLES, C.NFT_MSG_GETRULE), flags: NLM_F_REQUEST | NLM_F_DUMP, seq: sb.socket.nextSeq(), family: NFPROTO.inet }),
    );
    assert.equal(msgs.length, EXPECTED.length);
    const described: string[] = [];
    for (const m of msgs) {
      const exprs = decodeExprList(ruleExpressions(m.payload).inner);
      for (const e of exprs) assert.notEqual(e.type, 'opaque', `kernel sent ${describeExpr(e)}`);
      // Whatever the kernel sent re-encodes to something that decodes to the same value.
      const w = new AttrWriter();
      encodeExprList(w, C.NFTA_RULE_EXPRESSIONS, exprs);
      assert.deepEqual(decodeExprList(AttrMap.parse(w.finish(), 'rule').bytes(C.NFTA_RULE_EXPRESSIONS)!), exprs);
      described.push(...exprs.map(describeExpr));
    }
    assert.deepEqual(described, listed);
  });
});
