import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as path from 'node:path';
import { execFileSync } from 'node:child_process';
import { AttrMap } from '../../src/netlink/attr';
import { decodeNfMessages } from '../../src/netlink/message';
import { IpsetClient, IpsetTransport } from '../../src/ipset/client';
import * as C from '../../src/ipset/constants';
import { SyncInputError, syncSets, tempNamePattern } from '../../src/ipset/sync';
import { parseElement } from '../../src/ipset/element';
import { DesiredSet } from '../../src/ipset/types';
import { Sandbox, withSandbox } from '../helpers/netns';

const PREFIX = 't-';
const FOREIGN = ['create foreign hash:ip family inet hashsize 64 maxelem 10 comment', 'add foreign 198.18.9.9 comment "not ours"', 'create t_x hash:net family inet6', 'add t_x 2001:db8::/64', ''].join('\n');

function save(sb: Sandbox, name?: string): string {
  return sb.run('ipset', name ? ['save', name] : ['save']);
}

/** Foreign sets as `ipset save` prints them, to compare byte for byte. */
function foreign(sb: Sandbox): string {
  return save(sb, 'foreign') + save(sb, 't_x');
}

/** Records (command, set name) of every message, like a netlink tap. */
function recording(sb: Sandbox): { transport: IpsetTransport; log: { cmd: number; set: string }[] } {
  const log: { cmd: number; set: string }[] = [];
  const transport: IpsetTransport = {
    nextSeq: () => sb.socket.nextSeq(),
    dump: (r, w) => sb.socket.dump(r, w),
    transact: (datagrams) => {
      for (const d of datagrams) for (const m of decodeNfMessages(d)) log.push({ cmd: m.type & 0xff, set: AttrMap.parse(m.payload, 'tap').str(C.IPSET_ATTR_SETNAME) ?? '' });
      return sb.socket.transact(datagrams);
    },
  };
  return { transport, log };
}

/** The members of one set per `ipset save`, sorted. */
function members(sb: Sandbox, name: string): string[] {
  return save(sb, name)
    .split('\n')
    .filter((l) => l.startsWith('add '))
    .map((l) => l.split(' ')[2])
    .sort();
}

function kernelNames(sb: Sandbox): string[] {
  return sb.run('ipset', ['list', '-n']).trim().split('\n').filter(Boolean).sort();
}

const ips = (from: number, n: number) => Array.from({ length: n }, (_, i) => `198.18.${(from + i) >> 8}.${(from + i) & 255}`);

test('incremental sync: create, update, keep unchanged at zero mutating messages, destroy; foreign sets untouched', async () => {
  await withSandbox(async (sb) => {
    sb.run('ipset', ['restore'], FOREIGN);
    const before = foreign(sb);
    const client = new IpsetClient(sb.socket);
    const desired: Record<string, DesiredSet> = {
      't-a': { type: 'hash:ip', members: ips(1, 20) },
      't-b': { type: 'hash:net', family: 'inet6', options: { comment: true }, members: [{ elem: '2001:db8::/48', comment: 'x' }] },
      't-c': { type: 'hash:ip,port', members: ['198.18.0.1,udp:53'] },
      't-l': { type: 'list:set', members: ['t-a', 't-c'] },
    };
    let r = await syncSets(client, desired, { prefix: PREFIX });
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.created.sort(), ['t-a', 't-b', 't-c', 't-l']);
    assert.deepEqual(members(sb, 't-a'), [...ips(1, 20)].sort());
    assert.deepEqual(members(sb, 't-l'), ['t-a', 't-c']);
    assert.equal(foreign(sb), before);

    r = await syncSets(client, desired, { prefix: PREFIX });
    assert.equal(r.messages.mutating, 0);
    assert.equal(r.unchanged, 4);
    assert.equal(foreign(sb), before);

    desired['t-a'] = { type: 'hash:ip', members: ips(5, 20) };
    desired['t-b'] = { type: 'hash:net', family: 'inet6', options: { comment: true }, members: [{ elem: '2001:db8::/48', comment: 'y' }] };
    delete desired['t-c'];
    desired['t-l'] = { type: 'list:set', members: ['t-a'] };
    r = await syncSets(client, desired, { prefix: PREFIX });
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.updated.sort(), ['t-a', 't-b', 't-l']);
    assert.deepEqual(r.destroyed, ['t-c']);
    assert.equal(r.added, 4 + 1);
    assert.equal(r.deleted, 4 + 1);
    assert.deepEqual(members(sb, 't-a'), [...ips(5, 20)].sort());
    assert.match(save(sb, 't-b'), /comment "y"/);
    assert.deepEqual(kernelNames(sb), ['foreign', 't-a', 't-b', 't-l', 't_x']);
    assert.equal(foreign(sb), before);
  });
});

