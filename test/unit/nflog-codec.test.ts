/** nfnetlink_log: the bind requests byte for byte, the packet decoder (NFULA_* table), the
 * header decoder (IPv4/IPv6, extension headers, TCP/UDP/SCTP ports, ICMP types), and fuzzing:
 * hostile bytes give DecodeError or nothing, never another exception. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AttrWriter, parseAttrs } from '../../src/netlink/attr';
import { DecodeError } from '../../src/netlink/errors';
import { decodeNfMessages, NLM_F_ACK, NLM_F_REQUEST } from '../../src/netlink/message';
import { bindRequests, decodePacket, NFULNL_CONFIG_TYPE, NFULNL_PACKET_TYPE, unbindRequest } from '../../src/nflog/codec';
import * as C from '../../src/nflog/constants';
import { decodeHeaders } from '../../src/nflog/headers';
import { DropLog } from '../../src/policy/droplog/drop-log';
import { ClusterView } from '../../src/policy/droplog/cluster-view';
import { PolicyModes } from '../../src/policy/modes';
import { dropLogPrefix, parseDropLogPrefix } from '../../src/policy/render/tail';
import { mulberry32 } from '../helpers/prng';
import pino from 'pino';

const hex = (s: string) => Buffer.from(s.replace(/#[^\n]*/g, '').replace(/\s+/g, ''), 'hex');

test('bind requests: per-family bind, group bind, copy mode, threshold and timeout, each acked', () => {
  let seq = 100;
  const msgs = decodeNfMessages(bindRequests({ group: 100, copyRange: 128, qthreshold: 32, timeoutCs: 5 }, () => seq++));
  assert.deepEqual(msgs.map((m) => [m.type, m.flags, m.seq, m.family, m.resId]), [
    [NFULNL_CONFIG_TYPE, NLM_F_REQUEST | NLM_F_ACK, 100, 2, 0],
    [NFULNL_CONFIG_TYPE, NLM_F_REQUEST | NLM_F_ACK, 101, 10, 0],
    [NFULNL_CONFIG_TYPE, NLM_F_REQUEST | NLM_F_ACK, 102, 0, 100],
    [NFULNL_CONFIG_TYPE, NLM_F_REQUEST | NLM_F_ACK, 103, 0, 100],
  ]);
  assert.equal(NFULNL_CONFIG_TYPE, 0x0401);
  assert.deepEqual(msgs[0].payload, hex('0500 0100 03 000000')); // NFULA_CFG_CMD PF_BIND
  assert.deepEqual(msgs[2].payload, hex('0500 0100 01 000000')); // NFULA_CFG_CMD BIND
  assert.deepEqual(
    msgs[3].payload,
    hex(`0a00 0200 00000080 02 00 0000   # NFULA_CFG_MODE: copy_range 128, NFULNL_COPY_PACKET
         0800 0500 00000020            # NFULA_CFG_QTHRESH 32
         0800 0400 00000005            # NFULA_CFG_TIMEOUT 5 (1/100 s)
    `),
  );
  const unbind = decodeNfMessages(unbindRequest(100, 7))[0];
  assert.deepEqual([unbind.resId, unbind.payload], [100, hex('0500 0100 02 000000')]);
});

const IPV4_TCP = hex(`45000028 1c460000 4006 0000 c6120010 c6120011   # 198.18.0.16 -> 198.18.0.17, TCP
                      a0e4 0050 00000000 00000000 5002 faf0 0000 0000   # 41188 -> 80, SYN
`);

function packetMessage(fill: (w: AttrWriter) => void, group = 100, family = C.NFPROTO_IPV4): Buffer {
  const w = new AttrWriter();
  const at = w.beginMessage(NFULNL_PACKET_TYPE, 0, 0, family, group);
  fill(w);
  w.endMessage(at);
  return w.finish();
}

