/** Bounded kernel transactions (issue 28 target 1): a first full sync as one transaction (as before)
 * and in bounded batches (src/pipeline/batches.ts), side by side, interleaved, each in a fresh
 * namespace with a second process (bench/commit-probe.js) committing one element to a table of
 * its own every ~1 ms and timing each commit: what any other netlink writer on the node waits
 * while the sync holds the kernel's commit mutex. Sizes: 5k Services x 50 endpoints, 44,125
 * Services x 2 endpoints, 20k pods / 2k policies (BATCH_BENCH_SIZES=proxy:5000x50,policy:20000x2000
 * picks; BATCH_BENCH_ROUNDS, BATCH_BENCH_LIMITS=OBJECTS,ELEMENTS, BATCH_BENCH_VERBOSE=1 prints each
 * transaction's kernel time). Each method also runs once with no second writer, for the total
 * alone. Then `agent --once --proxy` at 5k x 50 as a new process, both ways, for its peak RSS
 * (BATCH_BENCH_ONCE=0 skips it; BATCH_BENCH_ONCE_ROUNDS, default 2, its runs of each). */
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { PolicyComponent } from '../src/policy/component';
import { ClusterSnapshot } from '../src/k8s/source';
import { Agent, SyncReport } from '../src/pipeline/agent';
import { BatchLimits, DEFAULT_BATCH_LIMITS } from '../src/pipeline/batches';
import { Component } from '../src/pipeline/component';
import { ProxyComponent } from '../src/proxy/component';
import { openSandbox } from '../test/helpers/netns';
import { node, service, snapshotOf } from '../test/proxy/fixtures';
import { buildCluster, NODE as POLICY_NODE } from './cluster';
import { ms, ratio, table } from './harness';
import { cluster, NODE as PROXY_NODE, proxyObjects } from './proxy-cluster';

const ONE_TRANSACTION: BatchLimits = { objects: Infinity, elements: Infinity };
/** BATCH_BENCH_LIMITS=OBJECTS,ELEMENTS tries other limits than the default. */
const LIMITS: BatchLimits = process.env.BATCH_BENCH_LIMITS ? (([objects, elements]) => ({ objects, elements }))(process.env.BATCH_BENCH_LIMITS.split(',').map(Number)) : DEFAULT_BATCH_LIMITS;

interface Size {
  label: string;
  snapshot: () => ClusterSnapshot;
  component: () => Component;
}

function proxySize(n: number, perService: number): Size {
  return {
    label: `${n} Services x ${perService} endpoints (proxy)`,
    snapshot: () => {
      const { services, slices } = cluster(n, perService);
      return snapshotOf([...services, service('ns', 'headless', { headless: true })], slices, [node(PROXY_NODE, { podCIDRs: ['100.64.0.0/10'] })]);
    },
    component: () => new ProxyComponent({ nodeName: PROXY_NODE }),
  };
}

function policySize(pods: number, policies: number): Size {
  return {
    label: `${pods / 1000}k pods / ${policies} policies (policy)`,
    snapshot: () => {
      const c = buildCluster(pods, policies, 42);
      return {
        pods: new Map(c.pods.map((p) => [`${p.namespace}/${p.name}`, p])),
        namespaces: new Map(c.namespaces.map((x) => [x.name, x])),
        policies: new Map(c.policies.map((p) => [`${p.namespace}/${p.name}`, p])),
      };
    },
    component: () => new PolicyComponent({ nodeName: POLICY_NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) }),
  };
}

interface Run {
  totalMs: number;
  report: SyncReport;
  probe: number[];
}

/** One first sync in a fresh namespace with no other writer: its total alone. */
async function alone(size: Size, snapshot: ClusterSnapshot, limits: BatchLimits): Promise<number> {
  const sb = openSandbox();
  try {
    const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [size.component()], batchLimits: limits });
    const t0 = performance.now();
    await agent.start(snapshot);
    const totalMs = performance.now() - t0;
    agent.stop();
    return totalMs;
  } finally {
    await sb.close();
  }
}

