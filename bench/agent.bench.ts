/** Issue 4 benchmark: initial sync and 1,000 pod events at 5,000 pods/500 policies and 20,000
 * pods/2,000 policies. nfkube (the Agent, in-process) vs the same intent applied kube-router style
 * (full `ipset restore` + `iptables-restore` per event) vs `nft -f` (nfkube's whole ruleset, the
 * same intent as a straightforward nft file, and one element delta). Each method runs in its own fresh namespace, and each size in its own process, so
 * the peak RSS reported is that size's alone.
 * Run: npm run build && node --expose-gc dist/bench/agent.bench.js [--quick] */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { PolicyComponent } from '../src/policy/component';
import { Agent } from '../src/pipeline/agent';
import { peerSetName, Renderer } from '../src/policy/render/render';
import { formatTable } from '../src/nft/format';
import { listTable } from '../src/nft/readback';
import { compileFull } from '../src/policy/engine/compile';
import { modelToContents } from '../src/ruleset/model';
import { openSandbox, Sandbox } from '../test/helpers/netns';
import { buildCluster, podChurn, NODE, rng, snapshotOf } from './cluster';
import { kubeRouterStyle, straightforwardNft } from './reference';
import { ms, ratio, table } from './harness';
import { percentile } from './percentile';

const EVENTS = 1000;
const quick = process.argv.includes('--quick');

function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

interface Result {
  size: string;
  nfkubeFull: number;
  /** The process's CPU time (user + system, every thread) over the full sync: on a loaded
   * machine wall time also counts the time others ran. */
  nfkubeFullCpu: number;
  /** Of nfkubeFull: the one kernel exchange (sendmsg of the batch until every ack is read). */
  nfkubeKernel: number;
  /** The full sync's batch sent raw (the same datagrams, one transact) into a fresh namespace:
   * the kernel floor for those messages. */
  rawReplay: number;
  nftFull: number;
  /** nft -f of straightforwardNft: the same intent as a person writes it. */
  nftPlain: number;
  plainRules: number;
  krFull: number;
  eventP50: number;
  eventP99: number;
  eventCpuUs: number;
  msgsPerEvent: number;
  emptyEvents: number;
  nftEvent: number;
  krEvent: number;
  rssMB: number;
  restartMs: number;
  restartMessages: number;
  /** Kernel objects after nfkube's full sync, read back; and after nft -f of the straightforward
   * file (its anonymous sets included). */
  objects: ObjectCounts;
  plainObjects?: ObjectCounts;
  /** The full sync's stages as its report gives them (engine, render, read, plan, check, encode,
   * kernel), in ms. */
  stages: Record<string, number>;
}

interface ObjectCounts {
  chains: number;
  rules: number;
  sets: number;
  elements: number;
}

async function kernelObjects(socket: Sandbox['socket'], table: string): Promise<ObjectCounts> {
  const t = await listTable(socket, 'inet', table);
  if (!t) throw new Error(`table inet ${table} is missing`);
  let elements = 0;
  for (const e of t.elements.values()) elements += e.length;
  return { chains: t.chains.length, rules: t.rules.length, sets: t.sets.length, elements };
}

