import { test } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { AttrWriter, parseAttrs, NLA_F_NESTED, NLA_F_NET_BYTEORDER } from '../../src/netlink/attr';
import { DecodeError } from '../../src/netlink/errors';
import { decodeNfMessages, encodeNfMessage, nfMsgType, NFNL_SUBSYS_IPSET, NLM_F_EXCL } from '../../src/netlink/message';
import * as codec from '../../src/ipset/codec';
import * as C from '../../src/ipset/constants';
import { ElementSyntaxError, formatIPv6, parseElement } from '../../src/ipset/element';
import { parseIPv6Bytes as parseIPv6 } from '../../src/net/ip-bytes';
import { describeIpsetErrno } from '../../src/ipset/errors';
import { formatSave, parseSave, RestoreSyntaxError } from '../../src/ipset/save-format';
import { Element, SetFamily, SetType } from '../../src/ipset/types';

const h = { seq: 7, protocol: C.IPSET_PROTOCOL };

test('IPv6 text matches inet_ntop (longest zero run, first on ties, no single-word ::)', () => {
  const cases: [string, string][] = [
    ['2001:0db8:0000:0000:0001:0000:0000:0001', '2001:db8::1:0:0:1'],
    ['2001:db8:0:1:0:0:0:1', '2001:db8:0:1::1'],
    ['2001:db8:1:1:1:1:0:1', '2001:db8:1:1:1:1:0:1'],
    ['::', '::'],
    ['::1', '::1'],
    ['2001:db8::', '2001:db8::'],
    ['::ffff:198.18.0.1', '::ffff:198.18.0.1'],
  ];
  for (const [input, want] of cases) assert.equal(formatIPv6(parseIPv6(input)!), want, input);
  for (const bad of ['1::2::3', '2001:db8::g', '1:2:3:4:5:6:7:8:9', '12345::']) assert.equal(parseIPv6(bad), undefined, bad);
});

test('members normalise as the kernel stores them', () => {
  assert.equal(parseElement('hash:net', 'inet', '198.18.1.77/24').key, '198.18.1.0/24');
  assert.equal(parseElement('hash:net', 'inet', '198.18.1.77/32').key, '198.18.1.77');
  assert.equal(parseElement('hash:net', 'inet6', '2001:db8::1/128').key, '2001:db8::1');
  assert.equal(parseElement('hash:ip,port', 'inet', '198.18.0.1,80').key, '198.18.0.1,tcp:80');
  assert.equal(parseElement('hash:ip,port,net', 'inet6', '2001:db8::1,UDP:53,2001:db8:ff::9/40').key, '2001:db8::1,udp:53,2001:db8::/40');
  assert.equal(parseElement('bitmap:port', 'unspec', 'tcp:443').key, '443');
  // A dotted quad is its own key; a leading zero is refused: the ipset and nft tools read it as
  // octal (010 is 8), so the text is ambiguous.
  assert.equal(parseElement('hash:ip', 'inet', '198.18.0.1').key, '198.18.0.1');
  for (const [type, text] of [['hash:ip', '198.018.0.1'], ['hash:net', '010.0.0.0/8'], ['hash:ip,port', '1.2.3.04,80']] as const) {
    assert.throws(() => parseElement(type, 'inet', text), (e: unknown) => e instanceof ElementSyntaxError && /leading zero.*octal/.test(e.message), text);
  }
  assert.equal(parseElement('hash:ip', 'inet', '0.0.0.0').key, '0.0.0.0');
  assert.equal(parseElement('hash:ip', 'inet', '255.255.255.255').key, '255.255.255.255');
  assert.throws(() => parseElement('hash:ip', 'inet6', '198.18.0.1'), ElementSyntaxError);
});

test('bad members are refused with the member and the problem named', () => {
  const bad: [Parameters<typeof parseElement>, RegExp][] = [
    [['hash:ip', 'inet', '2001:db8::1'], /IPv6 address 2001:db8::1 in an inet set/],
    [['hash:ip', 'inet6', '198.18.0.1'], /IPv4 address .* in an inet6 set/],
    [['hash:ip,port', 'inet', '198.18.0.1,tcp:70000'], /port "70000" is not between 0 and 65535/],
    [['hash:ip,port', 'inet', '198.18.0.1,gre:1'], /protocol "gre"/],
    [['hash:net', 'inet', '198.18.0.0/33'], /prefix length/],
    [['hash:net', 'inet', '198.18.0.0/0'], /prefix length/],
    [['hash:ip', 'inet', '198.18.0.0/24'], /single address/],
    [['hash:ip,port,ip', 'inet', '198.18.0.1,80'], /3 comma-separated parts/],
    [['hash:ip', 'inet', '198.18.0.256'], /not an IP address/],
  ];
  for (const [args, re] of bad) {
    assert.throws(() => parseElement(...args), (e: unknown) => e instanceof ElementSyntaxError && re.test(e.message), args.join(' '));
  }
});