/** One first sync in a fresh namespace, with the probe writing beside it. */
async function once(size: Size, snapshot: ClusterSnapshot, limits: BatchLimits): Promise<Run> {
  const sb = openSandbox();
  const probe = spawn('nsenter', [`--net=${sb.netns.path}`, process.execPath, join(__dirname, 'commit-probe.js')], { stdio: ['pipe', 'pipe', 'inherit'] });
  let out = '';
  probe.stdout.setEncoding('utf8');
  const ready = new Promise<void>((resolve) => probe.stdout.on('data', (chunk: string) => void ((out += chunk), out.startsWith('ready\n') && resolve())));
  const exited = new Promise<void>((resolve) => probe.on('close', () => resolve()));
  try {
    await ready;
    // Let the probe reach its steady pace first.
    await new Promise((resolve) => setTimeout(resolve, 200));
    let report!: SyncReport;
    const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [size.component()], batchLimits: limits, observer: { synced: (r) => void (report = r) } });
    const from = performance.timeOrigin + performance.now();
    const t0 = performance.now();
    await agent.start(snapshot);
    const totalMs = performance.now() - t0;
    if (process.env.BATCH_BENCH_VERBOSE) process.stderr.write(`${size.label}: ${report.batchKernelMs?.map((x) => x.toFixed(1)).join(' ')}\n`);
    const to = performance.timeOrigin + performance.now();
    agent.stop();
    probe.stdin.end();
    await exited;
    const samples = JSON.parse(out.slice('ready\n'.length).trim()) as [number, number][];
    // Commits that started during the sync, or were already waiting when it began.
    const during = samples.filter(([at, took]) => at + took >= from && at <= to).map(([, took]) => took);
    return { totalMs, report, probe: during };
  } finally {
    probe.kill();
    await sb.close();
  }
}

const quantile = (xs: number[], q: number): number => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor(q * s.length))] : NaN;
};

function row(label: string, method: string, r: Run, oneTx: Run, aloneMs: number, oneTxAloneMs: number): string[] {
  const batches = r.report.batchKernelMs ?? [r.report.stages?.kernel ?? 0];
  return [
    label,
    method,
    `${ms(aloneMs)} (${ratio(aloneMs, oneTxAloneMs)})`,
    ms(r.totalMs),
    ratio(r.totalMs, oneTx.totalMs),
    String(batches.length),
    `${ms(quantile(batches, 0.5))} / ${ms(Math.max(...batches))}`,
    `${ms(quantile(r.probe, 0.5))} / ${ms(quantile(r.probe, 0.99))} / ${ms(Math.max(...r.probe))} (${r.probe.length})`,
  ];
}

/** `nfkube agent --once --proxy --no-policy` over a manifests directory, a new process in a fresh
 * namespace: wall, CPU and peak RSS (bench/probe.js), with the given NFKUBE_TEST_BATCH_LIMITS. */
function agentOnce(dir: string, limits: string): { wallMs: number; cpuMs: number; hwmMB: number } {
  const probe = join(dir, 'probe.json');
  const sb = openSandbox();
  try {
    const t0 = performance.now();
    const r = spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, '-r', join(__dirname, 'probe.js'), join(__dirname, '..', '..', 'bin', 'nfkube'), 'agent', '--once', '--manifests', dir, '--proxy', '--no-policy', '--node-name', PROXY_NODE], {
      env: { ...process.env, NFKUBE_BENCH_PROBE: probe, NFKUBE_TEST_BATCH_LIMITS: limits },
      encoding: 'utf8',
    });
    const wallMs = performance.now() - t0;
    if (r.status !== 0) throw new Error(`agent --once exited ${r.status}: ${r.stderr.slice(-2000)}`);
    const p = JSON.parse(readFileSync(probe, 'utf8').trim().split('\n').pop()!) as { userMs: number; systemMs: number; hwmKB: number };
    rmSync(probe);
    return { wallMs, cpuMs: p.userMs + p.systemMs, hwmMB: p.hwmKB / 1024 };
  } finally {
    void sb.close();
  }
}

