/** Issue 24 scale: the agent (policy and proxy) against the real control plane of the cluster tier
 * (test/cluster/control-plane.ts): the bench cluster (cluster.ts: 5k pods / 500 policies, pods on
 * 50 nodes) and 1,000 Services selecting its pods, all created through kube-apiserver, with the
 * EndpointSlices written by kube-controller-manager. Measured: the agent's start to its first
 * full commit of both tables, its peak RSS, and API write -> kernel commit (the agent's own commit
 * line) for one pod's label change and for one EndpointSlice change (a pod's readiness written as
 * kubelet writes it, the controller's slice update, the proxy's commit).
 * Run: node dist/bench/kube-apiserver.bench.js [--quick] (1k pods / 100 policies / 200 Services);
 * it builds the control plane on first use (scripts/kube-control-plane.sh). Without it (no Go to
 * build it with) the section says so and the bench exits 0, so `npm run bench` goes on. */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AgentProcess, type LogLine } from '../test/cluster/agent-process';
import { waitFor, type KObject, type KubeApi } from '../test/cluster/api';
import { ControlPlane, REPO_ROOT } from '../test/cluster/control-plane';
import { applyObjects, deployObjects } from '../test/cluster/deploy';
import { applyNamespace, kubeletStatus } from '../test/cluster/desired-objects';
import { joinNode } from '../test/cluster/node';
import { NetnsBuilder, nsPath } from '../test/proxy/netns-builder';
import { buildCluster, NODE } from './cluster';
import { clusterObjects } from './manifests';
import { percentile } from './percentile';

const QUICK = process.argv.includes('--quick') || process.env.NFKUBE_BENCH_QUICK === '1';
const PODS = QUICK ? 1000 : 5000;
const POLICIES = PODS / 10;
const SERVICES = PODS / 5;
const SAMPLES = 30;
const CONCURRENCY = 16;

/** Runs `work` over `items` with at most CONCURRENCY requests in flight. */
async function inParallel<T>(items: T[], work: (item: T) => Promise<unknown>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < items.length) await work(items[next++]);
  }));
}

/** What a user's manifest holds: no server-set metadata (uid, resourceVersion, owners). */
function asWritten(o: KObject): KObject {
  const { name, namespace, labels, annotations } = o.metadata;
  const { status, ...rest } = o;
  void status;
  return { ...rest, metadata: { name, namespace, labels, annotations } };
}

function rssMiB(pid: number, field: 'VmRSS' | 'VmHWM'): number {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Math.round(Number(m[1]) / 1024) : NaN;
}

/** Writes with `write` and waits for the commit naming `object`; ms from the write to the commit. */
async function latency(agent: AgentProcess, object: string, write: () => Promise<unknown>): Promise<number> {
  const since = agent.lines.length;
  const t0 = Date.now();
  await write();
  const line = await agent.waitForLine(`a commit naming ${object}`, (l: LogLine) => l.msg === 'sync committed' && JSON.stringify(l.objects ?? []).includes(object), since);
  return line.time - t0;
}

