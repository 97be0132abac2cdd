import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IpsetClient } from '../../src/ipset/client';
import { parseElement } from '../../src/ipset/element';
import { IpsetError } from '../../src/ipset/errors';
import { formatSave } from '../../src/ipset/save-format';
import { Element, SetFamily, SetOptions, SetType } from '../../src/ipset/types';
import { Sandbox, withSandbox } from '../helpers/netns';

const MEMBERS: Record<SetType, Partial<Record<SetFamily, string[]>>> = {
  'hash:ip': { inet: ['198.18.0.1', '198.18.0.2'], inet6: ['2001:db8::1', '2001:db8:0:1::1'] },
  'hash:net': { inet: ['198.18.0.0/24', '198.18.3.3', '198.19.0.0/16'], inet6: ['2001:db8::/64', '2001:db8:1::1', '2001:db8:0:0:1::/80'] },
  'hash:ip,port': { inet: ['198.18.0.1,tcp:80', '198.18.0.1,udp:53', '198.18.0.2,sctp:9', '198.18.0.2,udplite:7'], inet6: ['2001:db8::1,tcp:443', '2001:db8::2,udp:0'] },
  'hash:net,port': { inet: ['198.18.0.0/16,tcp:443', '198.18.1.1,udp:53'], inet6: ['2001:db8::/32,tcp:22', '2001:db8::5,sctp:1'] },
  'hash:ip,port,ip': { inet: ['198.18.0.1,tcp:80,198.18.0.2'], inet6: ['2001:db8::1,udp:53,2001:db8::2'] },
  'hash:ip,port,net': { inet: ['198.18.0.1,tcp:80,198.19.0.0/16', '198.18.0.1,tcp:81,198.19.0.1'], inet6: ['2001:db8::1,tcp:80,2001:db8:1::/48'] },
  'list:set': {},
  'bitmap:port': { unspec: ['1', '80', '1024'] },
};

const OPTIONS: SetOptions[] = [{}, { hashsize: 128, maxelem: 500, counters: true, comment: true }, { timeout: 600 }];

/** Compares with `ipset save`: the same bytes, except remaining timeouts, which tick. */
function sameAsIpsetSave(sb: Sandbox, ours: string): void {
  const strip = (s: string) => s.replace(/^(add .*) timeout \d+/gm, '$1 timeout T');
  assert.equal(strip(ours), strip(sb.run('ipset', ['save'])));
}

function withExtensions(e: Element, o: SetOptions, i: number): Element {
  const out = { ...e };
  if (o.comment) out.comment = `member ${i}`;
  if (o.counters) {
    out.packets = BigInt(i * 10);
    out.bytes = BigInt(i * 1000);
  }
  if (o.timeout) out.timeout = 100 + i;
  return out;
}

test('every type, family and option: what nfkube writes, `ipset save` reads identically', async () => {
  await withSandbox(async (sb) => {
    const client = new IpsetClient(sb.socket);
    let n = 0;
    for (const [type, byFamily] of Object.entries(MEMBERS) as [SetType, Partial<Record<SetFamily, string[]>>][]) {
      if (type === 'list:set') continue;
      for (const [family, members] of Object.entries(byFamily) as [SetFamily, string[]][]) {
        for (const o of OPTIONS) {
          const name = `s${n++}`;
          const options: SetOptions = type === 'bitmap:port' ? { ...o, range: { from: 1, to: 2048 }, hashsize: undefined, maxelem: undefined } : o;
          await client.create(name, type, family, options);
          await client.add(name, type, members.map((m, i) => withExtensions(parseElement(type, family, m), options, i)));
        }
      }
    }
    await client.create('lists', 'list:set', 'unspec', { size: 6, comment: true });
    await client.add('lists', 'list:set', [parseElement('list:set', 'unspec', 's0'), { ...parseElement('list:set', 'unspec', 's3'), comment: 'x' }]);
    const listed = await client.list();
    assert.equal(listed.sets.length, n + 1);
    sameAsIpsetSave(sb, formatSave(listed.sets));
    const inet6Ip = listed.sets.find((s) => s.type === 'hash:ip' && s.family === 'inet6')!;
    assert.deepEqual(inet6Ip.members.map((m) => m.key).sort(), ['2001:db8:0:1::1', '2001:db8::1']);
    const withOpts = listed.sets.find((s) => s.type === 'hash:ip,port' && s.options.counters)!;
    assert.equal(withOpts.options.maxelem, 500);
    assert.equal(withOpts.options.comment, true);
  });
});

