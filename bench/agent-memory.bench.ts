/** Peak memory of `agent --once` with 50k pods on this node (issue 23, item 11): what the
 * DaemonSet's memory limit is sized from. Each row is a new process in a new network namespace
 * (`unshare --net`) under /usr/bin/time -v (its "Maximum resident set size" is the process's
 * VmHWM), run as the DaemonSet runs it (NODE_OPTIONS from deploy/kubernetes/daemonset.yaml).
 * Two manifest shapes: the fields nfkube reads, and full API-server objects (about 4 KB per pod,
 * bench/manifests.ts). NFKUBE_BENCH_QUICK=1: 5k pods; AGENT_MEMORY_RUNS (default 2): runs per shape. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildCluster, NODE } from './cluster';
import { clusterObjects, K8sObject, writeLayout } from './manifests';

const PODS = process.env.NFKUBE_BENCH_QUICK ? 5_000 : 50_000;
const POLICIES = PODS / 10;
const NFKUBE = join(__dirname, '..', '..', 'bin', 'nfkube');
const NODE_OPTIONS = '--max-semi-space-size=4';
const RUNS = Number(process.env.AGENT_MEMORY_RUNS ?? 2);

/** Only what the agent reads of a pod: identity, labels, node, phase, addresses, ports. */
function slim(o: K8sObject): K8sObject {
  if (o.kind !== 'Pod') return o;
  const m = o.metadata as Record<string, unknown>;
  const spec = o.spec as { nodeName: string; containers: { ports: unknown }[] };
  const status = o.status as { phase: string; podIPs: unknown };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: m.name, namespace: m.namespace, labels: m.labels },
    spec: { nodeName: spec.nodeName, containers: spec.containers.map((c) => ({ ports: c.ports })) },
    status: { phase: status.phase, podIPs: status.podIPs },
  };
}

function measure(dir: string): { wallS: number; cpuS: number; peakMB: number } {
  const r = spawnSync('unshare', ['--net', '/usr/bin/time', '-v', process.execPath, NFKUBE, 'agent', '--once', '--manifests', dir, '--node-name', NODE, '--manifests-max-bytes', '1Gi', '--timeout', '600s', '--log-level', 'warn', '--metrics-addr', ''], {
    encoding: 'utf8',
    env: { ...process.env, NODE_OPTIONS },
    maxBuffer: 64 * 1024 * 1024,
  });
  if (r.status !== 0) throw new Error(`agent --once exited ${r.status}: ${r.stderr.slice(-2000)}`);
  const field = (name: string) => {
    const m = new RegExp(`${name}: ([\\d.:]+)`).exec(r.stderr);
    if (!m) throw new Error(`no "${name}" in /usr/bin/time's output`);
    return m[1];
  };
  const wall = field('Elapsed \\(wall clock\\) time \\(h:mm:ss or m:ss\\)').split(':').map(Number);
  return {
    wallS: wall.reduce((a, b) => a * 60 + b, 0),
    cpuS: Number(field('User time \\(seconds\\)')) + Number(field('System time \\(seconds\\)')),
    peakMB: Number(field('Maximum resident set size \\(kbytes\\)')) / 1024,
  };
}

const cluster = buildCluster(PODS, POLICIES, 23);
for (const p of cluster.pods) p.nodeName = NODE;
const full = clusterObjects(cluster);
const rows: string[] = [];
for (const [shape, objs] of [
  ['fields nfkube reads', full.map(slim)],
  ['full API objects', full],
] as const) {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-memory-'));
  try {
    const written = writeLayout(dir, objs as K8sObject[], 'json-list');
    const runs = Array.from({ length: RUNS }, () => measure(dir));
    const peak = Math.max(...runs.map((r) => r.peakMB));
    const best = runs.reduce((a, b) => (a.wallS <= b.wallS ? a : b));
    rows.push(`| ${PODS} local pods, ${POLICIES} policies, ${shape} | ${written.files} / ${(written.bytes / 1e6).toFixed(1)} | ${best.cpuS.toFixed(1)} s | ${best.wallS.toFixed(1)} s | ${runs.map((r) => r.peakMB.toFixed(0)).join(', ')} MB (max ${peak.toFixed(0)}) |`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
process.stdout.write(`## Peak memory of agent --once with every pod on this node (issue 23)

New process per run in a new network namespace, NODE_OPTIONS=${NODE_OPTIONS} as in the DaemonSet; peak RSS from /usr/bin/time -v (VmHWM), ${RUNS === 1 ? 'one run' : `${RUNS} runs`} each.

| what | files / MB | CPU | wall | peak RSS (runs) |
| --- | --- | --- | --- | --- |
${rows.join('\n')}
`);
