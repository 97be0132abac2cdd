/** Policy engine benchmark: full compile vs incremental events on synthetic clusters.
 *
 * Run: node --expose-gc dist/bench/policy.bench.js
 * Prints a markdown section. Cluster shape: 50 pods per namespace, 100 pods per node (this node
 * is node-0), app/tier labels, namespaces labelled by team and env, 5 policies per 50 pods mixing
 * default-deny, same-namespace podSelectors with named ports, namespaceSelector peers, ipBlocks
 * with except, and egress to DNS. */

import os from 'node:os';
import { compileFull } from '../src/policy/engine/compile';
import { PolicyEngine } from '../src/policy/engine/engine';
import { isEmptyDelta, type PolicyDelta, type PolicyIR } from '../src/policy/engine/ir';
import { buildCluster, makePod, NODE, PODS_PER_NAMESPACE, PODS_PER_NODE, rng, TIERS } from './cluster';
import { percentile } from './percentile';

function heapMB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 1048576;
}

function ms(start: bigint): number {
  return Number(process.hrtime.bigint() - start) / 1e6;
}

interface Row {
  size: string;
  compileMs: number;
  compileCpuMs: number;
  loadMs: number;
  loadCpuMs: number;
  irHeapMB: number;
  heapMB: number;
  eventCpuUs: number;
  counts: Record<string, number>;
  events: Record<string, { p50: number; p99: number; empty: number; elems: number }>;
}

function deltaElements(d: PolicyDelta): number {
  let n = 0;
  for (const c of [...d.peerSets.add, ...d.peerSets.del]) n += c.v4.length + c.v6.length;
  for (const c of [...d.namedPortSets.add, ...d.namedPortSets.del]) n += c.v4.length + c.v6.length;
  return n;
}

function cpuMs(start: NodeJS.CpuUsage): number {
  const d = process.cpuUsage(start);
  return (d.user + d.system) / 1000;
}

function run(podCount: number, policyCount: number): Row {
  const cluster = buildCluster(podCount, policyCount, podCount);
  const heapBefore = heapMB();

  let t = process.hrtime.bigint();
  let cpu = process.cpuUsage();
  let full: PolicyIR | undefined = compileFull(cluster, NODE);
  const compileMs = ms(t);
  const compileCpuMs = cpuMs(cpu);
  const irHeap = heapMB() - heapBefore;
  full = undefined;

  t = process.hrtime.bigint();
  cpu = process.cpuUsage();
  const engine = new PolicyEngine(NODE);
  engine.batch(() => {
    for (const ns of cluster.namespaces) engine.upsertNamespace(ns);
    for (const np of cluster.policies) engine.upsertPolicy(np);
    for (const pod of cluster.pods) engine.upsertPod(pod);
  });
  const loadMs = ms(t);
  const loadCpuMs = cpuMs(cpu);
  const heap = heapMB() - heapBefore;

  const rand = rng(7);
  const kinds = ['add', 'delete', 'relabel', 'heartbeat'] as const;
  const samples: Record<string, number[]> = { add: [], delete: [], relabel: [], heartbeat: [] };
  const empty: Record<string, number> = { add: 0, delete: 0, relabel: 0, heartbeat: 0 };
  const elems: Record<string, number> = { add: 0, delete: 0, relabel: 0, heartbeat: 0 };
  const live = cluster.pods.filter((p) => p.namespace !== 'kube-system');
  let next = podCount + 1;
  const eventsCpu = process.cpuUsage();
  for (let i = 0; i < 1000; i++) {
    const kind = kinds[i % kinds.length];
    let delta: PolicyDelta;
    if (kind === 'add') {
      const pod = makePod(rand, next++, `ns-${Math.floor(rand() * (podCount / PODS_PER_NAMESPACE))}`, Math.floor(rand() * (podCount / PODS_PER_NODE)));
      live.push(pod);
      t = process.hrtime.bigint();
      delta = engine.upsertPod(pod);
    } else {
      const index = Math.floor(rand() * live.length);
      const pod = live[index];
      if (kind === 'delete') {
        live[index] = live[live.length - 1];
        live.pop();
        t = process.hrtime.bigint();
        delta = engine.deletePod(pod);
      } else if (kind === 'relabel') {
        const moved = { ...pod, labels: { ...pod.labels, tier: TIERS[Math.floor(rand() * TIERS.length)], app: `app-${Math.floor(rand() * 10)}` } };
        live[index] = moved;
        t = process.hrtime.bigint();
        delta = engine.upsertPod(moved);
      } else {
        t = process.hrtime.bigint();
        delta = engine.upsertPod({ ...pod, labels: { ...pod.labels } });
      }
    }
    samples[kind].push(ms(t));
    if (isEmptyDelta(delta)) empty[kind]++;
    elems[kind] += deltaElements(delta);
  }
  // Includes the benchmark's own event construction: an upper bound of the engine's CPU per event.
  const eventCpuUs = cpuMs(eventsCpu);
  const events: Row['events'] = {};
  for (const kind of kinds) {
    const s = samples[kind].sort((a, b) => a - b);
    events[kind] = { p50: percentile(s, 50), p99: percentile(s, 99), empty: empty[kind] / s.length, elems: elems[kind] / s.length };
  }
  return {
    size: `${podCount / 1000}k pods / ${policyCount} policies`,
    compileMs,
    compileCpuMs,
    loadMs,
    loadCpuMs,
    irHeapMB: irHeap,
    heapMB: heap,
    eventCpuUs,
    counts: engine.stats(),
    events,
  };
}

