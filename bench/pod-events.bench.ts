/** Issue 28 target 3, in-process: the e2e bench's live events (bench/e2e.bench.ts: a pod of this
 * node created in namespace ns-k, then deleted, k = 0, 1, ...) applied to the Agent at 20k pods /
 * 2k policies, in a fresh namespace. Per event: the wall time from the change offered to the
 * commit acked, and what the commit wrote (kernel messages by type). Wall times here leave out the
 * HTTP, JSON and process wake-ups of the e2e row: what the agent and the kernel do.
 * Run: node dist/bench/pod-events.bench.js [PODS:POLICIES] (NFKUBE_BENCH_EVENTS=N, default 200) */
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { Agent } from '../src/pipeline/agent';
import { PolicyComponent } from '../src/policy/component';
import { openSandbox } from '../test/helpers/netns';
import { buildCluster, makePod, NODE, podIp, rng, snapshotOf } from './cluster';
import { ms, table } from './harness';
import { percentile } from './percentile';
import type { SyncReport } from '../src/pipeline/sync-report';

const EVENTS = Number(process.env.NFKUBE_BENCH_EVENTS ?? 200);

async function main(): Promise<void> {
  const [pods, policies] = (process.argv[2] ?? '20000:2000').split(':').map(Number);
  const cluster = buildCluster(pods, policies, 42);
  const namespaces = pods / 50;
  const sb = openSandbox();
  const reports: SyncReport[] = [];
  const component = new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) });
  const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [component], observer: { synced: (r) => void reports.push(r) } });
  await agent.start(snapshotOf(cluster));
  const combos = () => [...component.desired.chains.keys()].filter((n) => n.startsWith('combo_')).length;
  const combosAtStart = combos();
  const times: number[] = [];
  /** Events whose commit wrote no chain: a verdict-free per-pod element would spare those the
   * table's validation (a new rule is validated in any layout). */
  let withoutChains = 0;
  const byType = new Map<string, number>();
  let messages = 0;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < EVENTS; i++) {
    // The e2e bench's event pod i >> 1: added at even i, deleted at odd i.
    const k = i >> 1;
    const p = { ...makePod(rng(1000 + k), 900_000 + k, `ns-${k % namespaces}`, 0), name: `event-${k}`, ips: [podIp(120_000 + (k % 2000))] };
    const before = reports.length;
    const t0 = performance.now();
    agent.onChange(i % 2 === 0 ? { kind: 'Pod', type: 'upsert', key: `${p.namespace}/${p.name}`, object: p } : { kind: 'Pod', type: 'delete', key: `${p.namespace}/${p.name}`, object: p });
    await agent.idle();
    times.push(performance.now() - t0);
    if (i % 2 === 0 && !reports.slice(before).some((r) => r.byType.has('NFT_MSG_NEWCHAIN'))) withoutChains++;
    for (const r of reports.slice(before)) {
      messages += r.messages;
      for (const [t, n] of r.byType) byType.set(t, (byType.get(t) ?? 0) + n);
    }
  }
  const cpu = process.cpuUsage(cpu0);
  await agent.stop();
  await sb.close();
  const sorted = (xs: number[]) => xs.sort((a, b) => a - b);
  const row = (what: string, xs: number[]) => [what, ms(percentile(xs, 50)), ms(percentile(xs, 90)), ms(percentile(xs, 99))];
  console.log(`\n## Pod events in-process at ${pods / 1000}k pods / ${policies} policies (issue 28 target 3): ${EVENTS} events, offered -> acked\n`);
  console.log(table(['events', 'p50', 'p90', 'p99'], [row('all', sorted([...times])), row('adds', sorted(times.filter((_, i) => i % 2 === 0))), row('deletes', sorted(times.filter((_, i) => i % 2 === 1)))]));
  console.log(`\nCombination chains on the node at start: ${combosAtStart}; adds that wrote no chain: ${withoutChains} of ${EVENTS / 2}.`);
  console.log(`\nCPU per event ${ms((cpu.user + cpu.system) / 1000 / EVENTS)}; kernel messages per event ${(messages / EVENTS).toFixed(2)}: ${[...byType].map(([t, n]) => `${t} ${(n / EVENTS).toFixed(2)}`).join(', ')}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