test('every message carries IPSET_ATTR_PROTOCOL; numbers are flagged network byte order', () => {
  const e = parseElement('hash:ip,port', 'inet', '198.18.0.1,udp:53');
  const msgs = [
    codec.encodeProtocol(h),
    codec.encodeTypeQuery(h, 'hash:ip', 'inet'),
    codec.encodeCreate(h, { name: 's', type: 'hash:ip,port', family: 'inet', revision: 7, options: { maxelem: 10, timeout: 5, counters: true } }, false),
    codec.encodeDestroy(h, 's', false),
    codec.encodeFlush(h, 's'),
    codec.encodeRename(h, 's', 't'),
    codec.encodeSwap(h, 's', 't'),
    codec.encodeAdt(h, 'add', 's', 'hash:ip,port', [e, e], false).bytes,
    codec.encodeAdt(h, 'del', 's', 'hash:ip,port', [e], true).bytes,
    codec.encodeTest(h, 's', 'hash:ip,port', e),
    codec.encodeHeaderQuery(h, 's'),
    codec.encodeList(h, {}),
  ];
  for (const m of msgs) {
    const [d] = decodeNfMessages(m);
    assert.equal(d.type >> 8, NFNL_SUBSYS_IPSET);
    const attrs = parseAttrs(d.payload);
    assert.equal(attrs[0].type, C.IPSET_ATTR_PROTOCOL);
    assert.equal(attrs[0].data[0], C.IPSET_PROTOCOL);
  }
  const add = decodeNfMessages(msgs[7])[0];
  assert.ok(add.flags & NLM_F_EXCL, 'without -exist the kernel is asked to refuse duplicates');
  assert.equal(decodeNfMessages(msgs[8])[0].flags & NLM_F_EXCL, 0);
  const top = parseAttrs(add.payload);
  assert.ok(top.some((a) => a.type === C.IPSET_ATTR_LINENO), 'IPSET_ATTR_ADT requires IPSET_ATTR_LINENO');
  const adt = top.find((a) => a.type === C.IPSET_ATTR_ADT)!;
  const datas = parseAttrs(adt.data);
  assert.equal(datas.length, 2);
  const raw = datas[0].data;
  const port = parseAttrs(raw).find((a) => a.type === C.IPSET_ATTR_PORT)!;
  assert.equal(port.data.readUInt16BE(0), 53);
  assert.ok(raw.readUInt16LE(raw.indexOf(Buffer.from([0x00, 0x35])) - 2) & NLA_F_NET_BYTEORDER);
});

test('a missing set name is refused, never sent (the kernel would read it as "all sets")', () => {
  assert.throws(() => codec.encodeDestroy(h, '', false), /set name/);
  assert.throws(() => codec.encodeFlush(h, ''), /set name/);
  assert.throws(() => codec.encodeDestroy(h, 'x'.repeat(32), false), /1 to 31 bytes/);
});

test('element lists split below the 64 KiB attribute limit, in order, none lost', () => {
  const els = Array.from({ length: 9000 }, (_, i) => parseElement('hash:ip', 'inet6', `2001:db8::${i.toString(16)}`));
  const keys: string[] = [];
  let messages = 0;
  for (let from = 0; from < els.length; messages++) {
    const { bytes, next } = codec.encodeAdt(h, 'add', 's', 'hash:ip', els, true, from);
    assert.ok(bytes.length < 65536 && next > from);
    const adt = parseAttrs(decodeNfMessages(bytes)[0].payload).find((a) => a.type === C.IPSET_ATTR_ADT)!;
    for (const d of parseAttrs(adt.data)) {
      const ip = parseAttrs(parseAttrs(d.data).find((a) => a.type === C.IPSET_ATTR_IP)!.data)[0].data;
      keys.push(formatIPv6(ip));
    }
    from = next;
  }
  assert.ok(messages > 1);
  assert.deepEqual(keys, els.map((e) => e.key));
});