/** Why the control plane cannot be had (the build script's last word), or undefined. */
function controlPlaneMissing(): string | undefined {
  if (process.env.NFKUBE_KUBE_BIN) return undefined;
  const r = spawnSync(join(REPO_ROOT, 'scripts', 'kube-control-plane.sh'), { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return r.status === 0 ? undefined : (r.stderr.trim().split('\n').pop() || `scripts/kube-control-plane.sh exited ${r.status ?? r.signal}`);
}

async function main(): Promise<void> {
  const missing = controlPlaneMissing();
  if (missing) {
    process.stdout.write(`## The agent against the real control plane (issue 24): not run\n\nNo control plane to run against: ${missing}\n`);
    return;
  }
  const cp = await ControlPlane.start();
  const b = new NetnsBuilder();
  let agent: AgentProcess | undefined;
  try {
    const api: KubeApi = cp.admin;
    const deployed = [...deployObjects('kubernetes'), ...deployObjects('overlays/proxy')];
    await applyObjects(api, deployed);
    const cluster = buildCluster(PODS, POLICIES, 24);
    const objects = clusterObjects(cluster) as KObject[];
    const t0 = Date.now();
    await inParallel(objects.filter((o) => o.kind === 'Namespace' && !['kube-system'].includes(o.metadata.name)), (o) => applyNamespace(api, asWritten(o)));
    const pods = objects.filter((o) => o.kind === 'Pod');
    await inParallel(pods, async (o) => {
      await api.apply(asWritten(o));
      await api.patchStatus(o, kubeletStatus(o.status));
    });
    await inParallel(objects.filter((o) => o.kind === 'NetworkPolicy'), (o) => api.apply(asWritten(o)));
    const namespaces = [...new Set(cluster.pods.map((p) => p.namespace))].filter((n) => n.startsWith('ns-'));
    const services = Array.from({ length: SERVICES }, (_, i): KObject => ({
      apiVersion: 'v1', kind: 'Service', metadata: { namespace: namespaces[i % namespaces.length], name: `svc-${i}` },
      spec: { selector: { app: `app-${Math.floor(i / namespaces.length) % 10}` }, ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
    }));
    await inParallel(services, (o) => api.apply(o));
    const written = (Date.now() - t0) / 1000;
    await waitFor('an EndpointSlice for every Service', async () => {
      const list = await api.get('/apis/discovery.k8s.io/v1/endpointslices?limit=1');
      return (list.metadata.remainingItemCount ?? 0) + list.items.length >= SERVICES ? true : undefined;
    }, 600_000, 1000);

    const ns = b.addNetns('node');
    const node = await joinNode(cp, deployed, { name: NODE, netnsPath: nsPath(ns), podCIDRs: ['198.18.0.0/16'] });
    const started = Date.now();
    agent = AgentProcess.start(nsPath(ns), NODE, node.agentKubeconfig, ['--proxy'], 'info');
    const owners = new Set<string>();
    await agent.waitForLine('the first full commit of both tables', (l) => {
      if (l.msg === 'sync committed' && l.kind === 'full') owners.add(String(l.owner));
      return owners.size >= 2;
    }, 0, 600_000);
    const firstCommit = (Math.max(...agent.lines.filter((l) => l.msg === 'sync committed' && l.kind === 'full').map((l) => l.time)) - started) / 1000;
    const rssAfterStart = rssMiB(agent.child.pid!, 'VmRSS');

    // Pods of this node whose tier a policy reads: each turns frontend and back.
    const local = pods.filter((o) => o.spec.nodeName === NODE && o.metadata.labels.tier !== 'frontend');
    const podLatency: number[] = [];
    const sliceLatency: number[] = [];
    for (let i = 0; i < SAMPLES; i++) {
      const p = local[Math.floor(i / 2) % local.length];
      const key = `${p.metadata.namespace}/${p.metadata.name}`;
      const tier = i % 2 === 0 ? 'frontend' : p.metadata.labels.tier;
      podLatency.push(await latency(agent, key, () => api.call('PATCH', `/api/v1/namespaces/${p.metadata.namespace}/pods/${p.metadata.name}`,
        { metadata: { labels: { tier } } }, 'application/merge-patch+json')));
      sliceLatency.push(await latency(agent, 'EndpointSlice', () => api.patchStatus(p, kubeletStatus(p.status, i % 2 === 1))));
    }
    podLatency.sort((x, y) => x - y);
    sliceLatency.sort((x, y) => x - y);
    const peak = rssMiB(agent.child.pid!, 'VmHWM');
    const out = [
      `## The agent against the real control plane (issue 24): ${PODS} pods / ${POLICIES} policies / ${SERVICES} Services through kube-apiserver`,
      '',
      `kube-apiserver ${(await api.get('/version')).gitVersion}, etcd and kube-controller-manager of the cluster tier on this machine; the agent (\`--proxy\`, policy and proxy tables) as the DaemonSet's ServiceAccount. Objects written in ${written.toFixed(0)} s (${CONCURRENCY} requests in flight).`,
      '',
      '| measure | value |',
      '| --- | --- |',
      `| agent start -> first full commit of both tables | ${firstCommit.toFixed(1)} s |`,
      `| RSS after the first commit / peak (VmHWM) | ${rssAfterStart} / ${peak} MiB |`,
      `| pod label change: API write -> commit, p50 / p99 (${SAMPLES}) | ${percentile(podLatency, 50)} / ${percentile(podLatency, 99)} ms |`,
      `| pod readiness -> EndpointSlice controller -> commit, p50 / p99 (${SAMPLES}) | ${percentile(sliceLatency, 50)} / ${percentile(sliceLatency, 99)} ms |`,
    ];
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await agent?.stop();
    b.close();
    await cp.close();
  }
}

main().catch((err) => {
  process.stderr.write(`${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
