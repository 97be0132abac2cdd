/** syncSets against the kernel on random edits of member lists (moves, replacements, repeats,
 * texts other than their key, growth and shrinkage, type changes), in both modes, each run taking
 * either the state the previous run returned or a fresh read: after every run `ipset save` (the oracle) holds exactly
 * the desired members, and an unchanged list sends nothing. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { IpsetClient } from '../../src/ipset/client';
import { parseElement } from '../../src/ipset/element';
import { syncSets, SyncResult } from '../../src/ipset/sync';
import { DesiredSet, SetType } from '../../src/ipset/types';
import { mulberry32 as rng } from '../helpers/prng';
import { Sandbox, withSandbox } from '../helpers/netns';

const PREFIX = 'r-';

/** The members of every prefixed set per `ipset save`, by set, sorted. */
function kernelMembers(sb: Sandbox): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const line of sb.run('ipset', ['save']).split('\n')) {
    const [cmd, name, member] = line.split(' ');
    if (!name?.startsWith(PREFIX)) continue;
    if (cmd === 'create') out.set(name, []);
    if (cmd === 'add') out.get(name)!.push(member);
  }
  for (const m of out.values()) m.sort();
  return out;
}

test('random member edits and type changes sync exactly, in both modes, through the cached state and fresh reads', async () => {
  await withSandbox(async (sb) => {
    const client = new IpsetClient(sb.socket);
    const rand = rng(7);
    const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
    // hash:net texts may carry host bits or a /32 (not their key); hash:ip texts never differ.
    const text: Record<'hash:ip' | 'hash:net', () => string> = {
      'hash:ip': () => `198.18.0.${Math.floor(rand() * 40)}`,
      'hash:net': () => pick([`198.18.${Math.floor(rand() * 8)}.${Math.floor(rand() * 4)}/${pick([30, 31, 32])}`, `198.18.1.${Math.floor(rand() * 40)}`]),
    };
    const edits: ((l: string[], t: () => string) => string[])[] = [
      (l, t) => (l.length ? l.map((x, i) => (i === Math.floor(rand() * l.length) ? t() : x)) : [t()]), // replace one
      (l) => (l.length > 1 ? [l[1], l[0], ...l.slice(2)] : l), // swap two
      (l, t) => [...l, t()], // append
      (l) => l.slice(0, Math.max(0, l.length - 1)), // drop the last
      (l) => (l.length ? [...l, l[Math.floor(rand() * l.length)]] : l), // repeat one
      (l) => l.slice(1), // shift everything
      (l) => l, // unchanged
      (_l, t) => Array.from({ length: Math.floor(rand() * 12) }, t), // a new list
    ];
    const lists = new Map<string, { type: SetType; members: string[] }>();
    for (let i = 0; i < 4; i++) {
      const type = i % 2 === 0 ? 'hash:ip' : 'hash:net';
      lists.set(`${PREFIX}${i}`, { type, members: Array.from({ length: 10 }, text[type]) });
    }
    let last: SyncResult | undefined;
    for (let round = 0; round < 60; round++) {
      const changed = new Set<string>();
      for (const [name, l] of lists) {
        if (rand() < 0.5) continue;
        if (rand() < 0.1) {
          // A change of type: the set is replaced by swap (or destroy and rename).
          l.type = l.type === 'hash:ip' ? 'hash:net' : 'hash:ip';
          l.members = Array.from({ length: Math.floor(rand() * 6) }, text[l.type as 'hash:ip' | 'hash:net']);
          changed.add(name);
          continue;
        }
        const next = pick(edits)(l.members, text[l.type as 'hash:ip' | 'hash:net']);
        const keys = (xs: string[]) => [...new Set(xs.map((m) => parseElement(l.type, 'inet', m).key))].sort().join(' ');
        if (keys(next) !== keys(l.members)) changed.add(name);
        l.members = next;
      }
      const desired: Record<string, DesiredSet> = Object.fromEntries([...lists].map(([n, l]) => [n, { type: l.type, members: [...l.members] }]));
      const useCache = last?.state !== undefined && rand() < 0.7;
      const mode = rand() < 0.3 ? 'replace' : 'incremental';
      last = await syncSets(client, desired, { prefix: PREFIX, mode, cache: useCache ? last!.state : undefined });
      const where = `round ${round} (${mode}, ${useCache ? 'cached state' : 'fresh read'})`;
      assert.deepEqual(last.failures, [], where);
      const kernel = kernelMembers(sb);
      assert.deepEqual([...kernel.keys()].sort(), [...lists.keys()].sort(), `${where}: no temporary set left`);
      for (const [name, l] of lists) {
        assert.match(sb.run('ipset', ['list', '-t', name]), new RegExp(`Type: ${l.type}\n`), `${where}: ${name} type`);
        assert.deepEqual(kernel.get(name), [...new Set(l.members.map((m) => parseElement(l.type, 'inet', m).key))].sort(), `${where}: ${name} from ${l.members.join(' ')}`);
      }
      if (round > 0 && changed.size === 0) assert.equal(last.messages.mutating, 0, `${where}: nothing changed`);
    }
  });
});
