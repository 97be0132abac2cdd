/** Issue 13 target 1: the agent as users run it, each run a new process in a fresh network
 * namespace. `agent --once --manifests DIR` over five directory layouts (YAML and JSON; one
 * object per file, multi-document, `kind: List`) next to `nft -f` of the straightforward rendering
 * of the same intent; the agent over HTTP against the test API server (paged LIST, then watch);
 * event latency from an API write or a file write to the commit, seen by polling the ruleset
 * generation from this process on its own socket; and cold start.
 *
 * CPU is the measured process's own (getrusage at exit, through bench/probe.js; /proc/PID/stat
 * for a process still running; /usr/bin/time for nft), peak RSS is VmHWM. The machine is shared:
 * methods are interleaved, each row is the best of its runs, and the ratios are the result.
 * Run: node dist/bench/e2e.bench.js [--quick] (NFKUBE_BENCH_QUICK=1 does the same: 1k pods).
 * NFKUBE_BENCH_BEFORE=DIR (a built checkout: DIR/bin/nfkube, DIR/dist) adds, interleaved in the
 * same run, a "before" row for each `--once`, cold-start, `ipset restore` and live row; --rows
 * once,live,cold,ipset runs only those groups (default all); --live-rows informer:5000:500,watch:5000:500
 * picks the live rows (default: informer at each size, then the watched directory);
 * NFKUBE_BENCH_LIVE_ROUNDS=N runs each live row N times, builds interleaved (in turn first).
 * NFKUBE_BENCH_TRACE=1 runs the live agents with NFKUBE_LATENCY_TRACE (src/observe/latency-trace.ts)
 * and splits each event's latency by stage, with the slowest events and the GC pauses inside them. */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { stringify } from 'yaml';
import { Netns } from '../src/netlink/netns';
import { NetlinkSocket } from '../src/netlink/socket';
import { getGeneration } from '../src/nft/generation';
import { compileFull } from '../src/policy/engine/compile';
import { CLUSTER_NETWORK_POLICIES, TestApiServer } from '../test/helpers/apiserver';
import { buildCluster, Cluster, makePod, NODE, podIp, rng } from './cluster';
import { ms, procStats, ratio, table } from './harness';
import { GenerationWatch } from './generation-watch';
import { clusterObjects, K8sObject, Layout, LAYOUTS, podObject, servedObject, writeLayout } from './manifests';
import { straightforwardNft } from './reference';
import { LatencySplit, splitLatency, splitText } from './latency-split';
import { benchPolicy, RULES } from './cnp-policies';
import { percentile } from './percentile';

const QUICK = process.argv.includes('--quick') || process.env.NFKUBE_BENCH_QUICK === '1';
/** NFKUBE_BENCH_BIN: another build's bin/nfkube, to compare two builds side by side. */
const NFKUBE = process.env.NFKUBE_BENCH_BIN ?? join(__dirname, '..', '..', 'bin', 'nfkube');
/** Another build of nfkube to compare with, row by row: its bin/nfkube. */
const BEFORE = process.env.NFKUBE_BENCH_BEFORE ? join(process.env.NFKUBE_BENCH_BEFORE, 'bin', 'nfkube') : undefined;
/** The builds each compared row runs: this one, then the one before, if given. */
const BUILDS: { label: string; bin: string }[] = [{ label: '', bin: NFKUBE }, ...(BEFORE ? [{ label: ' (before)', bin: BEFORE }] : [])];
const ROWS = ((): Set<string> => {
  const i = process.argv.indexOf('--rows');
  return new Set(i >= 0 ? process.argv[i + 1].split(',') : ['once', 'live', 'cold', 'ipset']);
})();
const PROBE = join(__dirname, 'probe.js');
const ONCE_SIZE: [number, number] = QUICK ? [1000, 100] : [5000, 500];
const INFORMER_SIZES: [number, number][] = QUICK ? [[1000, 100]] : [[5000, 500], [20000, 2000]];
const RUNS = QUICK ? 1 : 2;
const LIVE_ROUNDS = Number(process.env.NFKUBE_BENCH_LIVE_ROUNDS ?? 1);
const TRACE = process.env.NFKUBE_BENCH_TRACE === '1';
const EVENTS = QUICK ? 20 : 100;
/** Bursts after the single events: BURST pod adds written on consecutive turns of this
 * process's event loop, then their deletes likewise. */
