/** syncSets' plan and apply steps with no kernel: a client that records the op lists it is given
 * and refuses what a test says. The order of ops is what keeps every member kept across a change
 * present: creates and additions before deletions and destroys, a swap only after its fill. */

import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { IpsetClient, IpsetOp, OpFailure } from '../../src/ipset/client';
import { IpsetError } from '../../src/ipset/errors';
import { syncSets, type SyncOptions } from '../../src/ipset/sync';
import type { DesiredSet } from '../../src/ipset/types';

const PREFIX = 'u-';

/** An empty kernel behind the client's two calls a run makes; `refuse` names ops to fail. */
function recordingClient(refuse: (op: IpsetOp) => number | undefined = () => undefined) {
  const batches: IpsetOp[][] = [];
  const client = {
    sent: { read: 0, mutating: 0 },
    async list() {
      client.sent.read++;
      return { sets: [], otherTypes: [] };
    },
    async run(ops: IpsetOp[]): Promise<OpFailure[]> {
      client.sent.mutating += ops.length;
      batches.push(ops);
      const failures: OpFailure[] = [];
      ops.forEach((op, index) => {
        const errno = refuse(op);
        if (errno !== undefined) failures.push({ index, error: new IpsetError({ errno, code: 'EBUSY', op: op.op, set: op.name }) });
      });
      return failures;
    },
  };
  return { client: client as unknown as IpsetClient, batches };
}

/** An op as `verb name [elements]`. */
function show(op: IpsetOp): string {
  const detail = op.op === 'add' || op.op === 'del' ? ` ${op.elements.map((e) => e.key).join(',')}` : op.op === 'swap' ? ` ${op.with}` : op.op === 'rename' ? ` ${op.to}` : '';
  return `${op.op} ${op.name}${detail}`;
}

const hashIp = (...members: string[]): DesiredSet => ({ type: 'hash:ip', members });

async function twoRuns(first: Record<string, DesiredSet>, second: Record<string, DesiredSet>, opts: Omit<SyncOptions, 'prefix' | 'cache'> = {}, refuse?: (op: IpsetOp) => number | undefined) {
  const { client, batches } = recordingClient(refuse);
  const start = await syncSets(client, first, { prefix: PREFIX });
  batches.length = 0;
  const result = await syncSets(client, second, { prefix: PREFIX, cache: start.state, ...opts });
  return { result, batches: batches.map((b) => b.map(show)) };
}

test('a fresh run creates and fills every set in one list of ops, lists after the sets they hold', async () => {
  const { client, batches } = recordingClient();
  const result = await syncSets(client, { 'u-list': { type: 'list:set', members: ['u-a'] }, 'u-a': hashIp('198.18.0.1', '198.18.0.2') }, { prefix: PREFIX });
  assert.deepStrictEqual(batches.map((b) => b.map(show)), [['create u-a', 'add u-a 198.18.0.1,198.18.0.2', 'create u-list', 'add u-list u-a']]);
  assert.deepStrictEqual(result.created, ['u-a', 'u-list']);
  assert.equal(result.added, 3);
  assert.deepStrictEqual(result.messages, { read: 1, mutating: 4 });
  assert.ok(result.state);
});

test('incremental: additions, then removals, then destroys, in one ordered list; counts match', async () => {
  const { result, batches } = await twoRuns(
    { 'u-a': hashIp('198.18.0.1', '198.18.0.2'), 'u-b': hashIp('198.18.1.1'), 'u-old': hashIp('198.18.2.1') },
    { 'u-a': hashIp('198.18.0.2', '198.18.0.3'), 'u-b': hashIp('198.18.1.1'), 'u-new': hashIp('198.18.3.1') },
  );
  assert.deepStrictEqual(batches, [['create u-new', 'add u-new 198.18.3.1', 'add u-a 198.18.0.3', 'del u-a 198.18.0.1', 'destroy u-old']]);
  assert.deepStrictEqual(
    { created: result.created, updated: result.updated, destroyed: result.destroyed, unchanged: result.unchanged, added: result.added, deleted: result.deleted },
    { created: ['u-new'], updated: ['u-a'], destroyed: ['u-old'], unchanged: 1, added: 2, deleted: 1 },
  );
});

test('replace: each changed set is filled in its kind\'s temporary set and swapped in the round after; the temporary set goes last', async () => {
  const { result, batches } = await twoRuns(
    { 'u-a': hashIp('198.18.0.1'), 'u-b': hashIp('198.18.1.1') },
    { 'u-a': hashIp('198.18.0.9'), 'u-b': hashIp('198.18.1.9') },
    { mode: 'replace' },
  );
  assert.equal(batches.length, 5);
  assert.deepStrictEqual(batches[0], []);
  const temp = batches[1][0].split(' ')[1];
  assert.deepStrictEqual(batches.slice(1), [
    [`create ${temp}`, `add ${temp} 198.18.0.9`],
    [`swap ${temp} u-a`, `flush ${temp}`, `add ${temp} 198.18.1.9`],
    [`swap ${temp} u-b`],
    [`destroy ${temp}`],
  ]);
  assert.deepStrictEqual(result.replaced, ['u-a', 'u-b']);
  assert.equal(result.added, 2);
  assert.equal(result.deleted, 2);
});

test('a destroy refused because the set is in use is retained, not a failure, and the state remembers it', async () => {
  const busy = (op: IpsetOp) => (op.op === 'destroy' && op.name === 'u-old' ? 16 : undefined);
  const { result } = await twoRuns({ 'u-a': hashIp('198.18.0.1'), 'u-old': hashIp('198.18.2.1') }, { 'u-a': hashIp('198.18.0.1') }, {}, busy);
  assert.deepStrictEqual(result.retained, ['u-old']);
  assert.deepStrictEqual(result.destroyed, []);
  assert.deepStrictEqual(result.failures, []);
  assert.deepStrictEqual(result.state?.retained, [{ name: 'u-old', typeName: 'hash:ip' }]);
});

test('a refused addition is a failure: the run returns no state', async () => {
  const full = (op: IpsetOp) => (op.op === 'add' ? 1 : undefined);
  const { result } = await twoRuns({ 'u-a': hashIp('198.18.0.1') }, { 'u-a': hashIp('198.18.0.2') }, {}, full);
  assert.equal(result.failures.length, 1);
  assert.equal(result.state, undefined);
});
