/** The library, as a user meets it: values that do not fit a set are refused before anything is
 * sent, with a typed error naming set, element and both types; a refused batch names the
 * reference that does not exist; set flags are optional and exported; the iifname/oifname, mark
 * and ct mark builders produce exactly what nft does; and equivalent encodings compare equal. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { commit, listRules, listSets, NetlinkError, NFT_SET_INTERVAL, nftBuild as b, NftSet, SetTypeError, Transaction, ruleKey, canonicalExprs } from '../../src/netfilter';
import { sameRuleBody } from '../../src/nft/canonical';
import { ipv4, ipv6 } from '../../src/net/ip-bytes';
import { withSandbox } from '../helpers/netns';

const T = { family: 'inet' as const, name: 'lib' };
const v4set: NftSet = { family: 'inet', table: 'lib', name: 'v4set', key: ['ipv4_addr'] };
const chain = { family: 'inet' as const, table: 'lib', name: 'c' };

test('an element whose key does not fit the set is refused before sending, naming set, element and both types', async () => {
  await withSandbox(async (sb) => {
    const tx = new Transaction().addTable(T).addSet(v4set).addElements(v4set, [{ key: ipv4('198.18.0.1') }, { key: ipv6('2001:db8::1') }]);
    await assert.rejects(commit(sb.socket, tx), (err: unknown) => {
      assert.ok(err instanceof SetTypeError);
      assert.equal(err.set, 'inet lib v4set');
      assert.equal(err.element, 'element 0x20010db8000000000000000000000001');
      assert.equal(err.setType, 'ipv4_addr (4 bytes)');
      assert.equal(err.valueType, '16 bytes (ipv6_addr?)');
      assert.match(err.message, /^set inet lib v4set: element 0x20010db8.* is 16 bytes \(ipv6_addr\?\), but the set's key type is ipv4_addr \(4 bytes\)$/);
      return true;
    });
    assert.equal(sb.run('nft', ['list', 'tables']), '', 'nothing was sent');
    // A map's data is checked too.
    const m: NftSet = { family: 'inet', table: 'lib', name: 'm', key: ['ipv4_addr'], data: 'mark' };
    assert.throws(() => new Transaction().addSet(m).addElements(m, [{ key: ipv4('198.18.0.1'), data: Buffer.alloc(2) }]).check(), /set inet lib m: element 198\.18\.0\.1 .*is 2 bytes.*data type is mark \(4 bytes\)/);
  });
});

test('ip6 saddr @v4set is refused (nft refuses it too), naming the set, the match and both types', async () => {
  await withSandbox(async (sb) => {
    assert.throws(
      () => sb.run('nft', ['-f', '-'], 'table inet o { set v4 { type ipv4_addr; }; chain c { ip6 saddr @v4 accept; }; }'),
      /mismatch|datatype/i,
      'nft itself refuses the family mismatch',
    );
    const tx = new Transaction().addTable(T).addSet(v4set).addChain(chain).addRule({ ...chain, chain: 'c', exprs: [...b.matchAddrInSet('ip6 saddr', 'v4set'), b.accept()] });
    await assert.rejects(commit(sb.socket, tx), (err: unknown) => {
      assert.ok(err instanceof SetTypeError);
      assert.deepEqual([err.set, err.element, err.setType, err.valueType], ['inet lib v4set', 'ip6 saddr', 'ipv4_addr', 'ipv6_addr']);
      return true;
    });
    assert.equal(sb.run('nft', ['list', 'tables']), 'table inet o\n'.replace(/.*\n/, ''), 'nothing was sent');
    // The right family commits.
    await commit(sb.socket, new Transaction().addTable(T).addSet(v4set).addChain(chain).addRule({ ...chain, chain: 'c', exprs: [...b.matchAddrInSet('ip saddr', 'v4set'), b.accept()] }));
    // A set already in the kernel: checked with checkKernelSets, before anything is sent.
    const later = new Transaction().addRule({ ...chain, chain: 'c', exprs: [...b.matchAddrInSet('ip6 daddr', 'v4set'), b.drop()] });
    const rulesBefore = sb.run('nft', ['list', 'chain', 'inet', 'lib', 'c']);
    await assert.rejects(commit(sb.socket, later, { checkKernelSets: true }), (err: unknown) => err instanceof SetTypeError && err.element === 'ip6 daddr' && err.setType === 'ipv4_addr');
    assert.equal(sb.run('nft', ['list', 'chain', 'inet', 'lib', 'c']), rulesBefore, 'nothing was sent');
  });
});

test('ENOENT names the missing reference: a looked-up set, a jump target, the set of elements, the table', async () => {
  await withSandbox(async (sb) => {
    await commit(sb.socket, new Transaction().addTable(T).addChain(chain).addSet(v4set));
    const refused = async (tx: Transaction, missing: RegExp) =>
      assert.rejects(commit(sb.socket, tx), (err: unknown) => {
        assert.ok(err instanceof NetlinkError, String(err));
        assert.equal(err.code, 'ENOENT');
        assert.match(err.missing ?? '', missing);
        assert.ok(err.message.includes(`ENOENT: ${err.missing}`), err.message);
        if (err.extAck) assert.ok(err.message.includes(err.extAck), 'the kernel text is carried');
        return true;
      });
    await refused(new Transaction().addRule({ ...chain, chain: 'c', exprs: [...b.matchAddrInSet('ip saddr', 'nope'), b.accept()] }), /^set nope in table inet lib \(looked up\) does not exist/);
    await refused(new Transaction().addRule({ ...chain, chain: 'c', exprs: [b.jump('nowhere')] }), /^chain nowhere in table inet lib \(jump target\) does not exist/);
    await refused(new Transaction().addRule({ ...chain, chain: 'absent', exprs: [b.accept()] }), /^chain absent in table inet lib \(its chain\) does not exist/);
    const ghost: NftSet = { ...v4set, name: 'ghost' };
    await refused(new Transaction().addElements(ghost, [{ key: ipv4('198.18.0.1') }]), /^set ghost in table inet lib \(the set\) does not exist/);
    await refused(new Transaction().addChain({ family: 'inet', table: 'nosuch', name: 'x' }), /^table inet nosuch \(its table\) does not exist/);
    // Resolution follows the transaction: a set deleted earlier in it is missing for later rules.
    await refused(new Transaction().deleteSet(v4set).addRule({ ...chain, chain: 'c', exprs: [...b.matchAddrInSet('ip saddr', 'v4set'), b.accept()] }), /^set v4set in table inet lib \(looked up\) does not exist/);
  });
});

test('set flags are optional (a plain set by default) and exported from the package root', async () => {
  await withSandbox(async (sb) => {
    const ranges: NftSet = { family: 'inet', table: 'lib', name: 'ranges', key: ['ipv4_addr'], flags: NFT_SET_INTERVAL };
    await commit(sb.socket, new Transaction().addTable(T).addSet(v4set).addSet(ranges).addElements(ranges, [{ key: ipv4('198.18.0.0'), keyEnd: ipv4('198.18.0.255') }]));
    const sets = new Map((await listSets(sb.socket, 'inet', 'lib')).map((s) => [s.name, s]));
    assert.equal(sets.get('v4set')!.flags, 0);
    assert.equal(sets.get('ranges')!.flags! & NFT_SET_INTERVAL, NFT_SET_INTERVAL);
    assert.match(sb.run('nft', ['list', 'set', 'inet', 'lib', 'ranges']), /flags interval/);
  });
});

const BUILT: [string, ReturnType<typeof b.accept>[]][] = [
  ['iifname "eth0" accept', [...b.iifname('eth0'), b.accept()]],
  ['oifname "veth*" accept', [...b.oifname('veth*'), b.accept()]],
  ['meta mark 0x00000010 accept', [...b.matchMark(0x10), b.accept()]],
  ['meta mark & 0x0000ff00 == 0x00000100 accept', [...b.matchMark(0x100, 0xff00), b.accept()]],
  ['meta mark != 0x00000003 drop', [...b.matchMark(3, undefined, 'neq'), b.drop()]],
  ['meta mark set 0x00000020', b.setMark(0x20)],
  ['ct mark 0x00000005 accept', [...b.matchCtMark(5), b.accept()]],
  ['ct mark & 0x0000000f != 0x00000001', b.matchCtMark(1, 0xf, 'neq')],
  ['ct mark set 0x00000007', b.setCtMark(7)],
];

test('iifname/oifname, mark and ct mark builders: nft lists what they commit as the same text, and reads nft\'s own rule back the same', async () => {
  await withSandbox(async (sb) => {
    const tx = new Transaction().addTable(T).addChain(chain);
    for (const [, exprs] of BUILT) tx.addRule({ ...chain, chain: 'c', exprs });
    await commit(sb.socket, tx);
    const listed = sb.run('nft', ['list', 'chain', 'inet', 'lib', 'c']).split('\n').map((l) => l.trim()).filter((l) => l && !/^(table|chain|\})/.test(l));
    assert.deepEqual(listed, BUILT.map(([text]) => text));
    sb.run('nft', ['-f', '-'], `table inet lib { chain n { ${BUILT.map(([text]) => text).join('; ')}; }; }`);
    const fromNft = await listRules(sb.socket, 'inet', 'lib', 'n');
    assert.equal(fromNft.length, BUILT.length);
    fromNft.forEach((r, i) => assert.deepEqual(canonicalExprs(r.exprs), canonicalExprs(BUILT[i][1]), BUILT[i][0]));
    assert.throws(() => b.iifname('a-name-that-is-too-long'), /iifname "a-name-that-is-too-long": an interface name is 1-15 bytes/);
    assert.throws(() => b.matchMark(2 ** 32), /meta mark: 4294967296 is not a 32-bit unsigned integer/);
  });
});

test('icmpv6 type 133-136 as nft writes it (cmp gte, cmp lte) and as a builder does (range) compare equal', async () => {
  await withSandbox(async (sb) => {
    sb.run('nft', ['-f', '-'], 'table inet lib { chain c { icmpv6 type 133-136 accept; }; }');
    const [fromNft] = await listRules(sb.socket, 'inet', 'lib', 'c');
    assert.deepEqual(fromNft.exprs.filter((e) => e.type === 'cmp').map((e) => e.type === 'cmp' && e.op).slice(-2), ['gte', 'lte'], 'nft wrote two comparisons');
    const built = { exprs: [...b.icmpv6NeighborDiscovery(), b.accept()] };
    assert.ok(sameRuleBody(fromNft, built));
    assert.equal(ruleKey({ exprs: fromNft.exprs }), ruleKey(built));
    assert.deepEqual(canonicalExprs(fromNft.exprs), canonicalExprs(built.exprs));
    // A lone comparison is left alone.
    assert.notEqual(ruleKey({ exprs: fromNft.exprs.slice(0, -2) }), ruleKey({ exprs: built.exprs.slice(0, -1) }));
  });
});

test('render | nft -f, then verify: no difference', async () => {
  await withSandbox(async (sb) => {
    const root = join(__dirname, '..', '..', '..');
    const bin = join(root, 'bin', 'nfkube');
    const examples = join(root, 'examples');
    for (const deny of ['drop', 'reject']) {
      const rendered = execFileSync(process.execPath, [bin, 'render', '--manifests', examples, '--node-name', 'node-1', '--deny-action', deny], { encoding: 'utf8' });
      sb.run('nft', ['-f', '-'], `add table inet nfkube\ndelete table inet nfkube\n${rendered}`);
      const out = sb.run(process.execPath, [bin, 'verify', '--manifests', examples, '--node-name', 'node-1', '--deny-action', deny]);
      assert.match(out, /matches the desired state/, `${deny}: ${out}`);
    }
  });
});