const BURSTS = QUICK ? 4 : 10;
const BURST = 20;

const work = mkdtempSync(join(tmpdir(), 'nfkube-e2e-bench-'));

/** The running agent's rows run it as the DaemonSet does: with the NODE_OPTIONS its manifest sets. */
const DAEMONSET_ENV = ((): NodeJS.ProcessEnv => {
  const m = /- name: NODE_OPTIONS\n\s+value: (.+)/.exec(readFileSync(join(__dirname, '..', '..', 'deploy', 'kubernetes', 'daemonset.yaml'), 'utf8'));
  return m ? { NODE_OPTIONS: m[1].trim() } : {};
})();

interface ProcStats {
  cpuMs: number;
  wallMs: number;
  hwmMB: number;
  firstCommitMs?: number;
}

function best(runs: ProcStats[]): ProcStats {
  return runs.reduce((a, b) => (b.cpuMs < a.cpuMs ? b : a));
}

function sleep(msec: number): Promise<void> {
  return new Promise((r) => setTimeout(r, msec));
}

interface Started {
  child: ChildProcess;
  pid: number;
  t0: number;
  exited: Promise<number>;
  probe: string;
}

/** nfkube as a new process in netns (default: this process's), with the exit probe preloaded;
 * stdin from a file when given. */
function startNfkube(netns: Netns | undefined, args: string[], stdin?: string, env: NodeJS.ProcessEnv = {}, bin = NFKUBE): Started {
  const probe = join(work, `probe-${process.hrtime.bigint()}.json`);
  const input = stdin === undefined ? undefined : openSync(stdin, 'r');
  const t0 = performance.now();
  // nsenter enters the namespace and execs node: the child's pid is node's.
  // NFKUBE_BENCH_NODE_ARGS: node flags for the measured process only (--cpu-prof, --heap-prof).
  const flags = process.env.NFKUBE_BENCH_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
  const node = [process.execPath, ...flags, '-r', PROBE, bin, ...args];
  const [cmd, ...argv] = netns ? ['nsenter', `--net=${netns.path}`, ...node] : node;
  const child = spawn(cmd, argv, {
    env: { ...process.env, ...env, NFKUBE_BENCH_PROBE: probe },
    stdio: [input ?? 'ignore', 'ignore', 'pipe'],
    // NFKUBE_BENCH_DEBUG: the agent's log goes to this process's stderr.
  });
  if (input !== undefined) closeSync(input);
  let stderr = '';
  child.stderr!.on('data', (d) => {
    stderr += d;
    if (process.env.NFKUBE_BENCH_DEBUG) process.stderr.write(d);
  });
  const exited = new Promise<number>((resolve, reject) =>
    child.on('exit', (code) => (code === 0 ? resolve(code) : reject(new Error(`nfkube ${args.join(' ')} exited ${code}: ${stderr.slice(-2000)}`)))),
  );
  exited.catch(() => undefined);
  return { child, pid: child.pid!, t0, exited, probe };
}

function probeResult(s: Started): { cpuMs: number; hwmMB: number } {
  const r = JSON.parse(readFileSync(s.probe, 'utf8').trim().split('\n').pop()!) as { userMs: number; systemMs: number; hwmKB: number };
  return { cpuMs: r.userMs + r.systemMs, hwmMB: r.hwmKB / 1024 };
}

/** Polls the namespace's ruleset generation every millisecond until it moves (or the process
 * exits): the time of the first commit. */
async function firstCommit(socket: NetlinkSocket, s: Started, from: number, timeoutMs = 600_000): Promise<number | undefined> {
  let exited = false;
  void s.exited.then(
    () => (exited = true),
    () => (exited = true),
  );
  while (performance.now() - s.t0 < timeoutMs) {
    if ((await getGeneration(socket)) !== from) return performance.now() - s.t0;
    if (exited) return undefined;
    await sleep(1);
  }
  return undefined;
}

function withNetns<T>(fn: (netns: Netns, socket: NetlinkSocket) => Promise<T>): Promise<T> {
  const netns = Netns.create();
  const socket = NetlinkSocket.open({ netns });
  return fn(netns, socket).finally(async () => {
    await socket.close();
    netns.close();
  });
}

