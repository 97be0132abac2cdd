/** One end-to-end row of bench/proxy.bench.ts, run by it inside a fresh network namespace (with
 * loopback up): the test API server holds n services x perService endpoints, `nfkube agent
 * --kubeconfig K --proxy --no-policy` runs as a new process against it over HTTP, and this process
 * times the first commit and then, for each of EVENTS EndpointSlice writes (one endpoint added or
 * removed), the time from the API write to the commit, seen by polling the namespace's ruleset
 * generation (NFT_MSG_GETGEN) from another process, as bench/e2e.bench.ts does for the policy
 * agent (bench/generation-watch.ts). Prints one JSON line. Refuses to run outside a namespace the bench
 * made (the agent programs this namespace's kernel).
 * PROXY_LIVE_IDLE_S: then the agent's CPU over that many seconds with nothing changing.
 * PROXY_LIVE_CHURN_S: then endpoint churn for that long (each write moves one endpoint of a
 * random slice to a new address and waits for its commit), and the agent's RSS after it, its CPU
 * over it, and its RSS every tenth of the span (the trend of a shortened soak).
 * PROXY_LIVE_CHURN_WRITES: end the churn after this many writes, if sooner (runs compared write
 * for write).
 * PROXY_LIVE_NODE_OPTIONS: NODE_OPTIONS for the agent (the DaemonSet's). */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { TestApiServer } from '../test/helpers/apiserver';
import { GenerationWatch } from './generation-watch';
import { procStats } from './harness';
import { cluster, NODE, proxyObjects } from './proxy-cluster';
import { mulberry32 } from '../test/helpers/prng';
import type { EndpointSliceInfo } from '../src/k8s/service-model';

const EVENTS = 61;

async function main(): Promise<void> {
  if (process.env.NFKUBE_PROXY_LIVE_NETNS !== '1') throw new Error('run by bench/proxy.bench.js inside its own network namespace');
  const [n, perService] = process.argv.slice(2).map(Number);
  const { services, slices } = cluster(n, perService);
  const server = await TestApiServer.start();
  for (const o of proxyObjects(services, slices)) server.create(o as never);
  const kubeconfig = server.writeKubeconfig();
  const generations = new GenerationWatch();
  const probe = `${kubeconfig}.probe`;
  const nfkube = process.env.NFKUBE_BENCH_BIN ?? join(__dirname, '..', '..', 'bin', 'nfkube');
  // The poller's first line (the generation now) comes before the agent starts.
  await generations.ready();
  const t0 = process.hrtime.bigint();
  // NFKUBE_BENCH_NODE_ARGS: node flags for the agent only (--cpu-prof), as bench/e2e.bench.ts.
  const flags = process.env.NFKUBE_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const child = spawn(process.execPath, [...flags, '-r', join(__dirname, 'probe.js'), nfkube, 'agent', '--kubeconfig', kubeconfig, '--proxy', '--no-policy', '--node-name', NODE, '--log-level', 'warn', '--metrics-addr', ''], {
    env: { ...process.env, NFKUBE_BENCH_PROBE: probe, NODE_OPTIONS: process.env.PROXY_LIVE_NODE_OPTIONS ?? process.env.NODE_OPTIONS },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  try {
    const first = await generations.after(t0, 900_000);
    if (first === undefined) throw new Error('no first commit');
    // Let the full sync's follow-ups (health, conntrack) settle.
    await generations.settle(500);
    const atFirst = procStats(child.pid!);
    const cpu0 = atFirst.cpuMs;
    const latencies: number[] = [];
    let missed = 0;
    const target = slices[n >> 1];
    for (let i = 0; i < EVENTS; i++) {
      const w0 = process.hrtime.bigint();
      server.modify('EndpointSlice', 'ns', target.name, (s) => {
        const eps = s.endpoints as unknown[];
        if (i % 2 === 0) eps.push({ addresses: ['100.127.255.254'], conditions: { ready: true }, nodeName: 'node-2' });
        else eps.pop();
      });
      const took = await generations.after(w0, 5_000);
      if (took === undefined) missed++;
      else latencies.push(took);
      await generations.settle(30);
    }
    const cpuPerEventMs = (procStats(child.pid!).cpuMs - cpu0) / EVENTS;
    latencies.sort((a, b) => a - b);
    const idle = await idleCpu(child.pid!, Number(process.env.PROXY_LIVE_IDLE_S ?? 0));
    const churn = await endpointChurn(server, generations, child.pid!, slices, Number(process.env.PROXY_LIVE_CHURN_S ?? 0));
    child.kill('SIGTERM');
    await exited;
    const p = JSON.parse(readFileSync(probe, 'utf8').trim().split('\n').pop()!) as { userMs: number; systemMs: number; hwmKB: number };
    const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
    process.stdout.write(`${JSON.stringify({ firstCommitMs: first, p50: pct(0.5), p90: pct(0.9), p99: pct(0.99), missed, cpuPerEventMs, cpuMs: p.userMs + p.systemMs, hwmMB: p.hwmKB / 1024, rssAtFirstMB: atFirst.rssMB, ...idle, ...churn })}\n`);
  } finally {
    child.kill('SIGTERM');
    generations.stop();
    await server.close();
  }
}

/** The agent's CPU over `seconds` with nothing changing (its timers: resyncs, table checks). */
async function idleCpu(pid: number, seconds: number): Promise<{ idleS?: number; idleCpuMs?: number }> {
  if (seconds <= 0) return {};
  const cpu0 = procStats(pid).cpuMs;
  await new Promise((resolve) => setTimeout(resolve, seconds * 1000));
  return { idleS: seconds, idleCpuMs: procStats(pid).cpuMs - cpu0 };
}

/** Endpoint churn for `seconds`: each write gives one endpoint of a random slice a new address
 * (the slice keeps its size) and waits for the commit; then the agent's RSS, a second after. */
async function endpointChurn(server: TestApiServer, generations: GenerationWatch, pid: number, slices: EndpointSliceInfo[], seconds: number): Promise<{ churnS?: number; churnWrites?: number; churnMissed?: number; churnCpuMs?: number; rssTrendMB?: number[]; rssAfterChurnMB?: number; hwmAfterChurnMB?: number }> {
  if (seconds <= 0) return {};
  const maxWrites = Number(process.env.PROXY_LIVE_CHURN_WRITES ?? Infinity);
  const rand = mulberry32(28);
  const start = performance.now();
  const end = start + seconds * 1000;
  const cpu0 = procStats(pid).cpuMs;
  const rssTrendMB: number[] = [];
  let writes = 0;
  let missed = 0;
  while (performance.now() < end && writes < maxWrites) {
    if (performance.now() - start >= ((rssTrendMB.length + 1) * seconds * 1000) / 10) rssTrendMB.push(Math.round(procStats(pid).rssMB));
    const target = slices[Math.floor(rand() * slices.length)];
    const n = writes++;
    const w0 = process.hrtime.bigint();
    server.modify('EndpointSlice', 'ns', target.name, (s) => {
      const eps = s.endpoints as { addresses: string[] }[];
      eps[n % eps.length].addresses = [`100.126.${(n >> 8) & 255}.${n & 255}`];
    });
    if ((await generations.after(w0, 5_000)) === undefined) missed++;
  }
  const churnCpuMs = procStats(pid).cpuMs - cpu0;
  await generations.settle(1000);
  const after = procStats(pid);
  return { churnS: Math.round((performance.now() - start) / 1000), churnWrites: writes, churnMissed: missed, churnCpuMs, rssTrendMB, rssAfterChurnMB: after.rssMB, hwmAfterChurnMB: after.hwmMB };
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
