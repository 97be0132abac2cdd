/** Issue 28, targets 2 and 4, as new processes: the service proxy's memory at 5k Services x 50
 * endpoints (`agent --once`, and the long-running agent after endpoint churn) and the
 * long-running agent at 44,125 Services x 2 endpoints (idle CPU, RSS after churn), beside the
 * kube-proxy-style `nft -f` of the same Services, bounded in time.
 *
 * NFKUBE_BENCH_BEFORE=<another checkout, built>: its `agent --once` rows too, interleaved.
 * PROXY_SCALE_CHURN_S (default 120) and PROXY_SCALE_IDLE_S (default 60): the long-running
 * rows' churn and idle spans. PROXY_SCALE_NFT_BOUND_S (default 300): the longest `nft -f` is
 * given before it is stopped and its time extrapolated from the smaller sizes.
 * PROXY_SCALE_ROWS=once,live,nft (default all) and PROXY_SCALE_LIVE=5000x50,44125x2 pick rows. */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { openSandbox } from '../test/helpers/netns';
import { ms, table } from './harness';
import { cluster, kubeProxyText, NODE, proxyObjects } from './proxy-cluster';

const NFKUBE = join(__dirname, '..', '..', 'bin', 'nfkube');
const BEFORE = process.env.NFKUBE_BENCH_BEFORE ? join(process.env.NFKUBE_BENCH_BEFORE, 'bin', 'nfkube') : undefined;
const CHURN_S = Number(process.env.PROXY_SCALE_CHURN_S ?? 120);
const IDLE_S = Number(process.env.PROXY_SCALE_IDLE_S ?? 60);
const NFT_BOUND_S = Number(process.env.PROXY_SCALE_NFT_BOUND_S ?? 300);
/** PROXY_SCALE_ONCE_RUNS (default 2): runs of each `--once` row. */
const RUNS = Number(process.env.PROXY_SCALE_ONCE_RUNS ?? 2);

/** The DaemonSet's NODE_OPTIONS (deploy/kubernetes/daemonset.yaml). */
const DAEMONSET_NODE_OPTIONS = /- name: NODE_OPTIONS\n\s+value: (.+)/.exec(readFileSync(join(__dirname, '..', '..', 'deploy', 'kubernetes', 'daemonset.yaml'), 'utf8'))?.[1].trim() ?? '';

const work = mkdtempSync(join(tmpdir(), 'nfkube-proxy-scale-'));

interface Once {
  cpuMs: number;
  wallMs: number;
  hwmMB: number;
}

/** `nfkube agent --once --manifests DIR --proxy --no-policy`, a new process in a fresh namespace. */
function agentOnce(bin: string, dir: string, nodeOptions: string): Once {
  const probe = join(work, 'probe.json');
  rmSync(probe, { force: true });
  const sb = openSandbox();
  try {
    const t0 = performance.now();
    const r = spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, '-r', join(__dirname, 'probe.js'), bin, 'agent', '--once', '--manifests', dir, '--proxy', '--no-policy', '--node-name', NODE, '--log-level', 'warn', '--timeout', '900s'], {
      env: { ...process.env, NFKUBE_BENCH_PROBE: probe, NODE_OPTIONS: nodeOptions },
      encoding: 'utf8',
    });
    const wallMs = performance.now() - t0;
    if (r.status !== 0) throw new Error(`agent --once exited ${r.status}: ${r.stderr.slice(-2000)}`);
    const p = JSON.parse(readFileSync(probe, 'utf8').trim().split('\n').pop()!) as { userMs: number; systemMs: number; hwmKB: number };
    return { cpuMs: p.userMs + p.systemMs, wallMs, hwmMB: p.hwmKB / 1024 };
  } finally {
    void sb.close();
  }
}