async function runOnce(dir: string, command: 'agent' | 'render', bin = NFKUBE): Promise<ProcStats> {
  return withNetns(async (netns, socket) => {
    const g0 = await getGeneration(socket);
    const args = command === 'agent' ? ['agent', '--once', '--manifests', dir, '--node-name', NODE, '--log-level', 'warn'] : ['render', '--manifests', dir, '--node-name', NODE];
    const s = startNfkube(netns, args, undefined, {}, bin);
    const first = command === 'agent' ? await firstCommit(socket, s, g0) : undefined;
    await s.exited;
    return { ...probeResult(s), wallMs: performance.now() - s.t0, firstCommitMs: first };
  });
}

/** A tool (nft, ipset) in a fresh namespace under /usr/bin/time: its CPU and max RSS. */
function runTool(cmd: string, args: string[], netns: Netns, input?: string): ProcStats {
  const out = join(work, 'time.txt');
  const t0 = performance.now();
  execFileSync('/usr/bin/time', ['-f', '%U %S %M', '-o', out, 'nsenter', `--net=${netns.path}`, cmd, ...args], { input, stdio: ['pipe', 'ignore', 'pipe'], maxBuffer: 1 << 30 });
  const wallMs = performance.now() - t0;
  const [u, sys, rss] = readFileSync(out, 'utf8').trim().split('\n').pop()!.split(' ').map(Number);
  return { cpuMs: (u + sys) * 1000, wallMs, hwmMB: rss / 1024 };
}

interface OnceRow {
  name: string;
  files?: number;
  mb?: number;
  stats: ProcStats;
}

async function manifestRows(cluster: Cluster, objects: K8sObject[]): Promise<{ rows: OnceRow[]; nft: ProcStats; plainRules: number }> {
  const dirs = new Map<Layout, { dir: string; files: number; bytes: number }>();
  for (const layout of LAYOUTS) {
    const dir = join(work, layout);
    dirs.set(layout, { dir, ...writeLayout(dir, objects, layout) });
  }
  const snapshot = {
    pods: cluster.pods.values(),
    namespaces: cluster.namespaces.map((n) => ({ ...n, labels: { ...n.labels, 'kubernetes.io/metadata.name': n.name } })).values(),
    policies: cluster.policies.values(),
  };
  const plainFile = join(work, 'plain.nft');
  writeFileSync(plainFile, straightforwardNft(compileFull(snapshot, NODE)));
  const runs = new Map<string, ProcStats[]>();
  const add = (k: string, s: ProcStats) => runs.set(k, [...(runs.get(k) ?? []), s]);
  let plainRules = 0;
  for (let r = 0; r < RUNS; r++) {
    // Interleaved: every method once per round.
    await withNetns(async (netns) => {
      add('nft', runTool('nft', ['-f', plainFile], netns));
      if (r === 0) plainRules = execFileSync('nsenter', [`--net=${netns.path}`, 'nft', 'list', 'table', 'inet', 'plain'], { encoding: 'utf8', maxBuffer: 1 << 28 }).split('\n').filter((l) => /accept|jump|drop/.test(l)).length;
    });
    for (const layout of LAYOUTS) for (const b of BUILDS) add(layout + b.label, await runOnce(dirs.get(layout)!.dir, 'agent', b.bin));
    for (const b of BUILDS) add('render' + b.label, await runOnce(dirs.get('yaml-per-object')!.dir, 'render', b.bin));
  }
  const rows: OnceRow[] = LAYOUTS.flatMap((layout) => {
    const d = dirs.get(layout)!;
    return BUILDS.map((b) => ({ name: `\`agent --once --manifests\`, ${layout}${b.label}`, files: d.files, mb: d.bytes / 2 ** 20, stats: best(runs.get(layout + b.label)!) }));
  });
  const y = dirs.get('yaml-per-object')!;
  for (const b of BUILDS) rows.push({ name: `\`render --manifests\`, yaml-per-object${b.label}`, files: y.files, mb: y.bytes / 2 ** 20, stats: best(runs.get('render' + b.label)!) });
  return { rows, nft: best(runs.get('nft')!), plainRules };
}