test('cache: a long-lived caller skips the dump and gets what a fresh run gets; a failed run returns no state', async () => {
  await withSandbox(async (sb) => {
    sb.run('ipset', ['restore'], FOREIGN);
    const before = foreign(sb);
    let dumps = 0;
    const client = new IpsetClient({
      nextSeq: () => sb.socket.nextSeq(),
      transact: (d) => sb.socket.transact(d),
      dump: (req, what) => (dumps++, sb.socket.dump(req, what)),
    });
    const desired: Record<string, DesiredSet> = {
      't-a': { type: 'hash:ip', members: ips(1, 20) },
      't-n': { type: 'hash:net', family: 'inet6', members: ['2001:db8::/48'] },
      't-old': { type: 'hash:ip', members: ['198.18.9.1'] },
    };
    let r = await syncSets(client, desired, { prefix: PREFIX });
    assert.ok(r.state);
    desired['t-a'] = { type: 'hash:ip', members: ips(6, 20) };
    desired['t-new'] = { type: 'hash:ip,port', members: ['198.18.0.1,udp:53'] };
    delete desired['t-old'];
    dumps = 0;
    r = await syncSets(client, desired, { prefix: PREFIX, cache: r.state });
    assert.deepEqual(r.failures, []);
    assert.equal(dumps, 0, 'the kernel is not read');
    assert.deepEqual(r.updated, ['t-a']);
    assert.deepEqual(r.created, ['t-new']);
    assert.deepEqual(r.destroyed, ['t-old']);
    assert.equal(r.added, 5 + 1);
    assert.equal(r.deleted, 5);
    assert.deepEqual(members(sb, 't-a'), [...ips(6, 20)].sort());
    assert.deepEqual(kernelNames(sb), ['foreign', 't-a', 't-n', 't-new', 't_x']);
    const same = await syncSets(client, desired, { prefix: PREFIX, cache: r.state });
    assert.deepEqual(same.messages, { read: 0, mutating: 0 });
    assert.equal(dumps, 0);
    assert.equal(same.unchanged, 3);
    await assert.rejects(syncSets(client, desired, { prefix: 'x-', cache: same.state }), SyncInputError);

    // Someone else removes a set: the cached run fails for it and returns no state; a fresh run converges.
    sb.run('ipset', ['destroy', 't-n']);
    desired['t-n'] = { type: 'hash:net', family: 'inet6', members: ['2001:db8::/48', '2001:db8:1::/48'] };
    r = await syncSets(client, desired, { prefix: PREFIX, cache: same.state });
    assert.equal(r.failures.length, 1);
    assert.equal(r.failures[0].kind, 'set-not-found');
    assert.equal(r.state, undefined);
    r = await syncSets(client, desired, { prefix: PREFIX });
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.created, ['t-n']);
    assert.deepEqual(members(sb, 't-n'), ['2001:db8:1::/48', '2001:db8::/48']);
    assert.equal(foreign(sb), before);
  });
});

