/** Issue 26 items 3, 5, 6, the pure parts: the table's recorded options as user data TLVs, the
 * record's text, "did you mean", the text log line, the drop ring, /proc/net/netlink, metric text. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { AttrWriter } from '../../src/netlink/attr';
import { decodeTextUdata, textUdata, UDATA_TABLE_COMMENT, UDATA_TABLE_NFKUBE_OPTIONS, commentUdata, decodeComment } from '../../src/nft/objects/codec';
import { encodeTable } from '../../src/nft/objects/table';
import { policyRecord, proxyRecord, readRecord, withRecorded, POLICY_RECORDED } from '../../src/cli/table-record';
import { closest } from '../../src/options/usage-error';
import { editDistance } from '../../src/edit-distance';
import { textLine } from '../../src/log-format';
import { DropRing } from '../../src/policy/droplog/drop-ring';
import type { DropRecord } from '../../src/policy/droplog/drop-log';
import { netlinkInode } from '../../src/cli/table-holder';
import { metricSamples } from '../../src/cli/commands/status';
import { recordProblem } from '../../src/pipeline/table-writer';

test('recorded options: a TLV of their own beside the comment, read back whole; too much user data is refused', () => {
  const options = policyRecord({ denyAction: 'reject', log: { group: 7, rate: 10, burst: 5 }, policyMode: 'audit' });
  assert.equal(options, '--deny-action=reject --log-drops --log-group=7 --log-rate=10 --log-burst=5 --policy-mode=audit');
  const udata = Buffer.concat([commentUdata(UDATA_TABLE_COMMENT, 'managed by nfkube', 'c'), textUdata(UDATA_TABLE_NFKUBE_OPTIONS, options)]);
  assert.equal(decodeComment(udata, UDATA_TABLE_COMMENT), 'managed by nfkube', 'the comment nft shows is unchanged');
  assert.equal(decodeTextUdata(udata, UDATA_TABLE_NFKUBE_OPTIONS), options);
  assert.equal(decodeTextUdata(udata.subarray(0, udata.length - 1), UDATA_TABLE_NFKUBE_OPTIONS), undefined, 'a cut TLV is not read');
  const long = 'x'.repeat(300);
  assert.equal(decodeTextUdata(textUdata(UDATA_TABLE_NFKUBE_OPTIONS, long), UDATA_TABLE_NFKUBE_OPTIONS), long, 'split over TLVs of at most 255 bytes');
  assert.throws(() => encodeTable(new AttrWriter(), { family: 'inet', name: 't', comment: 'managed by nfkube', options: long }), /table t: user data of \d+ bytes .* exceeds the kernel's 256/);
});

test('records: one setting, one text; read back as option values; the given value wins with a note', () => {
  assert.equal(policyRecord({ denyAction: 'drop' }), '--deny-action=drop');
  assert.equal(proxyRecord({ table: 'p', clusterCIDRs: ['198.18.0.0/16'], nodePortAddresses: 'primary', masqueradeAll: true }), '--cluster-cidr=198.18.0.0/16 --masquerade-all');
  assert.deepEqual(readRecord('--deny-action=reject --log-drops --log-group=7 --from-a-newer-agent=1', POLICY_RECORDED), { 'deny-action': 'reject', 'log-drops': true, 'log-group': '7' });
  const notes: string[] = [];
  assert.deepEqual(withRecorded({ 'deny-action': 'drop' }, { 'deny-action': 'reject', 'log-drops': true }, 'inet nfkube', (n) => notes.push(n)), { 'deny-action': 'drop', 'log-drops': true });
  assert.deepEqual(notes, ['--deny-action drop differs from reject, which the agent recorded in table inet nfkube; using the given value']);
  assert.equal(recordProblem({ family: 'inet', name: 'n' }, ''), undefined, 'no record and an empty one are the same');
  assert.match(recordProblem({ family: 'inet', name: 'n', options: '--deny-action=drop' }, '--deny-action=reject') ?? '', /records the options "--deny-action=drop", this agent runs with "--deny-action=reject"/);
});

test('did you mean: the closest name within a third of the length, else nothing', () => {
  assert.equal(editDistance('manifest', 'manifests'), 1);
  assert.equal(closest('manifest', ['manifests', 'node-name', 'table']), 'manifests');
  assert.equal(closest('rendr', ['render', 'verify']), 'render');
  assert.equal(closest('completely-different', ['table', 'once']), undefined);
});

test('text log line: time, level, message, then the other fields as key=value', () => {
  const line = textLine(JSON.stringify({ level: 'warn', time: Date.UTC(2026, 0, 1, 12, 0, 1, 123), pid: 1, hostname: 'h', component: 'nfkube', node: 'n1', objects: ['Pod a/b'], msg: 'no pods' }));
  assert.equal(line, '12:00:01.123 WARN  no pods node=n1 objects=["Pod a/b"]\n');
  assert.equal(textLine('not json'), 'not json', 'what is not a pino line passes as it is');
});

test('drop ring: bounded, oldest first, since a time; followers see each new record', () => {
  const ring = new DropRing(3);
  const drop = (dport: number) => ({ verdict: 'drop', direction: 'ingress', pod: 'x/b', src: 'x/a', dst: 'x/b', srcAddr: '198.18.0.1', dstAddr: '198.18.0.2', protocol: 'tcp', dport, policies: [] }) as DropRecord;
  const followed: number[] = [];
  const stop = ring.follow((d) => followed.push(d.drop.dport!));
  for (let i = 1; i <= 5; i++) ring.push(drop(i), i * 1000);
  stop();
  ring.push(drop(6), 6000);
  assert.deepEqual(ring.since(0).map((d) => d.drop.dport), [4, 5, 6], 'the three newest, oldest first');
  assert.deepEqual(ring.since(5000).map((d) => d.drop.dport), [5, 6]);
  assert.deepEqual(followed, [1, 2, 3, 4, 5]);
});

test('the holder of a table: its netfilter netlink port in /proc/net/netlink gives the socket inode', () => {
  const text = `sk               Eth Pid        Groups   Rmem     Wmem     Dump  Locks    Drops    Inode
0000000000000000 0   4242       00000000 0        0        0     2        0        111
0000000000000000 12  4242       00000000 0        0        0     2        0        222
0000000000000000 12  4294967279 00000000 0        0        0     2        0        333
`;
  assert.equal(netlinkInode(text, 4242), 222, 'the NETLINK_NETFILTER socket, not the route socket with the same port');
  assert.equal(netlinkInode(text, 4294967279), 333, "an autobound port (the kernel prints it unsigned)");
  assert.equal(netlinkInode(text, 9), undefined);
});

test('metric samples from the Prometheus text format', () => {
  const samples = metricSamples('# HELP x y\nnfkube_pods 3\nnfkube_ipam_blocks_owned{pool="p",family="ipv4"} 2\n');
  assert.deepEqual(samples, [
    { name: 'nfkube_pods', labels: {}, value: 3 },
    { name: 'nfkube_ipam_blocks_owned', labels: { pool: 'p', family: 'ipv4' }, value: 2 },
  ]);
});