interface LiveResult {
  size: string;
  firstCommitMs: number;
  cpuToFirstMs: number;
  hwmAtFirstMB: number;
  hwmEndMB: number;
  latencies: number[];
  /** From the moment the test API server handed the event to the watch's socket (informer rows). */
  fromSent: number[];
  missed: number;
  /** The agent's CPU (user + system) over the events, per event. */
  cpuPerEventMs: number;
  /** Per burst: first write -> the last commit it caused, and how many commits. */
  bursts: { ms: number; commits: number }[];
  /** NFKUBE_BENCH_TRACE: the events' latency by stage (bench/latency-split.ts). */
  split?: LatencySplit;
}

/** An event pod on this node: its add always commits (every namespace has a policy selecting all
 * its pods), as does its delete. */
function eventPod(i: number, namespaces: number): K8sObject {
  const p = makePod(rng(1000 + i), 900_000 + i, `ns-${i % namespaces}`, 0);
  return podObject({ ...p, name: `event-${i}`, ips: [podIp(120_000 + (i % 2000))] }, 900_000 + i);
}

/** Every event pod the single events and the bursts use, made before the clock starts: the
 * latency is the agent's, not the bench's making (or YAML-printing) of the object. */
function preparedPods<T>(namespaces: number, as: (pod: K8sObject) => T): T[] {
  const out: T[] = [];
  for (let k = 0; k < EVENTS / 2 + BURSTS * BURST; k++) out.push(as(eventPod(k, namespaces)));
  return out;
}

/** A running agent (over HTTP or a manifests directory): time and CPU to its first commit, then
 * EVENTS writes each followed by polling for the commit. */
/** write(i) makes change i and may return when it was sent to the agent (process.hrtime.bigint()). */
async function liveRun(size: string, args: string[], namespaces: number, write: (i: number) => bigint | void): Promise<LiveResult> {
  const generations = new GenerationWatch();
  try {
    await generations.ready();
    const trace = join(work, `trace-${process.hrtime.bigint()}.jsonl`);
    const startedAt = process.hrtime.bigint();
    const s = startNfkube(undefined, args, undefined, { ...DAEMONSET_ENV, ...(TRACE ? { NFKUBE_LATENCY_TRACE: trace } : {}) });
    try {
      // The first commit's NEWGEN notification, which comes when it is complete (the generation
      // a GETGEN reads moves when the kernel starts it: a large first commit takes tens of ms in
      // between, and events written before its end would queue behind it); none if the agent exits.
      const exited = s.exited.then(
        () => undefined,
        () => undefined,
      );
      const first = await Promise.race([generations.after(startedAt, 600_000), exited]);
      if (first === undefined) throw new Error(`${size}: no commit`);
      const atFirst = procStats(s.pid);
      await generations.settle(300);
      const cpu0 = procStats(s.pid).cpuMs;
      const latencies: number[] = [];
      const fromSent: number[] = [];
      const events: { t0: bigint; sent?: bigint; seen?: bigint }[] = [];
      let missed = 0;
      for (let i = 0; i < EVENTS; i++) {
        const t0 = process.hrtime.bigint();
        const sent = write(i);
        const took = await generations.after(t0);
        events.push({ t0, sent: sent || undefined, seen: took === undefined ? undefined : t0 + BigInt(Math.round(took * 1e6)) });
        if (took === undefined) missed++;
        else latencies.push(took);
        if (took !== undefined && sent) fromSent.push(took - Number(sent - t0) / 1e6);
        await generations.settle(30);
      }
      const end = procStats(s.pid);
      const bursts: LiveResult['bursts'] = [];
      for (let b = 0; b < BURSTS; b++) {
        // Even bursts add pods EVENTS/2 + ..., odd ones delete them (write(2k) adds pod k, write(2k + 1) deletes it).
        const first = EVENTS / 2 + (b >> 1) * BURST;
        const t0 = process.hrtime.bigint();
        for (let j = 0; j < BURST; j++) {
          write(2 * (first + j) + (b & 1));
          await new Promise((r) => setImmediate(r));
        }
        await generations.after(t0);
        await generations.settle(300);
        const seen = generations.since(t0);
        bursts.push({ ms: seen.lastMs ?? NaN, commits: seen.changes });
      }
      latencies.sort((a, b) => a - b);
      fromSent.sort((a, b) => a - b);
      s.child.kill('SIGTERM');
      await s.exited.catch(() => undefined);
      // A build without the trace (NFKUBE_BENCH_BEFORE) writes none.
      const split = TRACE && existsSync(trace) ? splitLatency(events, readFileSync(trace, 'utf8')) : undefined;
      return { size, firstCommitMs: first, cpuToFirstMs: atFirst.cpuMs, hwmAtFirstMB: atFirst.hwmMB, hwmEndMB: end.hwmMB, latencies, fromSent, missed, cpuPerEventMs: (end.cpuMs - cpu0) / EVENTS, bursts, split };
    } finally {
      s.child.kill('SIGTERM');
      await s.exited.catch(() => undefined);
    }
  } finally {
    generations.stop();
  }
}