/** Target 4, `--once`: one JSON List and 51 files, default V8 flags and the DaemonSet's. */
function onceRows(): string[][] {
  const { services, slices } = cluster(5000, 50);
  const objects = proxyObjects(services, slices);
  const oneList = join(work, 'one-list');
  const files = join(work, 'files');
  mkdirSync(oneList);
  mkdirSync(files);
  writeFileSync(join(oneList, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  for (let i = 0; i * 200 < objects.length; i++) writeFileSync(join(files, `objects-${String(i).padStart(2, '0')}.json`), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects.slice(i * 200, (i + 1) * 200) }));
  const variants: { what: string; dir: string; bin: string; build: string; flags: string }[] = [];
  for (const flags of ['', DAEMONSET_NODE_OPTIONS]) {
    variants.push({ what: 'one JSON List (22 MB)', dir: oneList, bin: NFKUBE, build: 'this build', flags });
    variants.push({ what: '51 JSON Lists of 200 objects', dir: files, bin: NFKUBE, build: 'this build', flags });
    if (BEFORE) variants.push({ what: 'one JSON List (22 MB)', dir: oneList, bin: BEFORE, build: 'before', flags });
  }
  const runs = variants.map(() => [] as Once[]);
  for (let r = 0; r < RUNS; r++) variants.forEach((v, i) => runs[i].push(agentOnce(v.bin, v.dir, v.flags)));
  return variants.map((v, i) => {
    const best = runs[i].reduce((a, b) => (b.cpuMs < a.cpuMs ? b : a));
    return ['5000 x 50', v.what, v.build, v.flags || '(none)', ms(best.cpuMs), ms(best.wallMs), runs[i].map((x) => `${x.hwmMB.toFixed(0)}`).join(', ') + ' MiB'];
  });
}

interface Live {
  firstCommitMs: number;
  p50: number;
  p99: number;
  missed: number;
  hwmMB: number;
  rssAtFirstMB: number;
  idleS?: number;
  idleCpuMs?: number;
  churnS?: number;
  churnWrites?: number;
  churnMissed?: number;
  rssAfterChurnMB?: number;
  hwmAfterChurnMB?: number;
}

/** The long-running agent over HTTP (bench/proxy-live.js in a fresh namespace), as the DaemonSet
 * runs it: first commit, 61 endpoint changes, then idle, then churn. */
function live(n: number, perService: number): Live {
  const sb = openSandbox();
  try {
    sb.run('ip', ['link', 'set', 'lo', 'up']);
    const r = spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, join(__dirname, 'proxy-live.js'), String(n), String(perService)], {
      env: { ...process.env, NFKUBE_PROXY_LIVE_NETNS: '1', PROXY_LIVE_IDLE_S: String(IDLE_S), PROXY_LIVE_CHURN_S: String(CHURN_S), PROXY_LIVE_NODE_OPTIONS: DAEMONSET_NODE_OPTIONS },
      encoding: 'utf8',
      timeout: 1_800_000,
      maxBuffer: 64 * 1024 * 1024,
    });
    if (r.status !== 0) throw new Error(`proxy-live ${n}x${perService} exited ${r.status}: ${r.stderr.slice(-2000)}`);
    return JSON.parse(r.stdout.trim().split('\n').pop()!) as Live;
  } finally {
    void sb.close();
  }
}

function liveRow(n: number, perService: number, x: Live): string[] {
  return [
    `${n} x ${perService}`,
    ms(x.firstCommitMs),
    `${x.rssAtFirstMB.toFixed(0)} MiB`,
    `${ms(x.p50)} / ${ms(x.p99)} (${x.missed} missed)`,
    x.idleCpuMs === undefined ? '-' : `${ms(x.idleCpuMs)} over ${x.idleS} s (${((x.idleCpuMs / (x.idleS! * 1000)) * 100).toFixed(2)}% of a CPU)`,
    x.churnWrites === undefined ? '-' : `${x.churnWrites} writes in ${x.churnS} s (${x.churnMissed} missed)`,
    x.rssAfterChurnMB === undefined ? '-' : `${x.rssAfterChurnMB.toFixed(0)} MiB`,
    `${(x.hwmAfterChurnMB ?? x.hwmMB).toFixed(0)} MiB`,
  ];
}

/** `nft -f` of the kube-proxy-style rendering, a new process in a fresh namespace, stopped after
 * NFT_BOUND_S: its wall time, or undefined when it did not finish. */
function nftReference(n: number, perService: number): { ms?: number; chains: number } {
  const { services, slices } = cluster(n, perService);
  const file = join(work, `kube-proxy-${n}x${perService}.nft`);
  writeFileSync(file, kubeProxyText(services, slices));
  const sb = openSandbox();
  try {
    const t0 = performance.now();
    const r = spawnSync('nsenter', [`--net=${sb.netns.path}`, 'nft', '-f', file], { timeout: NFT_BOUND_S * 1000, killSignal: 'SIGKILL', encoding: 'utf8' });
    const took = performance.now() - t0;
    if (r.status !== 0 && r.signal === null) throw new Error(`nft -f ${n}x${perService}: ${r.stderr.slice(-1000)}`);
    return { ms: r.status === 0 ? took : undefined, chains: n * (1 + perService) };
  } finally {
    void sb.close();
    rmSync(file, { force: true });
  }
}

