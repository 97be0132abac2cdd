/** Issue 28 target 3, the kernel side of one pod event at 20k pods / 2k policies: what the
 * commit of each kind of per-pod write costs in the policy table as the agent leaves it after
 * its first sync. A local pod's vmap element (`address : goto combo_<id>_<dir>`) makes the
 * kernel validate the table's chain graph at commit (nft_table_validate); an element without
 * verdict data (a set member, what a pod joining a peer set writes) does not; a new combination
 * chain with its element adds rules (validated as well). The three are interleaved, each added
 * then deleted in its own transaction, in a fresh namespace.
 * Run: node dist/bench/dispatch.bench.js */
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { ipv4 } from '../src/net/ip-bytes';
import { commit, Transaction } from '../src/nft/transaction';
import { Agent } from '../src/pipeline/agent';
import { PolicyComponent } from '../src/policy/component';
import { openSandbox } from '../test/helpers/netns';
import { buildCluster, NODE, snapshotOf } from './cluster';
import { ms, table } from './harness';
import { percentile } from './percentile';

const ROUNDS = 300;

async function main(): Promise<void> {
  const [pods, policies] = [20000, 2000];
  const cluster = buildCluster(pods, policies, 42);
  const snapshot = snapshotOf(cluster);
  const sb = openSandbox();
  const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) });
  const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [component] });
  await agent.start(snapshot);
  await agent.stop();
  const m = component.desired;
  const vmap = m.sets.get('ingress_v4')!.set;
  const member = m.sets.get('deny_in_v4')!.set;
  const combo = [...m.chains.values()].find((c) => c.chain.name.startsWith('combo_') && c.chain.name.endsWith('_in'))!;
  const kinds = {
    'vmap element `address : goto combo_<id>_in` (a local pod isolated for ingress, as now)': (key: Buffer, add: boolean) =>
      add ? new Transaction().addElements(vmap, [{ key, verdict: { kind: 'goto', chain: combo.chain.name } }]) : new Transaction().deleteElements(vmap, [{ key }]),
    'set element without verdict data (a peer or counter set member)': (key: Buffer, add: boolean) => (add ? new Transaction().addElements(member, [{ key }]) : new Transaction().deleteElements(member, [{ key }])),
    'new combination chain (its jumps and goto) and the vmap element to it': (key: Buffer, add: boolean) => {
      const chain = { ...combo.chain, name: 'combo_bench_in' };
      if (!add) return new Transaction().deleteElements(vmap, [{ key }]).flushChain(chain).deleteChain(chain);
      const tx = new Transaction().addChain(chain);
      for (const r of combo.rules) tx.addRule({ ...r, chain: chain.name });
      return tx.addElements(vmap, [{ key, verdict: { kind: 'goto', chain: chain.name } }]);
    },
  };
  const times = new Map<string, number[]>(Object.keys(kinds).map((k) => [k, []]));
  for (let i = 0; i < ROUNDS; i++) {
    const key = ipv4(`198.19.254.${i % 200}`);
    for (const [name, tx] of Object.entries(kinds)) {
      const t0 = performance.now();
      await commit(sb.socket, tx(key, true), { echo: false });
      times.get(name)!.push(performance.now() - t0);
      await commit(sb.socket, tx(key, false), { echo: false });
    }
  }
  await sb.close();
  const rows = [...times].map(([name, t]) => {
    t.sort((a, b) => a - b);
    return [name, ms(percentile(t, 50)), ms(percentile(t, 90)), ms(percentile(t, 99))];
  });
  process.stdout.write(
    `## One pod event's write, kernel side, at 20k pods / 2000 policies (issue 28 target 3)\n\n` +
      `The policy table after the agent's first sync: ${m.chains.size} chains, ${m.sets.size} sets, ${m.sets.get('ingress_v4')!.elements.size} elements in the ingress vmap. Each write committed alone (send -> ack, ${ROUNDS} times each, the three interleaved, each undone after):\n\n` +
      table(['write', 'p50', 'p90', 'p99'], rows) +
      '\n\nA verdict element or a rule that jumps makes the commit validate every chain reachable from the base chains (nft_table_validate, walking each vmap element to its chain); a plain element does not. The difference between the first two rows is what a per-pod dispatch without verdict data could take off a local pod\'s add.\n',
  );
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
