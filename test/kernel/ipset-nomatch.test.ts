/** ipset `nomatch` (IPSET_FLAG_NOMATCH in a member's IPSET_ATTR_CADT_FLAGS), with `ipset` as the
 * oracle: read, written, saved, restored and synced as the ipset tool does, for every type that
 * takes it, and refused for every type that does not. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IpsetClient } from '../../src/ipset/client';
import { parseElement } from '../../src/ipset/element';
import { formatSave, parseSave } from '../../src/ipset/save-format';
import { SyncInputError, syncSets } from '../../src/ipset/sync';
import { SET_TYPES, supportsNomatch } from '../../src/ipset/types';
import { Sandbox, withSandbox } from '../helpers/netns';

/** The bytes of `ipset save`, remaining timeouts (which tick) aside. */
function saved(sb: Sandbox, name?: string): string {
  return sb.run('ipset', name ? ['save', name] : ['save']).replace(/^(add .*) timeout \d+/gm, '$1 timeout T');
}

const FIXTURE = [
  'create n4 hash:net family inet hashsize 1024 maxelem 65536 timeout 100 counters comment',
  'add n4 198.18.0.0/16 timeout 50 nomatch packets 3 bytes 4 comment "an exception"',
  'add n4 198.18.5.0/24 timeout 60 packets 0 bytes 0',
  'create n6 hash:net family inet6 hashsize 1024 maxelem 65536',
  'add n6 2001:db8::/48 nomatch',
  'add n6 2001:db8:1::/64',
  'create np hash:net,port family inet hashsize 1024 maxelem 65536',
  'add np 198.18.0.0/15,tcp:80 nomatch',
  'add np 198.18.1.0/24,udp:53',
  'create ipn hash:ip,port,net family inet6 hashsize 1024 maxelem 65536 comment',
  'add ipn 2001:db8::1,tcp:443,2001:db8:2::/64 nomatch comment "x"',
  '',
].join('\n');

test('nomatch members restored by ipset read back, save byte for byte as `ipset save` prints them', async () => {
  await withSandbox(async (sb) => {
    sb.run('ipset', ['restore'], FIXTURE);
    const client = new IpsetClient(sb.socket);
    const listed = await client.list();
    const n4 = listed.sets.find((s) => s.name === 'n4')!;
    assert.deepEqual(
      n4.members.filter((m) => m.nomatch).map((m) => m.key),
      ['198.18.0.0/16'],
    );
    assert.equal(n4.members.find((m) => m.key === '198.18.5.0/24')!.nomatch, undefined);
    const order = ['n4', 'n6', 'np', 'ipn'];
    const strip = (s: string) => s.replace(/ (bucketsize|initval) \S+/g, '').replace(/^(add .*) timeout \d+/gm, '$1 timeout T');
    const ours = formatSave(order.map((n) => listed.sets.find((s) => s.name === n)!));
    assert.equal(strip(ours), strip(order.map((n) => sb.run('ipset', ['save', n])).join('')));
    assert.match(ours, /^add n4 198\.18\.0\.0\/16 timeout \d+ nomatch packets 3 bytes 4 comment "an exception"$/m);
  });
});

test('nomatch members written by nfkube: `ipset save` shows the flag and `ipset test` does not match them', async () => {
  await withSandbox(async (sb) => {
    const client = new IpsetClient(sb.socket);
    await client.create('w', 'hash:net', 'inet', { counters: true });
    await client.add('w', 'hash:net', [{ ...parseElement('hash:net', 'inet', '198.18.0.0/16'), nomatch: true }, parseElement('hash:net', 'inet', '198.18.1.0/24')]);
    await client.create('wp', 'hash:net,port', 'inet6', {});
    await client.add('wp', 'hash:net,port', [{ ...parseElement('hash:net,port', 'inet6', '2001:db8::/32,tcp:22'), nomatch: true }]);
    await client.create('wn', 'hash:ip,port,net', 'inet', {});
    await client.add('wn', 'hash:ip,port,net', [{ ...parseElement('hash:ip,port,net', 'inet', '198.18.0.1,udp:53,198.19.0.0/16'), nomatch: true }]);
    const text = sb.run('ipset', ['save']);
    assert.match(text, /^add w 198\.18\.0\.0\/16 nomatch packets 0 bytes 0$/m);
    assert.match(text, /^add w 198\.18\.1\.0\/24 packets 0 bytes 0$/m);
    assert.match(text, /^add wp 2001:db8::\/32,tcp:22 nomatch$/m);
    assert.match(text, /^add wn 198\.18\.0\.1,udp:53,198\.19\.0\.0\/16 nomatch$/m);
    // The kernel really holds an exception: a more specific plain member matches, the rest not.
    assert.throws(() => sb.run('ipset', ['test', 'w', '198.18.7.7']), /is NOT in set w/);
    sb.run('ipset', ['test', 'w', '198.18.1.7']);
    // Read back, nfkube prints what ipset prints.
    const strip = (s: string) => s.replace(/ (bucketsize|initval) \S+/g, '');
    const listed = await client.list();
    const order = ['w', 'wp', 'wn'];
    assert.equal(strip(formatSave(order.map((n) => listed.sets.find((s) => s.name === n)!))), strip(order.map((n) => sb.run('ipset', ['save', n])).join('')));
  });
});