function fullPacket(payload = IPV4_TCP): Buffer {
  return packetMessage((w) => {
    w.bytes(C.NFULA_PACKET_HDR, hex('0800 02 00'));
    w.be32(C.NFULA_MARK, 0x10);
    w.bytes(C.NFULA_TIMESTAMP, hex('000000006553f100 000000000007a120'));
    w.be32(C.NFULA_IFINDEX_INDEV, 3);
    w.be32(C.NFULA_IFINDEX_OUTDEV, 4);
    w.bytes(C.NFULA_HWADDR, hex('0006 0000 020000000001 0000'));
    w.be16(C.NFULA_HWTYPE, 1);
    w.str(C.NFULA_PREFIX, 'nfkube in tabc');
    w.bytes(C.NFULA_PAYLOAD, payload);
    w.bytes(C.NFULA_CT_INFO, hex('00000002')); // not decoded: skipped
  });
}

test('a packet message decodes attribute by attribute', () => {
  const [m] = decodeNfMessages(fullPacket());
  const p = decodePacket(m);
  assert.deepEqual({ ...p, payload: undefined, hwAddr: p.hwAddr?.toString('hex') }, {
    group: 100,
    family: 2,
    hwProtocol: 0x0800,
    hook: C.NF_INET_FORWARD,
    mark: 0x10,
    timestamp: 0x6553f100 + 0.5,
    indev: 3,
    outdev: 4,
    hwAddr: '020000000001',
    hwType: 1,
    prefix: 'nfkube in tabc',
    payload: undefined,
  });
  assert.deepEqual(p.payload, IPV4_TCP);
  assert.throws(() => decodePacket({ ...m, type: NFULNL_CONFIG_TYPE }), DecodeError);
  assert.throws(() => decodePacket(decodeNfMessages(packetMessage((w) => w.bytes(C.NFULA_MARK, hex('0102'))))[0]), /NFULA_MARK: 2 bytes, expected at least 4/);
  assert.throws(() => decodePacket(decodeNfMessages(packetMessage((w) => w.bytes(C.NFULA_HWADDR, hex('0009 0000 0000'))))[0]), DecodeError);
});

test('headers: IPv4 and IPv6, TCP, UDP, SCTP ports, ICMP types, extension headers, fragments', () => {
  assert.deepEqual(decodeHeaders(IPV4_TCP), { family: 'ipv4', src: '198.18.0.16', dst: '198.18.0.17', protocol: 6, transport: 'tcp', sport: 41188, dport: 80, length: 40 });
  const v4 = (proto: number, l4: string, frag = '0000') => hex(`45000030 0000${frag} 40${proto.toString(16).padStart(2, '0')} 0000 c6120001 c6120002 ${l4}`);
  assert.deepEqual(decodeHeaders(v4(0x11, '1f90 0035 0008 0000')).dport, 53);
  assert.deepEqual(decodeHeaders(v4(0x84, '0b59 0b5a 00000000')), { family: 'ipv4', src: '198.18.0.1', dst: '198.18.0.2', protocol: 132, transport: 'sctp', sport: 2905, dport: 2906, length: 48 });
  assert.deepEqual(decodeHeaders(v4(0x01, '0800 f7ff 0000 0000')), { family: 'ipv4', src: '198.18.0.1', dst: '198.18.0.2', protocol: 1, transport: 'icmp', icmpType: 8, icmpCode: 0, length: 48 });
  // A non-first fragment has no transport header; a first one does.
  assert.deepEqual(decodeHeaders(v4(0x11, '1f90 0035', '0010')), { family: 'ipv4', src: '198.18.0.1', dst: '198.18.0.2', protocol: 17, transport: 'udp', length: 48, fragment: true });
  assert.equal(decodeHeaders(v4(0x11, '1f90 0035', '2000')).dport, 53);
  // The copy ends before the ports: the transport is known, the ports are not.
  assert.deepEqual(decodeHeaders(v4(0x06, '1f')), { family: 'ipv4', src: '198.18.0.1', dst: '198.18.0.2', protocol: 6, transport: 'tcp', length: 48 });

  const v6 = (next: number, rest: string) => hex(`60000000 0010 ${next.toString(16).padStart(2, '0')} 40 20010db8000000000000000000000010 20010db8000000000000000000000011 ${rest}`);
  assert.deepEqual(decodeHeaders(v6(17, 'c350 0050 0010 0000')), { family: 'ipv6', src: '2001:db8::10', dst: '2001:db8::11', protocol: 17, transport: 'udp', sport: 50000, dport: 80, length: 56 });
  assert.deepEqual(decodeHeaders(v6(58, '8000 0000')).icmpType, 128);
  // Hop-by-hop (8 bytes) then destination options (16 bytes) then TCP.
  const ext = v6(0, '3c00 000000000000  0601 0000000000000000000000000000  d431 01bb');
  assert.deepEqual([decodeHeaders(ext).transport, decodeHeaders(ext).dport], ['tcp', 443]);
  // A fragment header: the first fragment has ports, a later one does not.
  assert.equal(decodeHeaders(v6(44, '1100 0001 12345678  c350 0050')).dport, 80);
  assert.equal(decodeHeaders(v6(44, '1100 0100 12345678  c350 0050')).fragment, true);
  // The copy ends inside the extension headers: no transport.
  assert.equal(decodeHeaders(v6(0, '3c00')).transport, undefined);

  assert.throws(() => decodeHeaders(hex('45000014')), /IPv4 header truncated/);
  assert.throws(() => decodeHeaders(hex('44000014 00000000 4006 0000 c6120010 c6120011')), /below 20/);
  assert.throws(() => decodeHeaders(hex('7500')), /IP version 7/);
  assert.throws(() => decodeHeaders(Buffer.alloc(0)), DecodeError);
  assert.throws(() => decodeHeaders(hex('6000000000000000')), /IPv6 header truncated/);
  // An endless chain of extension headers is refused, not walked.
  assert.throws(() => decodeHeaders(v6(0, '00'.repeat(8 * 20))), /extension headers/);
});