async function run(pods: number, policies: number): Promise<Result> {
  const cluster = buildCluster(pods, policies, 42);
  const snapshot = snapshotOf(cluster);

  // nfkube
  const sb = openSandbox();
  // The full sync's transactions (bounded batches: several), each as sent, and their kernel time.
  let kernelMs = 0;
  let capturing = true;
  const fullBatches: Buffer[][] = [];
  const transact = sb.socket.transact.bind(sb.socket);
  sb.socket.transact = async (datagrams) => {
    const t = performance.now();
    try {
      return await transact(datagrams);
    } finally {
      if (capturing) {
        kernelMs += performance.now() - t;
        fullBatches.push(datagrams.map((d) => Buffer.from(d)));
      }
    }
  };
  // Event-to-committed latency is taken when the commit completes, not after the read-back of
  // rewritten chains that follows it.
  let committedAt = 0;
  const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) })], observer: { synced: () => void (committedAt = performance.now()) } });
  const cpuAtStart = process.cpuUsage();
  let t0 = performance.now();
  const fullReport = await agent.start(snapshot);
  const nfkubeFull = performance.now() - t0;
  const fullCpu = process.cpuUsage(cpuAtStart);
  capturing = false;
  const nfkubeKernel = kernelMs;
  const objects = await kernelObjects(sb.socket, 'nfkube');
  const rand = rng(7);
  const live = [...snapshot.pods.values()];
  const latencies: number[] = [];
  const msgs0 = agent.totals.messages;
  const empty0 = agent.totals.emptyEvents;
  const cpu0 = process.cpuUsage();
  for (const change of podChurn(rand, live, pods, pods / 50, EVENTS)) {
    committedAt = 0;
    t0 = performance.now();
    agent.onChange(change);
    await agent.idle();
    if (committedAt) latencies.push(committedAt - t0);
  }
  const cpu = process.cpuUsage(cpu0);
  latencies.sort((a, b) => a - b);
  const msgsPerEvent = (agent.totals.messages - msgs0) / EVENTS;
  const emptyEvents = agent.totals.emptyEvents - empty0;
  const rssMB = process.resourceUsage().maxRSS / 1024;
  await agent.stop();
  // A restart over the cluster as the events left it: the table is read back and compared.
  const now = { ...snapshot, pods: new Map(live.map((p) => [`${p.namespace}/${p.name}`, p])) };
  const restarted = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) })] });
  t0 = performance.now();
  const restart = await restarted.start(now);
  const restartMs = performance.now() - t0;
  await restarted.stop();
  await sb.close();

  // The same intent through nft -f and kube-router style, each in its own namespace.
  const ir = compileFull({ pods: snapshot.pods.values(), namespaces: snapshot.namespaces.values(), policies: snapshot.policies.values() }, NODE);
  const model = new Renderer({ table: 'nfkube', denyAction: 'drop' }).full(ir);
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-agent-bench-'));
  const full = join(dir, 'full.nft');
  writeFileSync(full, formatTable(modelToContents(model)));
  const oneSet = [...ir.peerSets.values()][0];
  const delta = join(dir, 'delta.nft');
  writeFileSync(delta, `add element inet nfkube ${peerSetName(oneSet.id, 'v4')} { 198.19.250.1 }\ndelete element inet nfkube ${peerSetName(oneSet.id, 'v4')} { 198.19.250.1 }\n`);
  const kr = kubeRouterStyle(ir);
  const ipsetFile = join(dir, 'ipsets');
  const iptFile = join(dir, 'iptables');
  writeFileSync(ipsetFile, kr.ipsets);
  writeFileSync(iptFile, kr.iptables);

  const plain = join(dir, 'plain.nft');
  writeFileSync(plain, straightforwardNft(ir));

  // The same messages sent raw: the full sync's transactions replayed, in order, into a fresh namespace.
  const rawSb = openSandbox();
  t0 = performance.now();
  for (const batch of fullBatches) {
    const replay = await rawSb.socket.transact(batch);
    const refused = replay.acks.find((a) => a.errno !== 0);
    if (refused) throw new Error(`raw replay of the full sync refused: errno ${refused.errno} ${refused.extAck ?? ''}`);
  }
  const rawReplay = performance.now() - t0;
  await rawSb.close();

  const nftSb: Sandbox = openSandbox();
  const nftFull = time(() => nftSb.run('nft', ['-f', full]));
  const plainSb: Sandbox = openSandbox();
  const nftPlain = time(() => plainSb.run('nft', ['-f', plain]));
  const plainRules = plainSb.run('nft', ['list', 'table', 'inet', 'plain']).split('\n').filter((l) => /accept|jump|drop/.test(l)).length;
  // A read-back nfkube cannot decode leaves the row out rather than the run.
  const plainObjects = await kernelObjects(plainSb.socket, 'plain').catch(() => undefined);
  await plainSb.close();
  const deltas: number[] = [];
  for (let i = 0; i < (quick ? 5 : 20); i++) deltas.push(time(() => nftSb.run('nft', ['-f', delta])));
  await nftSb.close();
  deltas.sort((a, b) => a - b);

  const krSb = openSandbox();
  const krApply = () => {
    krSb.run('ipset', ['restore'], kr.ipsets);
    krSb.run('iptables-restore', [iptFile]);
  };
  const krFull = time(krApply);
  const krEvents: number[] = [];
  for (let i = 0; i < (quick ? 2 : 5); i++) krEvents.push(time(krApply));
  krEvents.sort((a, b) => a - b);
  await krSb.close();

  return {
    size: `${pods / 1000}k pods / ${policies} policies`,
    nfkubeFull,
    nfkubeFullCpu: (fullCpu.user + fullCpu.system) / 1000,
    nfkubeKernel,
    rawReplay,
    nftFull,
    nftPlain,
    plainRules,
    krFull,
    eventP50: percentile(latencies, 50),
    eventP99: percentile(latencies, 99),
    eventCpuUs: ((cpu.user + cpu.system) / EVENTS),
    msgsPerEvent,
    emptyEvents,
    nftEvent: percentile(deltas, 50),
    krEvent: percentile(krEvents, 50),
    rssMB,
    restartMs,
    restartMessages: restart.messages,
    objects,
    plainObjects,
    stages: { ...fullReport.stages },
  };
}