const ROWS = new Set((process.env.PROXY_SCALE_ROWS ?? 'once,live,nft').split(','));

async function main(): Promise<void> {
  const once = ROWS.has('once') ? onceRows() : [];
  process.stderr.write(once.map((r) => `${r.join(' | ')}\n`).join(''));
  const lives = ROWS.has('live') ? (process.env.PROXY_SCALE_LIVE ?? '5000x50,44125x2').split(',').map((x) => x.split('x').map(Number) as [number, number]) : [];
  const liveRows = lives.map(([n, k]) => {
    const row = liveRow(n, k, live(n, k));
    process.stderr.write(`${row.join(' | ')}\n`);
    return row;
  });
  // 2500 x 2 as well: two sizes finish within a short bound (PROXY_SCALE_NFT_BOUND_S) on a busy machine, for the fit.
  const refs: [number, number][] = [
    [2500, 2],
    [5000, 2],
    [10000, 2],
    [44125, 2],
  ];
  const nft = ROWS.has('nft') ? refs.map(([n, k]) => ({ n, k, ...nftReference(n, k) })) : [];
  // A power law through the two largest sizes that finished, in chains (one per Service and one
  // per endpoint in kube-proxy's layout), for a size that did not.
  const done = nft.filter((x) => x.ms !== undefined);
  const fit = done.length >= 2 ? { a: done[done.length - 2], b: done[done.length - 1] } : undefined;
  const exponent = fit ? Math.log(fit.b.ms! / fit.a.ms!) / Math.log(fit.b.chains / fit.a.chains) : undefined;
  const nftRows = nft.map((x) => [
    `${x.n} x ${x.k}`,
    String(x.chains),
    x.ms !== undefined ? ms(x.ms) : `not done in ${NFT_BOUND_S} s; ~${fit && exponent ? ms(fit.b.ms! * (x.chains / fit.b.chains) ** exponent) : '?'} extrapolated (time ~ chains^${exponent?.toFixed(2) ?? '?'})`,
  ]);

  process.stdout.write('## Issue 28, targets 2 and 4: the service proxy at scale, new processes\n\n');
  if (once.length) process.stdout.write(table(['cluster', 'manifests', 'build', 'NODE_OPTIONS', 'CPU', 'wall', 'peak RSS (VmHWM), each run'], once));
  if (once.length) process.stdout.write(
    `\n\n\`nfkube agent --once --manifests DIR --proxy --no-policy\` as a new process in a fresh namespace (bench/probe.js), ${RUNS} runs each, interleaved; the lower-CPU run's CPU and wall. Target 4: peak RSS <= 256 MiB (the DaemonSet's limit is 384Mi; its NODE_OPTIONS are \`${DAEMONSET_NODE_OPTIONS}\`).\n\n`,
  );
  if (liveRows.length) process.stdout.write(table(['Services x endpoints', 'first commit', 'RSS at first commit (VmRSS)', 'one endpoint change p50 / p99 (61 writes)', `idle CPU`, 'endpoint churn', 'RSS after churn (VmRSS)', 'peak RSS (VmHWM)'], liveRows));
  if (liveRows.length) process.stdout.write(
    `\n\nThe long-running agent (\`agent --kubeconfig K --proxy --no-policy\`, NODE_OPTIONS \`${DAEMONSET_NODE_OPTIONS}\`) over HTTP against the test API server, a new process in a fresh namespace (bench/proxy-live.js): the first commit, 61 writes of one slice, then ${IDLE_S} s with nothing changing (idle CPU: the agent's utime + stime over it), then ${CHURN_S} s of endpoint churn (each write moves one endpoint of a random slice to a new address and waits for its commit; a shortened soak, not an hour), and its RSS a second after.\n\n`,
  );
  if (nftRows.length) process.stdout.write(table(['Services x endpoints', 'chains (kube-proxy layout)', '`nft -f`, kube-proxy style, new process: wall'], nftRows));
  if (nftRows.length) process.stdout.write(`\n\nThe kube-proxy-style rendering (bench/proxy-cluster.ts: a chain per Service and per endpoint, as its nftables proxier writes them) loaded by \`nft -f\` into a fresh namespace, stopped after ${NFT_BOUND_S} s.\n`);
  rmSync(work, { recursive: true, force: true });
}

void main();
