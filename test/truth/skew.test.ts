/** Version skew and concurrent commits: rules nfkube cannot represent are reported and replaced,
 * never round-tripped; a batch computed from a stale read is refused by the kernel's generation
 * check and recomputed. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isGenerationMismatch } from '../../src/netlink/errors';
import { NFNL_MSG_BATCH_BEGIN } from '../../src/netlink/message';
import { NetlinkSocket } from '../../src/netlink/socket';
import { readTable } from '../../src/nft/readback';
import { getGeneration } from '../../src/nft/generation';
import { commit, Transaction } from '../../src/nft/transaction';
import { ipv4 } from '../../src/net/ip-bytes';
import { modelFromKernel } from '../../src/ruleset/model';
import { Sandbox, withSandbox } from '../helpers/netns';
import { baseCluster, foreignNft, startAgent, verify } from './harness';

test('rules with expressions nfkube never renders are reported as drift and replaced', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);
    const echo = (rule: string) => /# handle (\d+)/.exec(sb.run('nft', ['--echo', '--handle', ...rule.split(' ')]))![1];
    const maxseg = echo('add rule inet nfkube forward_egress tcp option maxseg size 1400 accept');
    const quota = echo('insert rule inet nfkube forward_ingress quota over 10 mbytes drop');
    const mark = echo('add rule inet nfkube input_egress meta mark set 0x1');

    // The kernel's own view of what was written, for the record.
    const back = (await readTable(sb.socket, 'inet', 'nfkube')).value!;
    const kinds = back.rules.flatMap((r) => r.exprs.map((e) => (e.type === 'opaque' ? `opaque:${e.name}` : e.type)));
    assert.ok(kinds.includes('opaque:exthdr') && kinds.includes('opaque:quota'), 'unknown expressions are kept opaque, not dropped');

    const expected = [
      '~ chain forward_egress',
      `-   # unknown expression "exthdr" (48 bytes) [ cmp eq reg 1 0x00007805 ] accept # handle ${maxseg}`,
      '~ chain forward_ingress',
      `-   # unknown expression "quota" (32 bytes) drop # handle ${quota}`,
      '~ chain input_egress',
      `-   meta mark set 0x00000001 # handle ${mark}`,
    ].join('\n');
    const v = verify(sb, cluster);
    assert.equal(v.stdout, `${expected}\n`);
    assert.equal(v.status, 1);

    const repair = await agent.resync();
    assert.equal(repair.drift, expected);
    assert.equal(verify(sb, cluster).status, 0);
    const text = sb.run('nft', ['list', 'table', 'inet', 'nfkube']);
    assert.doesNotMatch(text, /maxseg|quota|mark set/, 'nothing of the foreign rules survives');
    await agent.stop();
  });
});

test('a batch computed before a foreign commit is refused by the generation check; the recomputed one applies', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);
    await agent.stop();
    const read = await readTable(sb.socket, 'inet', 'nfkube');
    const ingress = modelFromKernel(read.value!).sets.get('ingress_v4')!.set;
    const staleTx = new Transaction().addElements(ingress, [{ key: ipv4('198.18.0.77'), verdict: { kind: 'drop' } }]);

    sb.run('nft', ['add', 'table', 'ip', 'someone_else']);
    assert.notEqual(await getGeneration(sb.socket), read.genId);
    await assert.rejects(commit(sb.socket, staleTx, { genId: read.genId }), (err) => isGenerationMismatch(err));
    assert.doesNotMatch(sb.run('nft', ['list', 'map', 'inet', 'nfkube', 'ingress_v4']), /198\.18\.0\.77/, 'nothing of the refused batch applied');

    const fresh = await readTable(sb.socket, 'inet', 'nfkube');
    await commit(sb.socket, staleTx, { genId: fresh.genId });
    assert.match(sb.run('nft', ['list', 'map', 'inet', 'nfkube', 'ingress_v4']), /198\.18\.0\.77 : drop/);
    assert.match(sb.run('nft', ['list', 'tables']), /table ip someone_else/);
  });
});

/** The sandbox socket, with `beforeBatch` run just before the first batch that carries a
 * generation (the agent's repair commit) reaches the kernel: a real foreign commit lands between
 * the agent's read and its commit. */
function socketWithCommitHook(sb: Sandbox, beforeBatch: () => void): { socket: NetlinkSocket; batches: () => number } {
  let batches = 0;
  let fired = false;
  const socket = new Proxy(sb.socket, {
    get(target, prop) {
      if (prop === 'transact') {
        return async (datagrams: Buffer[]) => {
          if (datagrams[0].readUInt16LE(4) === NFNL_MSG_BATCH_BEGIN) {
            batches++;
            // nlmsghdr (16) + nfgenmsg (4): anything more is the NFNL_BATCH_GENID attribute.
            const guarded = datagrams[0].readUInt32LE(0) > 20;
            if (guarded && !fired) {
              fired = true;
              beforeBatch();
            }
          }
          return target.transact(datagrams);
        };
      }
      const v = Reflect.get(target, prop);
      return typeof v === 'function' ? v.bind(target) : v;
    },
  });
  return { socket, batches: () => batches };
}

test('agent.resync: a repair refused because of a concurrent foreign commit is recomputed from a fresh read', async () => {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    await (await startAgent(sb, cluster)).stop();
    sb.run('nft', ['add table ip someone_else; add chain ip someone_else c; add rule ip someone_else c ip saddr 198.18.1.1 counter']);
    const foreignBefore = foreignNft(sb);

    let foreignAfter = '';
    const hooked = socketWithCommitHook(sb, () => {
      // Between the agent's read and its commit: a foreign table changes, and nfkube's own table
      // drifts again (a rule nfkube never meant).
      sb.run('nft', ['add rule ip someone_else c ip daddr 198.18.1.2 counter; add rule inet nfkube forward_egress quota over 1 mbytes drop']);
      foreignAfter = foreignNft(sb);
    });
    const agent = await startAgent(sb, cluster, undefined, hooked.socket);
    const startBatches = hooked.batches();
    // The restart found its table as it left it and wrote nothing; drift it now and resync
    // through the hook.
    sb.run('nft', ['flush', 'chain', 'inet', 'nfkube', 'forward_ingress']);
    const repair = await agent.resync();
    assert.equal(startBatches, 0);
    assert.equal(hooked.batches() - startBatches, 2, 'the stale repair was sent, refused, and the recomputed one sent');
    assert.match(repair.drift ?? '', /~ chain forward_ingress/);
    assert.match(repair.drift ?? '', /unknown expression "quota"/, 'the recomputed repair saw the drift made meanwhile');
    assert.equal(verify(sb, cluster).status, 0);
    assert.notEqual(foreignAfter, foreignBefore);
    assert.equal(foreignNft(sb), foreignAfter, 'the foreign commit made meanwhile is intact');
    await agent.stop();
  });
});