test('decoders throw DecodeError, never crash, on random and truncated bytes', () => {
  const good = encodeNfMessage({
    type: nfMsgType(NFNL_SUBSYS_IPSET, C.IPSET_CMD_LIST),
    flags: 0,
    seq: 1,
    family: 2,
    payload: decodeNfMessages(codec.encodeCreate(h, { name: 's', type: 'hash:net', family: 'inet', revision: 7, options: {} }, true))[0].payload,
  });
  for (let i = 0; i < 3000; i++) {
    const bytes = i % 2 ? randomBytes(1 + (i % 200)) : Buffer.concat([good.subarray(0, 20), randomBytes(i % 120)]);
    if (bytes.length >= 4) bytes.writeUInt32LE(bytes.length, 0);
    try {
      const msgs = decodeNfMessages(bytes).map((m) => ({ ...m, type: nfMsgType(NFNL_SUBSYS_IPSET, C.IPSET_CMD_LIST) }));
      codec.decodeList(msgs);
    } catch (err) {
      assert.ok(err instanceof DecodeError, `unexpected ${(err as Error).stack}`);
    }
  }
});

test('the member reader throws DecodeError, never crashes, on corrupted and truncated list replies', () => {
  const kinds: [SetType, SetFamily, string[]][] = [
    ['hash:ip', 'inet', ['198.18.0.1', '198.18.0.2']],
    ['hash:ip,port,net', 'inet6', ['2001:db8::1,tcp:80,2001:db8::/48']],
    ['hash:net,port', 'inet', ['198.18.0.0/16,udp:53']],
    ['list:set', 'unspec', ['abc']],
  ];
  const replies = kinds.map(([type, family, texts]) => {
    const els = texts.map((t) => ({ ...parseElement(type, family, t), timeout: 9, comment: 'c' }));
    const adt = parseAttrs(decodeNfMessages(codec.encodeAdt(h, 'add', 's', type, els, true).bytes)[0].payload).find((a) => a.type === C.IPSET_ATTR_ADT)!;
    return new AttrWriter()
      .str(C.IPSET_ATTR_SETNAME, 's')
      .str(C.IPSET_ATTR_TYPENAME, type)
      .u8(C.IPSET_ATTR_REVISION, 1)
      .u8(C.IPSET_ATTR_FAMILY, { inet: 2, inet6: 10, unspec: 0 }[family])
      .nest(C.IPSET_ATTR_DATA, (d) => d.be32(C.IPSET_ATTR_REFERENCES | NLA_F_NET_BYTEORDER, 0))
      .bytes(C.IPSET_ATTR_ADT | NLA_F_NESTED, adt.data)
      .finish();
  });
  const list = (payload: Buffer) => [{ type: nfMsgType(NFNL_SUBSYS_IPSET, C.IPSET_CMD_LIST), flags: 0, seq: 1, pid: 0, family: 2, version: 0, resId: 0, payload }];
  for (const [i, reply] of replies.entries()) assert.equal(codec.decodeList(list(reply)).sets[0].members.length, kinds[i][2].length);
  for (let i = 0; i < 20000; i++) {
    const reply = replies[i % replies.length];
    const bytes = Buffer.from(reply.subarray(0, i % 3 === 0 ? i % reply.length : reply.length));
    for (let k = 0; k <= i % 4; k++) bytes[(i * 7919 + k * 104729) % Math.max(1, bytes.length)] = randomBytes(1)[0];
    try {
      codec.decodeList(list(bytes));
    } catch (err) {
      assert.ok(err instanceof DecodeError, `unexpected ${(err as Error).stack}`);
    }
  }
});

test('error numbers read as named kinds in the context of command and type', () => {
  assert.equal(describeIpsetErrno(C.IPSET_ERR_EXIST, 'add').kind, 'element-exists');
  assert.equal(describeIpsetErrno(C.IPSET_ERR_EXIST, 'del').kind, 'element-missing');
  assert.equal(describeIpsetErrno(4352, 'add', 'hash:ip').kind, 'hash-full');
  assert.equal(describeIpsetErrno(4352, 'add', 'bitmap:port').kind, 'out-of-range');
  assert.equal(describeIpsetErrno(4352, 'add', 'list:set').kind, 'member-set-not-found');
  assert.equal(describeIpsetErrno(C.IPSET_ERR_TYPE_MISMATCH, 'swap').kind, 'type-mismatch');
  assert.equal(describeIpsetErrno(C.IPSET_ERR_BUSY, 'destroy').kind, 'in-use');
  assert.equal(describeIpsetErrno(2, 'add').kind, 'set-not-found');
});