test('cache: members moved, repeated or written differently sync exactly; a state serves one run', async () => {
  // hash:net, where a member has texts other than its key (a dotted quad is always its own).
  await withSandbox(async (sb) => {
    const client = new IpsetClient(sb.socket);
    const canonical = (texts: string[]) => [...new Set(texts.map((t) => parseElement('hash:net', 'inet', t).key))].sort();
    let list = ips(1, 20);
    let r = await syncSets(client, { 't-p': { type: 'hash:net', members: list } }, { prefix: PREFIX });
    // Steps that change few positions take the positional comparison (while the previous list
    // was canonical and without repeats); the others, the general one.
    const steps: ((l: string[]) => string[])[] = [
      (l) => [l[1], l[0], ...l.slice(2, 5), '198.18.50.1', ...l.slice(6)], // two swap places, one replaced
      (l) => [...l.slice(0, 7), '198.18.50.2/32', ...l.slice(8)], // not canonical text (a host prefix)
      canonical,
      (l) => [...l.slice(0, 3), l[10], ...l.slice(4)], // a kept member repeated: one member fewer
      canonical,
      (l) => [...l.slice(0, 2), '198.18.70.1', '198.18.70.1', ...l.slice(4)], // a new member twice
      canonical,
      (l) => [...l.slice(2), '198.18.60.1', '198.18.60.2'], // shifted: most positions differ
      (l) => l.slice(0, l.length - 2),
      (l) => [...l, '198.18.80.1'],
    ];
    for (const step of steps) {
      list = step(list);
      const before = r.state!;
      await assert.rejects(syncSets(client, { 't-p': { type: 'hash:net', members: [...list, 'bogus'] } }, { prefix: PREFIX, cache: before }), SyncInputError);
      r = await syncSets(client, { 't-p': { type: 'hash:net', members: list } }, { prefix: PREFIX, cache: before });
      assert.deepEqual(r.failures, []);
      assert.deepEqual(members(sb, 't-p'), canonical(list), list.join(' '));
      await assert.rejects(syncSets(client, { 't-p': { type: 'hash:net', members: list } }, { prefix: PREFIX, cache: before }), /already used/);
    }
    const fresh = await syncSets(client, { 't-p': { type: 'hash:net', members: list } }, { prefix: PREFIX });
    assert.equal(fresh.messages.mutating, 0);
  });
});

test('a referenced set is retained, reported, and destroyed by a later run once free', async () => {
  await withSandbox(async (sb) => {
    const client = new IpsetClient(sb.socket);
    await syncSets(client, { 't-ref': { type: 'hash:ip', members: ['198.18.0.1'] } }, { prefix: PREFIX });
    sb.run('iptables', ['-A', 'INPUT', '-m', 'set', '--match-set', 't-ref', 'src', '-j', 'DROP']);
    let r = await syncSets(client, {}, { prefix: PREFIX });
    assert.deepEqual(r.retained, ['t-ref']);
    assert.deepEqual(r.failures, []);
    assert.deepEqual(kernelNames(sb), ['t-ref']);
    sb.run('iptables', ['-F', 'INPUT']);
    r = await syncSets(client, {}, { prefix: PREFIX });
    assert.deepEqual(r.destroyed, ['t-ref']);
    assert.deepEqual(kernelNames(sb), []);
  });
});

test('option and type changes replace the set by swap (or rename when unreferenced and types differ)', async () => {
  await withSandbox(async (sb) => {
    const client = new IpsetClient(sb.socket);
    await syncSets(client, { 't-o': { type: 'hash:ip', members: ['198.18.0.1'] }, 't-t': { type: 'hash:ip', members: ['198.18.0.1'] } }, { prefix: PREFIX });
    sb.run('iptables', ['-A', 'INPUT', '-m', 'set', '--match-set', 't-o', 'src', '-j', 'DROP']);
    const r = await syncSets(
      client,
      { 't-o': { type: 'hash:ip', options: { maxelem: 100, counters: true }, members: ['198.18.0.2'] }, 't-t': { type: 'hash:net', members: ['198.18.0.0/24'] } },
      { prefix: PREFIX },
    );
    assert.deepEqual(r.failures, []);
    assert.deepEqual(r.replaced.sort(), ['t-o', 't-t']);
    assert.match(save(sb, 't-o'), /^create t-o hash:ip family inet hashsize \d+ maxelem 100 counters/);
    assert.deepEqual(members(sb, 't-o'), ['198.18.0.2']);
    assert.match(save(sb, 't-t'), /^create t-t hash:net/);
    assert.deepEqual(kernelNames(sb), ['t-o', 't-t']);
    // A referenced set cannot change type: reported, old set kept, no temporary left.
    const r2 = await syncSets(client, { 't-o': { type: 'hash:net', members: ['198.18.0.0/24'] }, 't-t': { type: 'hash:net', members: ['198.18.0.0/24'] } }, { prefix: PREFIX });
    assert.equal(r2.failures.length, 1);
    assert.equal(r2.failures[0].kind, 'type-mismatch');
    assert.deepEqual(kernelNames(sb), ['t-o', 't-t']);
    sb.run('iptables', ['-F', 'INPUT']);
  });
});