/** One size in this process (`--size PODS:POLICIES`): prints its Result as JSON. */
async function runOne(arg: string): Promise<void> {
  const [pods, policies] = arg.split(':').map(Number);
  process.stdout.write(JSON.stringify(await run(pods, policies)));
}

async function main(): Promise<void> {
  const sizeArg = process.argv.indexOf('--size');
  if (sizeArg >= 0) return runOne(process.argv[sizeArg + 1]);
  const sizes: [number, number][] = quick ? [[5000, 500]] : [[5000, 500], [20000, 2000]];
  const rows: Result[] = sizes.map(([p, n]) =>
    JSON.parse(execFileSync(process.execPath, [...process.execArgv, __filename, '--size', `${p}:${n}`, ...(quick ? ['--quick'] : [])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] })),
  );
  process.stdout.write(
    `## NetworkPolicy agent, in-process (the Agent over already-normalised objects; new-process rows are in the end-to-end section): full sync and ${EVENTS} pod events\n\n` +
      table(
        ['size', 'nfkube full sync (from a ready snapshot: policy engine load, render, encode, commit)', 'of which the kernel', 'nft -f, nfkube\'s ruleset', 'nft -f, straightforward file', 'kube-router style full', 'nfkube / nft -f (nfkube\'s ruleset)', 'nfkube kernel alone / nft -f (nfkube\'s ruleset)', 'nfkube / nft -f (straightforward)', 'nfkube / kube-router', 'the same batch sent raw (kernel floor)', 'nfkube / kernel floor'],
        rows.map((r) => [r.size, ms(r.nfkubeFull), ms(r.nfkubeKernel), ms(r.nftFull), `${ms(r.nftPlain)} (${r.plainRules} rules)`, ms(r.krFull), ratio(r.nfkubeFull, r.nftFull), ratio(r.nfkubeKernel, r.nftFull), ratio(r.nfkubeFull, r.nftPlain), ratio(r.nfkubeFull, r.krFull), ms(r.rawReplay), ratio(r.nfkubeFull, r.rawReplay)]),
      ) +
      '\n\n' +
      table(
        ['size', 'full sync', 'its CPU time', 'policy engine load', 'render', 'read-back of the table', 'plan (clone, diff, transaction)', 'check', 'encode', 'kernel', 'rest (scheduling, GC between stages)', 'kernel floor'],
        rows.map((r) => {
          const s = r.stages;
          const named = ['engine', 'render', 'read', 'plan', 'check', 'encode', 'kernel'];
          const rest = r.nfkubeFull - named.reduce((n, k) => n + (s[k] ?? 0), 0);
          return [r.size, ms(r.nfkubeFull), `${ms(r.nfkubeFullCpu)} (${ratio(r.nfkubeFullCpu, r.rawReplay)})`, ...named.map((k) => `${ms(s[k] ?? 0)} (${ratio(s[k] ?? 0, r.rawReplay)})`), ms(rest), ms(r.rawReplay)];
        }),
      ) +
      '\n\nThe full sync\'s stages as its report gives them (wall time in the process, each stage also as a multiple of the kernel floor): where the time above goes. Its CPU time is the process\'s (every thread: the kernel\'s work on the commit counts as system time) over the same interval: on a loaded machine the wall time also holds the time other processes ran.' +
      '\n\nThe full sync is a fresh process\'s first: its code runs cold, as at an agent\'s start. "nft -f, nfkube\'s ruleset" loads the file `nfkube render` prints for the same cluster (verdict maps, shared named sets). "nft -f, straightforward file" loads the same intent written as a person writes it, as the issue\'s reference file was: per-pod dispatch rules, a chain per pod and per policy direction, peers inline as anonymous sets. "The same batch sent raw" replays the full sync\'s datagrams, captured as nfkube sent them, into a fresh namespace, one transact per transaction it sent (bounded batches): the kernel-only time of the same messages (issue 13 target 7: nfkube / kernel floor <= 1.3x).\n\n' +
      table(
        ['size', 'nfkube event p50 / p99 (event to committed; events that commit)', 'CPU per event', 'kernel messages per event', 'events with 0 messages', 'nft -f element delta', 'kube-router style per event', 'peak RSS', 'restart over an unchanged cluster'],
        rows.map((r) => [r.size, `${r.eventP50.toFixed(3)} / ${r.eventP99.toFixed(3)} ms`, `${r.eventCpuUs.toFixed(0)} µs`, r.msgsPerEvent.toFixed(2), `${r.emptyEvents} of ${EVENTS}`, ms(r.nftEvent), ms(r.krEvent), `${r.rssMB.toFixed(0)} MB`, `${ms(r.restartMs)}, ${r.restartMessages} messages`]),
      ) +
      '\n\n' +
      table(
        ['size', 'kernel objects after nfkube\'s full sync: chains / rules / sets / elements', 'after nft -f of the straightforward file', 'chains, nfkube / straightforward', 'rules, nfkube / straightforward'],
        rows.map((r) => {
          const o = (c: ObjectCounts | undefined) => (c ? `${c.chains} / ${c.rules} / ${c.sets} / ${c.elements}` : 'unreadable');
          return [r.size, o(r.objects), o(r.plainObjects), r.plainObjects ? ratio(r.objects.chains, r.plainObjects.chains) : '-', r.plainObjects ? ratio(r.objects.rules, r.plainObjects.rules) : '-'];
        }),
      ) +
      '\n\nKernel objects are read back from each table (issue 13 target 6). nfkube shares one chain among the pods isolated by the same policies (a combination chain), counts default denies per pod address in four counter sets, and matches a rule entry\'s several ports as one set; the straightforward file has a chain per isolated pod and direction and its peers and ports inline (anonymous sets, counted as sets).' +
      '\n\nEvents alternate pod adds (half on this node) and deletes of random pods. CPU per event is the process\'s CPU time over the 1,000 events divided by 1,000: it includes the read-back of the chains each commit rewrote. Each size runs in its own process; peak RSS is that process\'s maximum, with the generated cluster objects (the informer cache\'s share) included. The restart is a new Agent started over the cluster as the events left it: it reads the table back, compares, and writes only what differs.\n\n',
  );
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