test('the drop log prefix names direction and combination; anything else is not ours', () => {
  assert.equal(dropLogPrefix('ingress', '0123456789ab'), 'nfkube in 0123456789ab');
  assert.deepEqual(parseDropLogPrefix('nfkube out 0123456789ab'), { direction: 'egress', comboId: '0123456789ab' });
  for (const p of [undefined, '', 'nfkube in', 'nfkube sideways t1', 'nfkube in T1', 'kube-router drop']) assert.equal(parseDropLogPrefix(p), undefined, String(p));
});

test('fuzz: random, truncated and mutated packet messages give DecodeError or a packet, never another exception', () => {
  const rand = mulberry32(16);
  const byte = () => Math.floor(rand() * 256);
  const view = new ClusterView('node-1');
  const drops = new DropLog({ view, modes: new PolicyModes(), denyAction: 'drop', logger: pino({ level: 'silent' }) });
  const seeds = [fullPacket(), fullPacket(hex('60000000 0010 00 40 20010db8000000000000000000000010 20010db8000000000000000000000011 3c00000000000000 0601000000000000 0000000000000000 d43101bb'))];
  let decoded = 0;
  for (let i = 0; i < 20_000; i++) {
    let bytes: Buffer;
    const seed = seeds[i % seeds.length];
    switch (i % 4) {
      case 0:
        bytes = Buffer.from(Array.from({ length: 1 + Math.floor(rand() * 200) }, byte));
        if (bytes.length >= 4) bytes.writeUInt32LE(bytes.length, 0);
        break;
      case 1:
        bytes = Buffer.from(seed.subarray(0, Math.floor(rand() * seed.length)));
        if (bytes.length >= 4) bytes.writeUInt32LE(bytes.length, 0);
        break;
      default:
        bytes = Buffer.from(seed);
        for (let k = 0, n = 1 + Math.floor(rand() * 6); k < n; k++) bytes[20 + Math.floor(rand() * (bytes.length - 20))] = byte();
    }
    try {
      for (const m of decodeNfMessages(bytes)) {
        const p = decodePacket({ ...m, type: NFULNL_PACKET_TYPE });
        drops.record(p);
        if (p.payload) decodeHeaders(p.payload);
        decoded++;
      }
    } catch (err) {
      assert.ok(err instanceof DecodeError, `case ${i}: unexpected ${(err as Error).stack}`);
    }
  }
  assert.ok(decoded > 1000, `only ${decoded} inputs decoded: the fuzz is not reaching the header decoder`);
  // The attribute parser is what rejects a bad length; the table never sees it.
  assert.throws(() => parseAttrs(hex('0900 0a00 41')), DecodeError);
});