test('replace mode: changed sets swapped via one reused temporary set per kind, destroyed at the end', async () => {
  await withSandbox(async (sb) => {
    const { transport, log } = recording(sb);
    const client = new IpsetClient(transport);
    const desired: Record<string, DesiredSet> = {};
    for (let i = 0; i < 10; i++) desired[`t-v4-${i}`] = { type: 'hash:ip', members: ips(i * 10, 10) };
    for (let i = 0; i < 5; i++) desired[`t-v6-${i}`] = { type: 'hash:ip', family: 'inet6', members: [`2001:db8::${i}`] };
    desired['t-same'] = { type: 'hash:ip', members: ['198.18.200.1'] };
    await syncSets(client, desired, { prefix: PREFIX, mode: 'replace' });
    for (let i = 0; i < 10; i++) desired[`t-v4-${i}`] = { type: 'hash:ip', members: ips(i * 10 + 3, 10) };
    for (let i = 0; i < 5; i++) desired[`t-v6-${i}`] = { type: 'hash:ip', family: 'inet6', members: [`2001:db8::${i}`, '2001:db8::ff'] };
    log.length = 0;
    const r = await syncSets(client, desired, { prefix: PREFIX, mode: 'replace' });
    assert.deepEqual(r.failures, []);
    assert.equal(r.replaced.length, 15);
    assert.equal(r.unchanged, 1);
    const temp = tempNamePattern(PREFIX);
    const creates = log.filter((m) => m.cmd === C.IPSET_CMD_CREATE);
    assert.equal(creates.length, 2, 'one temporary set per (type, family, options)');
    assert.ok(creates.every((m) => temp.test(m.set)));
    assert.equal(log.filter((m) => m.cmd === C.IPSET_CMD_SWAP).length, 15);
    assert.equal(log.filter((m) => m.set === 't-same').length, 0, 'an unchanged set costs no message');
    assert.equal(log.filter((m) => m.cmd === C.IPSET_CMD_DESTROY).length, 2);
    assert.ok(kernelNames(sb).every((n) => !temp.test(n)));
    for (let i = 0; i < 10; i++) assert.deepEqual(members(sb, `t-v4-${i}`), [...ips(i * 10 + 3, 10)].sort());
    assert.deepEqual(members(sb, 't-v6-3'), ['2001:db8::3', '2001:db8::ff']);
  });
});

test('bad desired state is refused whole and the kernel is unchanged', async () => {
  await withSandbox(async (sb) => {
    sb.run('ipset', ['restore'], FOREIGN);
    const client = new IpsetClient(sb.socket);
    await syncSets(client, { 't-a': { type: 'hash:ip', members: ['198.18.0.1'] } }, { prefix: PREFIX });
    const before = save(sb);
    const bad: Record<string, DesiredSet> = {
      't-a': { type: 'hash:ip', members: ['198.18.0.2', '2001:db8::1'] },
      't-p': { type: 'hash:ip,port', members: ['198.18.0.1,tcp:65536'] },
      't-q': { type: 'hash:nope' as never, members: [] },
      'u-outside': { type: 'hash:ip', members: [] },
    };
    await assert.rejects(syncSets(client, bad, { prefix: PREFIX }), (e: unknown) => {
      assert.ok(e instanceof SyncInputError);
      assert.match(e.message, /set t-a: member "2001:db8::1": IPv6 address 2001:db8::1 in an inet set/);
      assert.match(e.message, /set t-p: member "198.18.0.1,tcp:65536": port "65536"/);
      assert.match(e.message, /set t-q: unsupported type "hash:nope"/);
      assert.match(e.message, /set u-outside: name does not start with the prefix/);
      return true;
    });
    assert.equal(save(sb), before);
  });
});