/** How an informer row's server serves: `informer`, the bench's objects by WatchList; `served`,
 * objects as a real API server returns them (managedFields, 14 pod labels: servedObject) by
 * WatchList; `served-list`, those by paged LIST (a server with WatchList off). */
type InformerKind = 'informer' | 'served' | 'served-list' | 'cnp';

/** ClusterNetworkPolicies of the `cnp` rows (bench/cnp-policies.ts), beside the NetworkPolicies. */
const CNP_ROW_POLICIES = 100;

async function informerRow(pods: number, policies: number, kind: InformerKind = 'informer'): Promise<LiveResult> {
  const cluster = buildCluster(pods, policies, 42);
  const server = await TestApiServer.start();
  if (kind === 'served-list') server.watchList = 'refused';
  try {
    for (const o of clusterObjects(cluster)) server.create(kind === 'informer' || kind === 'cnp' ? o : servedObject(o));
    if (kind === 'cnp') {
      server.serveResource(CLUSTER_NETWORK_POLICIES);
      for (let i = 0; i < CNP_ROW_POLICIES; i++) server.create(benchPolicy(i) as unknown as K8sObject);
    }
    const kubeconfig = server.writeKubeconfig(join(work, `kubeconfig-${pods}`));
    const namespaces = pods / 50;
    const eventPods = preparedPods(namespaces, (p) => p);
    const how = kind === 'served' ? ', objects as served, WatchList' : kind === 'served-list' ? ', objects as served, LIST pages of 500' : kind === 'cnp' ? ` + ${CNP_ROW_POLICIES} ClusterNetworkPolicies x ${RULES} rules` : '';
    return await liveRun(`${pods / 1000}k pods / ${policies} policies${how}`, ['agent', '--kubeconfig', kubeconfig, '--node-name', NODE, '--log-level', process.env.NFKUBE_BENCH_DEBUG ? 'debug' : 'warn', '--metrics-addr', '127.0.0.1:0'], namespaces, (i) => {
      const pod = eventPods[i >> 1];
      const m = pod.metadata as { namespace: string; name: string };
      if (i % 2 === 0) server.create(pod);
      else server.delete('Pod', m.namespace, m.name);
      return server.lastSentAt;
    });
  } finally {
    await server.close();
  }
}

async function fileWatchRow(objects: K8sObject[], pods: number, policies: number): Promise<LiveResult> {
  const dir = join(work, 'watched');
  writeLayout(dir, objects, 'yaml-per-object');
  const namespaces = pods / 50;
  const texts = preparedPods(namespaces, (p) => stringify(p));
  return liveRun(`${pods / 1000}k pods / ${policies} policies`, ['agent', '--manifests', dir, '--node-name', NODE, '--log-level', process.env.NFKUBE_BENCH_DEBUG ? 'debug' : 'warn', '--metrics-addr', '127.0.0.1:0'], namespaces, (i) => {
    const file = join(dir, `event-${i >> 1}.yaml`);
    if (i % 2 === 0) writeFileSync(file, texts[i >> 1]);
    else unlinkSync(file);
  });
}

/** `nfkube ipset restore` vs `ipset restore` of the same 450 sets x 50 addresses (the `ipset
 * save` format) into a fresh namespace, each a new process: CPU, best of interleaved runs. */