/** Peak RSS of `agent --once --proxy` (issue 28 target 4), one transaction against bounded ones. */
function onceRows(n: number, perService: number): string[][] {
  const { services, slices } = cluster(n, perService);
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-batch-bench-'));
  try {
    writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: proxyObjects(services, slices) }));
    const methods: [string, string][] = [
      ['one transaction (before)', '1000000000,1000000000'],
      [`bounded batches (${LIMITS.objects} objects / ${LIMITS.elements} elements)`, `${LIMITS.objects},${LIMITS.elements}`],
    ];
    const runs = methods.map(() => [] as { wallMs: number; cpuMs: number; hwmMB: number }[]);
    for (let round = 0; round < Number(process.env.BATCH_BENCH_ONCE_ROUNDS ?? 2); round++) methods.forEach(([, limits], i) => runs[i].push(agentOnce(dir, limits)));
    return methods.map(([method], i) => {
      const best = runs[i].reduce((a, b) => (b.wallMs < a.wallMs ? b : a));
      const peak = Math.min(...runs[i].map((r) => r.hwmMB));
      return [`${n} Services x ${perService} endpoints`, method, ms(best.wallMs), ms(best.cpuMs), `${peak.toFixed(0)} MiB`];
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const sizes: Size[] = [];
  const only = process.env.BATCH_BENCH_SIZES?.split(',');
  for (const spec of only ?? ['proxy:5000x50', 'proxy:44125x2', 'policy:20000x2000']) {
    const [kind, dims] = spec.split(':');
    const [a, b] = dims.split('x').map(Number);
    sizes.push(kind === 'proxy' ? proxySize(a, b) : policySize(a, b));
  }
  const rows: string[][] = [];
  for (const size of sizes) {
    const snapshot = size.snapshot();
    // Interleaved, two rounds (BATCH_BENCH_ROUNDS); the better total of each method.
    const runs: { one: Run[]; bounded: Run[] } = { one: [], bounded: [] };
    const aloneMs = { one: Infinity, bounded: Infinity };
    for (let round = 0; round < Number(process.env.BATCH_BENCH_ROUNDS ?? 2); round++) {
      aloneMs.one = Math.min(aloneMs.one, await alone(size, snapshot, ONE_TRANSACTION));
      aloneMs.bounded = Math.min(aloneMs.bounded, await alone(size, snapshot, LIMITS));
      runs.one.push(await once(size, snapshot, ONE_TRANSACTION));
      runs.bounded.push(await once(size, snapshot, LIMITS));
    }
    const best = (rs: Run[]) => rs.reduce((a, b) => (b.totalMs < a.totalMs ? b : a));
    const one = best(runs.one);
    const bounded = best(runs.bounded);
    const done = [row(size.label, 'one transaction (before)', one, one, aloneMs.one, aloneMs.one), row(size.label, `bounded batches (${LIMITS.objects} objects / ${LIMITS.elements} elements)`, bounded, one, aloneMs.bounded, aloneMs.one)];
    process.stderr.write(done.map((r) => `${r.join(' | ')}\n`).join(''));
    rows.push(...done);
  }
  const onceProxy = process.env.BATCH_BENCH_ONCE === '0' ? [] : onceRows(5000, 50);
  process.stdout.write('## Bounded kernel transactions (issue 28 target 1): first full sync, and a second writer beside it\n\n');
  process.stdout.write(
    table(['cluster', 'method', 'full sync, no other writer (vs one transaction)', 'full sync beside the second writer (render, plan, commit)', 'vs one transaction', 'transactions', 'kernel per transaction, send -> ack: p50 / max', 'second process, one-element commit on its own table during the sync: p50 / p99 / max (commits)'], rows) +
      '\n\nIn-process (the Agent over ready objects: the component renders, the pipeline plans and commits), a fresh namespace per run; the two methods interleaved, two rounds unless stated, the better total of each shown. The second process commits one element to a set of its own table ~1 ms apart for the whole run; its commits that overlap the sync are counted. Targets: no transaction over 50 ms in the kernel, the second writer\'s p99 under 60 ms, the full sync within 1.2x of one transaction.\n',
  );
  if (onceProxy.length) {
    process.stdout.write(
      `\n${table(['cluster', 'method', 'wall', 'CPU', `peak RSS (VmHWM${Number(process.env.BATCH_BENCH_ONCE_ROUNDS ?? 2) > 1 ? ', the lowest of the runs' : ', one run'})`], onceProxy)}\n\n\`nfkube agent --once --manifests DIR --proxy --no-policy\` as a new process in a fresh namespace (bench/probe.js), one JSON List manifest; the one-transaction rows set NFKUBE_TEST_BATCH_LIMITS high enough for one. Issue 28 target 4: peak RSS <= 256 MiB (DaemonSet limit 384Mi).\n`,
    );
  }
}

void main();