const BIN = path.resolve(__dirname, '..', '..', '..', 'bin', 'nfkube');

function cli(sb: Sandbox, args: string[], input = ''): { status: number; stdout: string; stderr: string } {
  try {
    const stdout = execFileSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, BIN, 'ipset', ...args], { input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });
    return { status: 0, stdout, stderr: '' };
  } catch (err) {
    const e = err as { status: number; stdout: string; stderr: string };
    return { status: e.status, stdout: e.stdout, stderr: e.stderr };
  }
}

test('CLI: restore applies per set without touching others; save prints what `ipset save` prints', async () => {
  await withSandbox(async (sb) => {
    sb.run('ipset', ['restore'], FOREIGN);
    const before = foreign(sb);
    const input = [
      'create t-a hash:ip family inet hashsize 64 maxelem 100 counters comment',
      'add t-a 198.18.0.1 packets 1 bytes 2 comment "one"',
      'add t-a 198.18.0.2',
      'create t-h bitmap:port range 1-1024',
      'add t-h 80',
      'create t-l list:set size 4',
      'add t-l t-a',
      '',
    ].join('\n');
    for (const mode of ['incremental', 'replace']) {
      const r = cli(sb, ['restore', '--mode', mode], input);
      assert.equal(r.status, 0, r.stderr);
      assert.equal(cli(sb, ['save']).stdout, save(sb));
      assert.equal(foreign(sb), before);
    }
    assert.deepEqual(members(sb, 't-a'), ['198.18.0.1', '198.18.0.2']);
    const changed = input.replace('add t-a 198.18.0.2', 'add t-a 198.18.0.3');
    assert.equal(cli(sb, ['restore'], changed).status, 0);
    assert.deepEqual(members(sb, 't-a'), ['198.18.0.1', '198.18.0.3']);
    assert.equal(cli(sb, ['save', '--prefix', 't-']).stdout, save(sb, 't-a') + save(sb, 't-h') + save(sb, 't-l'));
    // With --prefix, prefixed sets the input does not create are removed; others stay.
    assert.equal(cli(sb, ['restore', '--prefix', 't-'], 'create t-a hash:ip\n').status, 0);
    assert.deepEqual(kernelNames(sb), ['foreign', 't-a', 't_x']);
    assert.equal(foreign(sb), before);
  });
});

test('CLI: bad input gives line-numbered errors and applies nothing', async () => {
  await withSandbox(async (sb) => {
    sb.run('ipset', ['restore'], FOREIGN);
    const before = save(sb);
    const bad = [
      'create t-a hash:ip family inet',
      'add t-a 198.18.0.1',
      'add t-a 2001:db8::1',
      'create t-b hash:magic',
      'create t-p hash:ip,port',
      'add t-p 198.18.0.1,tcp:99999',
      'create t-m bitmap:port range 10-20',
      'add t-m 21',
      'create t-q hash:ip family',
      'add t-a 198.18.0.1 timeout 5',
      'bogus line',
      '',
    ].join('\n');
    const r = cli(sb, ['restore'], bad);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /nothing applied/);
    for (const line of [3, 4, 6, 8, 9, 10, 11]) assert.match(r.stderr, new RegExp(`line ${line}: `));
    assert.doesNotMatch(r.stderr, /line (1|2|5|7): /);
    assert.match(r.stderr, /line 3: .*IPv6 address 2001:db8::1 in an inet set/);
    assert.match(r.stderr, /line 6: .*port "99999"/);
    assert.equal(save(sb), before);
    const p = cli(sb, ['restore', '--prefix', 'x-'], 'create t-a hash:ip\n');
    assert.equal(p.status, 1);
    assert.match(p.stderr, /line 1: set t-a does not start with --prefix "x-"/);
    assert.equal(save(sb), before);
  });
});