test('`ipset save` text with nomatch parses (restore input) and round-trips; other types refuse the flag as ipset does', () => {
  const parsed = parseSave(FIXTURE);
  assert.deepEqual(parsed.get('np')!.members, [{ elem: '198.18.0.0/15,tcp:80', nomatch: true }, '198.18.1.0/24,udp:53']);
  assert.deepEqual(parsed.get('n4')!.members[0], { elem: '198.18.0.0/16', timeout: 50, nomatch: true, packets: 3n, bytes: 4n, comment: 'an exception' });
  for (const type of SET_TYPES) {
    if (supportsNomatch(type)) continue;
    const create = type === 'bitmap:port' ? `create x ${type} range 1-100` : type === 'list:set' ? `create x ${type}` : `create x ${type} family inet`;
    const member = { 'hash:ip': '198.18.0.1', 'hash:ip,port': '198.18.0.1,tcp:80', 'hash:ip,port,ip': '198.18.0.1,tcp:80,198.18.0.2', 'list:set': 'y', 'bitmap:port': '5' }[type as string]!;
    assert.throws(() => parseSave(`${create}\nadd x ${member} nomatch\n`), new RegExp(`line 2: add x: ${type} members cannot be nomatch`), type);
  }
});

test('syncSets compares the flag: a kernel nomatch member is made plain, a plain one nomatch, unchanged ones cost nothing', async () => {
  await withSandbox(async (sb) => {
    sb.run('ipset', ['restore'], ['create t-a hash:net family inet hashsize 1024 maxelem 65536', 'add t-a 10.1.0.0/16 nomatch', 'add t-a 198.18.0.0/24', ''].join('\n'));
    const client = new IpsetClient(sb.socket);
    // The case: a plain desired member over a kernel nomatch one.
    await syncSets(client, { 't-a': { type: 'hash:net', members: ['10.1.0.0/16', '198.18.0.0/24'] } }, { prefix: 't-' });
    assert.deepEqual(saved(sb, 't-a').split('\n').filter((l) => l.startsWith('add')).sort(), ['add t-a 10.1.0.0/16', 'add t-a 198.18.0.0/24']);

    // And the other way, for each type that takes the flag.
    const desired = {
      't-a': { type: 'hash:net' as const, members: ['10.1.0.0/16', { elem: '198.18.0.0/24', nomatch: true }] },
      't-b': { type: 'hash:net,port' as const, family: 'inet6' as const, members: [{ elem: '2001:db8::/32,tcp:22', nomatch: true }] },
      't-c': { type: 'hash:ip,port,net' as const, members: [{ elem: '198.18.0.1,udp:53,198.19.0.0/16', nomatch: true }, '198.18.0.1,udp:53,198.19.1.0/24'] },
    };
    for (const mode of ['incremental', 'replace'] as const) {
      await syncSets(client, desired, { prefix: 't-', mode });
      const text = sb.run('ipset', ['save']);
      assert.match(text, /^add t-a 198\.18\.0\.0\/24 nomatch$/m, mode);
      assert.match(text, /^add t-a 10\.1\.0\.0\/16$/m, mode);
      assert.match(text, /^add t-b 2001:db8::\/32,tcp:22 nomatch$/m, mode);
      assert.match(text, /^add t-c 198\.18\.0\.1,udp:53,198\.19\.0\.0\/16 nomatch$/m, mode);
      assert.match(text, /^add t-c 198\.18\.0\.1,udp:53,198\.19\.1\.0\/24$/m, mode);
      const again = await syncSets(client, desired, { prefix: 't-', mode });
      assert.equal(again.messages.mutating, 0, `${mode}: nothing to change`);
    }
    // Back to plain: every flag is cleared.
    await syncSets(client, { 't-a': { type: 'hash:net', members: ['10.1.0.0/16', '198.18.0.0/24'] } }, { prefix: 't-' });
    assert.doesNotMatch(sb.run('ipset', ['save', 't-a']), /nomatch/);

    await assert.rejects(
      syncSets(client, { 't-x': { type: 'hash:ip', members: [{ elem: '198.18.0.1', nomatch: true }] } }, { prefix: 't-' }),
      (err: unknown) => err instanceof SyncInputError && /set t-x: member "198\.18\.0\.1": hash:ip members cannot be nomatch/.test(String(err)),
    );
  });
});