test('what `ipset restore` writes, nfkube reads back identically (types, families, options)', async () => {
  await withSandbox(async (sb) => {
    const lines: string[] = [];
    let n = 0;
    for (const [type, byFamily] of Object.entries(MEMBERS) as [SetType, Partial<Record<SetFamily, string[]>>][]) {
      for (const [family, members] of Object.entries(byFamily) as [SetFamily, string[]][]) {
        const name = `o${n++}`;
        lines.push(type === 'bitmap:port' ? `create ${name} ${type} range 1-1024 timeout 50 counters comment` : `create ${name} ${type} family ${family} maxelem 99 counters comment`);
        members.forEach((m, i) => lines.push(`add ${name} ${m} packets ${i} bytes ${i * 3} comment "c ${i}"`));
      }
    }
    lines.push('create ol list:set size 4', 'add ol o0', 'add ol o1');
    sb.run('ipset', ['restore'], lines.join('\n') + '\n');
    const client = new IpsetClient(sb.socket);
    const listed = await client.list();
    sameAsIpsetSave(sb, formatSave(listed.sets));
    const header = await client.describe('o0');
    assert.equal(header.typeName, 'hash:ip');
    assert.equal(header.family, 'inet');
  });
});

test('refusals are named kinds naming the set and the element', async () => {
  await withSandbox(async (sb) => {
    const client = new IpsetClient(sb.socket);
    const el = (t: SetType, f: SetFamily, s: string) => parseElement(t, f, s);
    await client.create('full', 'hash:ip', 'inet', { maxelem: 2 });
    await client.create('ports', 'bitmap:port', 'unspec', { range: { from: 10, to: 20 } });
    await client.create('v6', 'hash:ip', 'inet6');
    await client.create('l', 'list:set', 'unspec');
    const expectKind = async (p: Promise<unknown>, kind: string, re: RegExp) => {
      await assert.rejects(p, (e: unknown) => {
        assert.ok(e instanceof IpsetError, String(e));
        assert.equal(e.kind, kind, e.message);
        assert.match(e.message, re);
        return true;
      });
    };
    await expectKind(client.create('full', 'hash:ip', 'inet'), 'set-exists', /set full/);
    await expectKind(client.destroy('nope'), 'set-not-found', /set nope/);
    await expectKind(client.add('nope', 'hash:ip', [el('hash:ip', 'inet', '198.18.0.1')]), 'set-not-found', /set nope/);
    await client.add('full', 'hash:ip', [el('hash:ip', 'inet', '198.18.0.1')]);
    await expectKind(client.add('full', 'hash:ip', [el('hash:ip', 'inet', '198.18.0.1')]), 'element-exists', /element 198\.18\.0\.1/);
    await expectKind(client.del('full', 'hash:ip', [el('hash:ip', 'inet', '198.18.0.9')]), 'element-missing', /element 198\.18\.0\.9/);
    // A bulk message stops at the refused element; nfkube names it.
    await expectKind(
      client.add('full', 'hash:ip', ['198.18.0.2', '198.18.0.3', '198.18.0.4'].map((s) => el('hash:ip', 'inet', s)), true),
      'hash-full',
      /set full, element 198\.18\.0\.3/,
    );
    await expectKind(
      client.add('ports', 'bitmap:port', ['11', '99', '12'].map((s) => el('bitmap:port', 'unspec', s)), true),
      'out-of-range',
      /set ports, element 99/,
    );
    // The kernel reads an IPv4 attribute in an inet6 set as a malformed message.
    await expectKind(client.add('v6', 'hash:ip', [el('hash:ip', 'inet', '198.18.0.1')]), 'protocol', /set v6/);
    await expectKind(client.add('full', 'hash:ip', [{ ...el('hash:ip', 'inet', '198.18.0.1'), timeout: 5 }], true), 'timeout-unsupported', /set full/);
    await expectKind(client.swap('full', 'ports'), 'type-mismatch', /set full/);
    await expectKind(client.add('l', 'list:set', [el('list:set', 'unspec', 'ghost')]), 'member-set-not-found', /element ghost/);
    await client.add('l', 'list:set', [el('list:set', 'unspec', 'full')]);
    await expectKind(client.destroy('full'), 'in-use', /set full/);
    assert.equal(await client.test('full', 'hash:ip', el('hash:ip', 'inet', '198.18.0.2')), true);
    assert.equal(await client.test('full', 'hash:ip', el('hash:ip', 'inet', '198.18.0.3')), false);
  });
});

test('rename, swap, flush and destroy do what ipset says they did', async () => {
  await withSandbox(async (sb) => {
    const client = new IpsetClient(sb.socket);
    await client.create('a', 'hash:ip', 'inet');
    await client.create('b', 'hash:ip', 'inet');
    await client.add('a', 'hash:ip', [parseElement('hash:ip', 'inet', '198.18.0.1')]);
    await client.swap('a', 'b');
    assert.match(sb.run('ipset', ['list', 'b']), /198\.18\.0\.1/);
    await client.rename('b', 'c');
    assert.deepEqual(sb.run('ipset', ['list', '-n']).trim().split('\n').sort(), ['a', 'c']);
    await client.flush('c');
    assert.equal((await client.get('c'))!.members.length, 0);
    await client.destroy('c');
    await client.destroy('c', true);
    assert.equal(await client.get('c'), undefined);
    assert.equal(sb.run('ipset', ['list', '-n']).trim(), 'a');
  });
});
