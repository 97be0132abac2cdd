/** The watch stream alone (issue 13 target 5): from the test API server handing a Pod event to
 * the socket to the watcher's callback, and the watcher's CPU per event, for client-node's Watch
 * (node-fetch + readline) and nfkube's RawWatch (node:http, src/k8s/raw-watch.ts). Each watcher
 * runs in a process of its own that does nothing else; rounds alternate between the two, events
 * one at a time (the next written once the last arrived). Run: node dist/bench/watch.bench.js */
import { ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadInformerClient } from '../src/k8s/client-node';
import { loadKubeConfig } from '../src/k8s/informer-source';
import { RawWatch } from '../src/k8s/raw-watch';
import { TestApiServer } from '../test/helpers/apiserver';
import { makePod, rng } from './cluster';
import { ms, ratio, table } from './harness';
import { podObject } from './manifests';

const QUICK = process.argv.includes('--quick') || process.env.NFKUBE_BENCH_QUICK === '1';
const EVENTS = QUICK ? 100 : 400;
const ROUNDS = QUICK ? 1 : 3;
const WATCHERS = ['client-node Watch', 'RawWatch'] as const;
type Which = (typeof WATCHERS)[number];

/** The watcher process: prints `ready`, then `MONOTONIC_NS` per event, then `cpu USER_US SYS_US` on stdin's end. */
async function child(which: Which, kubeconfig: string): Promise<void> {
  await loadInformerClient();
  const kc = loadKubeConfig(kubeconfig);
  const onEvent = (type: string) => {
    if (type === 'ADDED' || type === 'DELETED') process.stdout.write(`${process.hrtime.bigint()}\n`);
  };
  const done = (err: unknown) => {
    if (err) process.stderr.write(`watch ended: ${String(err)}\n`);
  };
  const query = { resourceVersion: process.argv[5], allowWatchBookmarks: true, timeoutSeconds: 3600 };
  const { Watch } = await loadInformerClient();
  const controller = which === 'RawWatch' ? await new RawWatch(kc).watch('/api/v1/pods', query, onEvent, done) : await new Watch(kc).watch('/api/v1/pods', query, onEvent, done);
  const cpu0 = process.cpuUsage();
  process.stdout.write('ready\n');
  process.stdin.resume();
  process.stdin.on('end', () => {
    const c = process.cpuUsage(cpu0);
    process.stdout.write(`cpu ${c.user} ${c.system}\n`);
    controller.abort();
    process.exit(0);
  });
}

class Lines {
  private buf = '';
  private readonly queue: string[] = [];
  private waiter?: () => void;
  constructor(proc: ChildProcess) {
    proc.stdout!.on('data', (d) => {
      this.buf += d;
      let nl;
      while ((nl = this.buf.indexOf('\n')) >= 0) {
        this.queue.push(this.buf.slice(0, nl));
        this.buf = this.buf.slice(nl + 1);
      }
      this.waiter?.();
    });
  }
  async next(): Promise<string> {
    while (this.queue.length === 0) await new Promise<void>((r) => (this.waiter = r));
    return this.queue.shift()!;
  }
}

interface RoundResult {
  latencies: number[];
  cpuUsPerEvent: number;
}

async function round(which: Which, server: TestApiServer, kubeconfig: string, base: number): Promise<RoundResult> {
  const proc = spawn(process.execPath, [__filename, '--child', which, kubeconfig, server.resourceVersion], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = new Lines(proc);
  if ((await lines.next()) !== 'ready') throw new Error(`${which}: no ready line`);
  const latencies: number[] = [];
  for (let i = 0; i < EVENTS; i++) {
    const n = base + (i >> 1);
    const p = makePod(rng(n), n, 'ns-0', 0);
    if (i % 2 === 0) server.create(podObject({ ...p, name: `w-${n}` }, n));
    else server.delete('Pod', 'ns-0', `w-${n}`);
    const sent = server.lastSentAt!;
    latencies.push(Number(BigInt(await lines.next()) - sent) / 1e6);
  }
  proc.stdin!.end();
  const [, user, sys] = (await lines.next()).split(' ').map(Number);
  await new Promise((r) => proc.on('exit', r));
  return { latencies, cpuUsPerEvent: (user + sys) / EVENTS };
}

async function main(): Promise<void> {
  if (process.argv[2] === '--child') return child(process.argv[3] as Which, process.argv[4]);
  const work = mkdtempSync(join(tmpdir(), 'nfkube-watch-bench-'));
  const server = await TestApiServer.start();
  try {
    server.create({ kind: 'Namespace', metadata: { name: 'ns-0' } });
    const kubeconfig = server.writeKubeconfig(join(work, 'kubeconfig'));
    const all = new Map<Which, RoundResult[]>(WATCHERS.map((w) => [w, []]));
    let base = 1_000_000;
    for (let r = 0; r < ROUNDS; r++) {
      for (const w of WATCHERS) {
        all.get(w)!.push(await round(w, server, kubeconfig, base));
        base += EVENTS;
      }
    }
    const pct = (xs: number[], q: number) => xs[Math.min(xs.length - 1, Math.floor(q * xs.length))];
    const summary = WATCHERS.map((w) => {
      const rs = all.get(w)!;
      const lat = rs.flatMap((x) => x.latencies).sort((a, b) => a - b);
      const cpu = Math.min(...rs.map((x) => x.cpuUsPerEvent)) / 1000;
      return { w, p50: pct(lat, 0.5), p99: pct(lat, 0.99), cpu };
    });
    const ref = summary[0];
    const out: string[] = [];
    out.push('## Watch stream: event sent -> watcher callback (issue 13 target 5)\n');
    out.push(`A Pod event (~2 KB) from the test API server to a watcher in its own process; ${ROUNDS} alternating rounds of ${EVENTS} events, one at a time. CPU is the watcher process's own, per event (best round).\n`);
    out.push(
      table(
        ['watcher', 'sent -> callback p50', 'p99', 'CPU per event', 'p50 vs client-node', 'CPU vs client-node'],
        summary.map((s) => [s.w, ms(s.p50), ms(s.p99), ms(s.cpu), ratio(s.p50, ref.p50), ratio(s.cpu, ref.cpu)]),
      ),
    );
    process.stdout.write(out.join('\n') + '\n');
  } finally {
    await server.close();
    rmSync(work, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