function main(): void {
  const rows = [run(5000, 500), run(20000, 2000)];
  const f = (n: number, digits = 1): string => n.toFixed(digits);
  const out: string[] = [];
  out.push('## Policy engine (src/policy): full compile vs incremental events', '');
  out.push(
    `node ${process.version}, ${process.arch}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0].toFixed(1)} at start; 1,000 pod events per size (add, delete, relabel, heartbeat in turn). Wall clock and process CPU time; with a loaded machine trust CPU time.`,
    '',
  );
  out.push('| size | compileFull wall / CPU | engine initial load wall / CPU | heap: full IR / engine | CPU per event (mean) | targets | peer sets | named-port sets |');
  out.push('|---|---|---|---|---|---|---|---|');
  for (const r of rows) {
    out.push(
      `| ${r.size} | ${f(r.compileMs)} / ${f(r.compileCpuMs)} ms | ${f(r.loadMs)} / ${f(r.loadCpuMs)} ms | ${f(r.irHeapMB)} / ${f(r.heapMB)} MB | ${f(r.eventCpuUs)} µs | ${r.counts.targets} | ${r.counts.peerSets} | ${r.counts.namedPortSets} |`,
    );
  }
  out.push('', '| size | event | p50 | p99 | p50 vs compileFull | empty deltas | set elements / event |');
  out.push('|---|---|---|---|---|---|---|');
  for (const r of rows) {
    for (const [kind, e] of Object.entries(r.events)) {
      out.push(`| ${r.size} | ${kind} | ${f(e.p50 * 1000, 0)} µs | ${f(e.p99 * 1000, 0)} µs | 1/${Math.round(r.compileMs / e.p50).toLocaleString('en-US')} | ${f(e.empty * 100, 0)}% | ${f(e.elems, 2)} |`);
    }
  }
  const [small, large] = rows;
  out.push('', `Scaling 5k -> 20k (4x pods, 4x policies): compileFull CPU x${f(large.compileCpuMs / small.compileCpuMs, 2)}, CPU per event x${f(large.eventCpuUs / small.eventCpuUs, 2)}, relabel p50 x${f(large.events.relabel.p50 / small.events.relabel.p50, 2)}, add p50 x${f(large.events.add.p50 / small.events.add.p50, 2)}.`);
  console.log(out.join('\n'));
}

main();