async function ipsetRestoreRow(): Promise<{ nfkube: ProcStats[]; ipset: ProcStats; node: ProcStats }> {
  const lines: string[] = [];
  for (let s = 0; s < 450; s++) {
    lines.push(`create b-${s} hash:ip family inet hashsize 1024 maxelem 65536`);
    for (let m = 0; m < 50; m++) lines.push(`add b-${s} 10.${(s >> 2) & 255}.${((s & 3) << 6) | (m >> 2)}.${(m & 3) + 1}`);
  }
  const input = lines.join('\n') + '\n';
  const file = join(work, 'ipset.save');
  writeFileSync(file, input);
  const nfkube: ProcStats[][] = BUILDS.map(() => []);
  const ipset: ProcStats[] = [];
  // Node's own start and exit, which every nfkube command pays before its first line runs.
  const node: ProcStats[] = [];
  for (let r = 0; r < (QUICK ? 2 : 5); r++) {
    for (const [i, b] of BUILDS.entries()) {
      await withNetns(async (netns) => {
        const s = startNfkube(netns, ['ipset', 'restore', '--prefix', 'b-'], file, {}, b.bin);
        await s.exited;
        nfkube[i].push({ ...probeResult(s), wallMs: performance.now() - s.t0 });
      });
    }
    await withNetns(async (netns) => void ipset.push(runTool('ipset', ['restore'], netns, input)));
    await withNetns(async (netns) => void node.push(runTool(process.execPath, ['-e', '0'], netns)));
  }
  return { nfkube: nfkube.map(best), ipset: best(ipset), node: best(node) };
}

/** `nfkube --version` vs `node -e 0`: wall of a new process, median of interleaved runs. */
function coldStart(): { nfkube: number[]; node: number } {
  const t: { nfkube: number[][]; node: number[] } = { nfkube: BUILDS.map(() => []), node: [] };
  for (let i = 0; i < 7; i++) {
    for (const [j, b] of BUILDS.entries()) {
      const t0 = performance.now();
      execFileSync(process.execPath, [b.bin, '--version']);
      t.nfkube[j].push(performance.now() - t0);
    }
    const t0 = performance.now();
    execFileSync(process.execPath, ['-e', '0']);
    t.node.push(performance.now() - t0);
  }
  const med = (xs: number[]) => xs.sort((a, b) => a - b)[xs.length >> 1];
  return { nfkube: t.nfkube.map(med), node: med(t.node) };
}

/** A live row runs in a process of its own in a new namespace (`unshare --net`), where the test
 * API server, the agent and the generation poller share the loopback device. */
async function liveInOwnNamespace(what: string, bin = NFKUBE): Promise<LiveResult> {
  const out = execFileSync('unshare', ['--net', process.execPath, __filename, '--live', what, ...(QUICK ? ['--quick'] : [])], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    maxBuffer: 1 << 26,
    env: { ...process.env, NFKUBE_BENCH_BIN: bin },
  });
  return JSON.parse(out) as LiveResult;
}

/** The live rows asked for, each run by every build LIVE_ROUNDS times, interleaved; results by
 * row in the order asked, each labelled with its build. */
async function liveRows(): Promise<{ informers: LiveResult[]; watched: LiveResult[] }> {
  const i = process.argv.indexOf('--live-rows');
  const [pods, policies] = ONCE_SIZE;
  const served = QUICK ? [] : INFORMER_SIZES.flatMap(([p, n]) => [`served:${p}:${n}`, `served-list:${p}:${n}`]);
  const rows = i >= 0 ? process.argv[i + 1].split(',') : [...INFORMER_SIZES.map(([p, n]) => `informer:${p}:${n}`), ...served, `watch:${pods}:${policies}`];
  const out = { informers: [] as LiveResult[], watched: [] as LiveResult[] };
  for (const row of rows) {
    for (let r = 0; r < LIVE_ROUNDS; r++) {
      // Which build goes first alternates: a row starts while the previous row's namespace
      // (and its ruleset) is still being torn down.
      for (const b of r % 2 ? [...BUILDS].reverse() : BUILDS) {
        const result = await liveInOwnNamespace(row, b.bin);
        result.size += b.label + (LIVE_ROUNDS > 1 ? `, round ${r + 1}` : '');
        (row.startsWith('watch') ? out.watched : out.informers).push(result);
      }
    }
  }
  return out;
}