test('save format: parse and print round-trip; every bad line reported with its number', () => {
  const text = [
    'create a hash:ip family inet hashsize 64 maxelem 1000 timeout 300 counters comment bucketsize 12 initval 0x0000abcd',
    'add a 198.18.0.1 timeout 99 packets 5 bytes 7 comment "hello world"',
    '# comment',
    'create h bitmap:port range 1-1024 -exist',
    'add h 80',
    'create i list:set size 4',
    'add i a',
  ].join('\n');
  const sets = parseSave(text);
  assert.deepEqual([...sets.keys()], ['a', 'h', 'i']);
  assert.deepEqual(sets.get('a')!.members, [{ elem: '198.18.0.1', timeout: 99, packets: 5n, bytes: 7n, comment: 'hello world' }]);
  assert.deepEqual(sets.get('h')!.options, { range: { from: 1, to: 1024 } });

  const bad = [
    'create a hash:ip family inet',
    'add a 2001:db8::1',
    'create b hash:nope',
    'create c hash:ip family inet5',
    'create d bitmap:port range 1-100',
    'add d 101',
    'add d tcp:99999',
    'add e 198.18.0.1',
    'add a 198.18.0.1 comment "x"',
    'create a hash:ip',
    'frobnicate',
    'add a "198.18.0.1',
    'add a 198.18.0.010',
  ].join('\n');
  assert.throws(
    () => parseSave(bad),
    (e: unknown) => {
      assert.ok(e instanceof RestoreSyntaxError);
      assert.deepEqual(e.errors.map((x) => x.line), [2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13]);
      assert.match(e.message, /line 2: .*IPv6 address 2001:db8::1 in an inet set/);
      assert.match(e.message, /line 3: .*unknown or unsupported set type "hash:nope"/);
      assert.match(e.message, /line 6: .*outside the set's range 1-100/);
      assert.match(e.message, /line 7: .*port "99999"/);
      assert.match(e.message, /line 13: .*"198.18.0.010" has an octet with a leading zero, which the ipset tool reads as octal/);
      return true;
    },
  );
  assert.equal(
    formatSave([{ name: 'h', type: 'bitmap:port', family: 'unspec', options: { range: { from: 1, to: 9 } }, header: { revision: 3, references: 0, elements: 1, memsize: 0 }, members: [parseElement('bitmap:port', 'unspec', '8')] }]),
    'create h bitmap:port range 1-9\nadd h 8\n',
  );
});

test('every member key parses back to itself, and what the encoder writes decodes to the same key', () => {
  const cases: [SetType, SetFamily, Element][] = [
    ['hash:ip', 'inet', parseElement('hash:ip', 'inet', '198.18.0.1')],
    ['hash:net', 'inet', parseElement('hash:net', 'inet', '198.18.7.9/23')],
    ['hash:ip,port', 'inet', parseElement('hash:ip,port', 'inet', '198.18.0.1,icmp:8/0')],
    ['hash:ip,port', 'inet6', parseElement('hash:ip,port', 'inet6', '2001:db8::1,ipv6-icmp:128/0')],
    ['hash:ip,port', 'inet', parseElement('hash:ip,port', 'inet', '198.18.0.1,47:0')],
    ['hash:net,port', 'inet6', parseElement('hash:net,port', 'inet6', '2001:db8::/32,udp:53')],
    ['hash:ip,port,ip', 'inet', parseElement('hash:ip,port,ip', 'inet', '198.18.0.1,tcp:80,198.18.0.2')],
    ['hash:ip,port,net', 'inet6', { ...parseElement('hash:ip,port,net', 'inet6', '2001:db8::1,tcp:80,2001:db8::/48'), timeout: 5, packets: 1n, bytes: 2n, comment: 'héllo' }],
    ['list:set', 'unspec', parseElement('list:set', 'unspec', 'abc')],
    ['bitmap:port', 'unspec', parseElement('bitmap:port', 'unspec', '80')],
  ];
  assert.equal(cases[4][2].key, '198.18.0.1,47:0');
  for (const [type, fam, e] of cases) {
    assert.equal(parseElement(type, fam, e.key).key, e.key);
    const { bytes } = codec.encodeAdt(h, 'add', 's', type, [e], true);
    const adt = parseAttrs(decodeNfMessages(bytes)[0].payload).find((a) => a.type === C.IPSET_ATTR_ADT)!;
    const family = { inet: 2, inet6: 10, unspec: 0 }[fam];
    const reply = new AttrWriter()
      .u8(C.IPSET_ATTR_PROTOCOL, C.IPSET_PROTOCOL)
      .str(C.IPSET_ATTR_SETNAME, 's')
      .str(C.IPSET_ATTR_TYPENAME, type)
      .u8(C.IPSET_ATTR_REVISION, 1)
      .u8(C.IPSET_ATTR_FAMILY, family)
      .bytes(C.IPSET_ATTR_ADT | NLA_F_NESTED, adt.data)
      .finish();
    const [listed] = codec.decodeList([{ type: nfMsgType(NFNL_SUBSYS_IPSET, C.IPSET_CMD_LIST), flags: 0, seq: 1, pid: 0, family: 2, version: 0, resId: 0, payload: reply }]).sets;
    assert.deepEqual(listed.members, [e]);
  }
});