async function live(what: string): Promise<void> {
  execFileSync('ip', ['link', 'set', 'lo', 'up']);
  const [kind, p, n] = what.split(':');
  const [pods, policies] = [Number(p), Number(n)];
  try {
    const result = kind === 'watch' ? await fileWatchRow(clusterObjects(buildCluster(pods, policies, 42)), pods, policies) : await informerRow(pods, policies, kind as InformerKind);
    process.stdout.write(JSON.stringify(result));
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** A live row's bursts: first write -> last commit, median and worst, and the median number of commits. */
function burstText(r: LiveResult): string {
  const seen = r.bursts.filter((b) => b.commits > 0);
  const missed = r.bursts.length - seen.length;
  if (!seen.length) return `- (${missed} without a commit)`;
  const times = seen.map((b) => b.ms).sort((a, b) => a - b);
  const commits = seen.map((b) => b.commits).sort((a, b) => a - b);
  return `${ms(percentile(times, 50))} / ${ms(times[times.length - 1])} (${percentile(commits, 50)})${missed ? `, ${missed} without a commit` : ''}`;
}

async function main(): Promise<void> {
  const liveArg = process.argv.indexOf('--live');
  if (liveArg >= 0) return live(process.argv[liveArg + 1]);
  const load0 = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  const [pods, policies] = ONCE_SIZE;
  const cluster = buildCluster(pods, policies, 42);
  const objects = clusterObjects(cluster);
  const once = ROWS.has('once') ? await manifestRows(cluster, objects) : undefined;
  const { informers, watched } = ROWS.has('live') ? await liveRows() : { informers: [], watched: [] };
  const cold = ROWS.has('cold') ? coldStart() : undefined;
  const ipsetCli = ROWS.has('ipset') ? await ipsetRestoreRow() : undefined;
  const load1 = readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
  rmSync(work, { recursive: true, force: true });

  const size = `${pods / 1000}k pods / ${policies} policies`;
  const out: string[] = [];
  out.push(`## End to end, new processes (issue 13): ${size} unless noted\n`);
  out.push(`Load average ${load0} at start, ${load1} at end (2 CPUs shared with other work). Best of ${RUNS} interleaved runs per row; CPU is the process's own (user + system).${BEFORE ? ` Rows marked (before) run ${process.env.NFKUBE_BENCH_BEFORE}, interleaved with this build's.` : ''}\n`);
  if (once) out.push(
    table(
      ['what (new process, fresh namespace)', 'files / MB', 'CPU', 'wall', 'peak RSS (VmHWM)', 'time to first commit', 'CPU / `nft -f` straightforward'],
      [
        [`\`nft -f\`, straightforward rendering (${once.plainRules} rules)`, '1 file', ms(once.nft.cpuMs), ms(once.nft.wallMs), `${once.nft.hwmMB.toFixed(0)} MB`, '', '1.00x'],
        ...once.rows.map((r) => [r.name, `${r.files} / ${r.mb!.toFixed(1)}`, ms(r.stats.cpuMs), ms(r.stats.wallMs), `${r.stats.hwmMB.toFixed(0)} MB`, r.stats.firstCommitMs === undefined ? '' : ms(r.stats.firstCommitMs), ratio(r.stats.cpuMs, once.nft.cpuMs)]),
      ],
    ),
  );
  if (once) out.push('\nTarget 2: `agent --once --manifests` at most 1.0x the CPU of `nft -f` of the straightforward rendering.\n');
  if (informers.length) out.push(
    table(
      ['agent over HTTP (client-node, paged LIST then watch)', 'CPU to first commit', 'wall to first commit', 'peak RSS at first commit', 'peak RSS after events', `API write -> committed p50 / p99 (${EVENTS} events)`, 'event sent -> committed p50 / p99', 'agent CPU per event', `burst of ${BURST} writes -> last commit, p50 / max (commits, median)`, 'missed'],
      informers.map((r) => [
        r.size,
        ms(r.cpuToFirstMs),
        ms(r.firstCommitMs),
        `${r.hwmAtFirstMB.toFixed(0)} MB`,
        `${r.hwmEndMB.toFixed(0)} MB`,
        `${percentile(r.latencies, 50).toFixed(2)} / ${percentile(r.latencies, 99).toFixed(2)} ms`,
        `${percentile(r.fromSent, 50).toFixed(2)} / ${percentile(r.fromSent, 99).toFixed(2)} ms`,
        ms(r.cpuPerEventMs),
        burstText(r),
        String(r.missed),
      ]),
    ),
  );
  if (informers.length) out.push('\nIssue 28 target 5: with objects as served, peak RSS <= 100 MiB at 5k/500 and <= 150 MiB at 20k/2k. Issue 13 targets 3-5: peak RSS <= 120 MB at 5k/500 and <= 150 MB at 20k/2k; CPU to first commit <= 1.0 s at 5k/500; API write -> committed p50 <= 2 ms, p99 <= 10 ms. The agent runs as the DaemonSet runs it (NODE_OPTIONS=' + (DAEMONSET_ENV.NODE_OPTIONS ?? '') + ' from deploy/kubernetes/daemonset.yaml). Events alternate creating a pod on this node and deleting it; the commit is seen by a separate process (bench/generation-poller.js) woken by the kernel\'s NFT_MSG_NEWGEN notification of each commit' + (process.env.NFKUBE_BENCH_POLL_US ? ' (here: polling NFT_MSG_GETGEN every ' + process.env.NFKUBE_BENCH_POLL_US + ' µs)' : '') + '. CPU and peak RSS of a running agent come from /proc/PID/stat and /proc/PID/status (10 ms resolution; CPU per event is the agent\'s CPU over the events, idle gaps between them included, divided by their number). "Event sent" is when the test API server handed the watch event to the socket: the API write minus the test server\'s own work (store, copies, JSON) before it.\n');
  if (watched.length) out.push(
    table(
      ['agent over a watched manifests directory', 'time to first commit', 'CPU to first commit', `file write -> committed p50 / p95 / p99 (${EVENTS} events)`, `burst of ${BURST} writes -> last commit, p50 / max (commits, median)`, 'missed', 'peak RSS'],
      watched.map((w) => [w.size, ms(w.firstCommitMs), ms(w.cpuToFirstMs), `${percentile(w.latencies, 50).toFixed(2)} / ${percentile(w.latencies, 95).toFixed(2)} / ${percentile(w.latencies, 99).toFixed(2)} ms`, burstText(w), String(w.missed), `${w.hwmEndMB.toFixed(0)} MB`]),
    ),
  );
  if (watched.length) out.push('\nTarget 5: file write -> committed p50 <= 3 ms. Events write one pod file on this node, then remove it.\n');
  for (const r of [...informers, ...watched]) if (r.split) out.push(splitText(r.size, r.split));
  if (cold) out.push(table(['cold start (median of 7, interleaved)', 'wall', 'vs `node -e 0`'], [...BUILDS.map((b, i) => [`\`nfkube --version\`${b.label}`, ms(cold.nfkube[i]), ratio(cold.nfkube[i], cold.node)]), ['`node -e 0`', ms(cold.node), '1.00x']]));
  if (cold) out.push('\nTarget 4: `nfkube --version` under 80 ms wall.\n');
  if (ipsetCli) out.push(
    table(
      ['450 sets x 50 addresses into a fresh namespace (new process)', 'CPU', 'wall', 'peak RSS', 'CPU vs `ipset restore`'],
      [
        ...BUILDS.map((b, i) => [`\`nfkube ipset restore --prefix b-\`${b.label}`, ms(ipsetCli.nfkube[i].cpuMs), ms(ipsetCli.nfkube[i].wallMs), `${ipsetCli.nfkube[i].hwmMB.toFixed(0)} MB`, ratio(ipsetCli.nfkube[i].cpuMs, ipsetCli.ipset.cpuMs)]),
        ['`ipset restore`', ms(ipsetCli.ipset.cpuMs), ms(ipsetCli.ipset.wallMs), `${ipsetCli.ipset.hwmMB.toFixed(0)} MB`, '1.00x'],
        ['`node -e 0` (Node\'s start alone: the floor of any nfkube command)', ms(ipsetCli.node.cpuMs), ms(ipsetCli.node.wallMs), `${ipsetCli.node.hwmMB.toFixed(0)} MB`, ratio(ipsetCli.node.cpuMs, ipsetCli.ipset.cpuMs)],
      ],
    ),
  );
  if (ipsetCli) out.push('\nTarget 4: `nfkube ipset restore` at 450 sets no slower than `ipset restore` (CPU here; the ipset section has the wall-clock re-sync with churn).\n');
  process.stdout.write(out.join('\n') + '\n');
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  rmSync(work, { recursive: true, force: true });
  process.exit(1);
});
