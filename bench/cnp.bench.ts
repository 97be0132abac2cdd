/** Issue 27 item 5: ClusterNetworkPolicy at 5,000 pods / 500 NetworkPolicies plus 100
 * ClusterNetworkPolicies of 25 rules each (mixed tiers, priorities with ties, every action, pod /
 * namespace / network / node peers, numbered, ranged and named ports), against the same cluster
 * without them: the full sync's time, CPU and kernel objects, pod events (event to committed,
 * kernel messages), and one ClusterNetworkPolicy's priority change. The Agent runs in-process
 * over already-normalised objects (the CNPs are written in the API's shape and normalised by the
 * agent's own normalize), each run in a fresh network namespace. Also the fuzz soak
 * (test/kernel/cnp-fuzz.test.ts) over NFKUBE_CNP_SOAK_SETS sets (default 2,000; 0 skips it).
 * Run: npm run build && node --expose-gc dist/bench/cnp.bench.js [--quick] */
import { execFileSync, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import pino from 'pino';
import { PolicyComponent } from '../src/policy/component';
import { Agent } from '../src/pipeline/agent';
import type { ClusterChange } from '../src/k8s/source';
import type { NetworkPolicyInfo } from '../src/k8s/model';
import { normalizeClusterNetworkPolicy } from '../src/k8s/normalize-cluster-policy';
import { normalizeNode } from '../src/k8s/normalize-service';
import { listTable } from '../src/nft/readback';
import { benchPolicy, RULES } from './cnp-policies';
import type { ClusterNetworkPolicy } from '../test/helpers/cnp-spec';
import { openSandbox, type Sandbox } from '../test/helpers/netns';
import { buildCluster, podChurn, NODE, PODS_PER_NODE, rng } from './cluster';
import { ms, ratio, table } from './harness';
import { percentile } from './percentile';

const quick = process.argv.includes('--quick');
const PODS = 5000;
const POLICIES = 500;
/** Policy counts to run; 16 as well because more do not commit yet (cnp-bugs.md, bug 2: EMLINK). */
const CNP_COUNTS = (process.env.NFKUBE_CNP_BENCH_CNPS ?? '100,16').split(',').map(Number);
const POD_EVENTS = quick ? 100 : 500;
const PRIORITY_CHANGES = quick ? 5 : 20;
const SOAK_SETS = Number(process.env.NFKUBE_CNP_SOAK_SETS ?? (quick ? 0 : 2000));

interface ObjectCounts {
  chains: number;
  rules: number;
  sets: number;
  elements: number;
}

async function kernelObjects(socket: Sandbox['socket']): Promise<ObjectCounts> {
  const t = await listTable(socket, 'inet', 'nfkube');
  if (!t) throw new Error('table inet nfkube is missing');
  let elements = 0;
  for (const e of t.elements.values()) elements += e.length;
  return { chains: t.chains.length, rules: t.rules.length, sets: t.sets.length, elements };
}

interface Run {
  label: string;
  fullMs: number;
  fullCpuMs: number;
  fullMessages: number;
  objects: ObjectCounts;
  eventP50: number;
  eventP99: number;
  eventCpuUs: number;
  msgsPerEvent: number;
  priority?: { p50: number; max: number; msgsP50: number; msgsMax: number };
  /** One rule of a long NetworkPolicy edited (its port changed). */
  ruleEdit: { p50: number; max: number; msgsP50: number; msgsMax: number; chainRules: number };
}

/** A NetworkPolicy of this many ingress rules, one of which each edit changes. */
const LONG_POLICY_RULES = 300;

/** A NetworkPolicy over every pod of `namespace` with LONG_POLICY_RULES ingress rules (one address
 * and one TCP port each); `edited` changes rule 150's port. */
function longPolicy(namespace: string, edited: number): NetworkPolicyInfo {
  const ingress = Array.from({ length: LONG_POLICY_RULES }, (_, i) => ({ peers: [{ ipBlock: { cidr: `198.18.${i >> 8}.${i & 255}/32` } }], ports: [{ protocol: 'TCP', port: i === 150 ? 20000 + edited : 1000 + i }] }));
  return { namespace, name: 'long-policy', podSelector: {}, policyTypes: ['Ingress'], ingress };
}

/** Sorted samples' p50 and max. */
function spread(samples: number[]): { p50: number; max: number } {
  samples.sort((a, b) => a - b);
  return { p50: percentile(samples, 50), max: samples[samples.length - 1] };
}

async function run(cnpCount: number): Promise<Run> {
  const withCnps = cnpCount > 0;
  const cluster = buildCluster(PODS, POLICIES, 42);
  const nodeCount = PODS / PODS_PER_NODE;
  const nodes = Array.from({ length: nodeCount }, (_, n) => normalizeNode({
    apiVersion: 'v1', kind: 'Node', metadata: { name: `node-${n}`, labels: { zone: `zone-${n % 3}` } },
    status: { addresses: [{ type: 'InternalIP', address: `198.19.254.${n + 1}` }, { type: 'InternalIP', address: `2001:db8:fe::${(n + 1).toString(16)}` }] },
  }));
  const raw = withCnps ? Array.from({ length: cnpCount }, (_, i) => benchPolicy(i)) : [];
  const cnps = raw.map((o) => normalizeClusterNetworkPolicy(o));
  const snapshot = {
    pods: new Map(cluster.pods.map((p) => [`${p.namespace}/${p.name}`, p])),
    namespaces: new Map(cluster.namespaces.map((n) => [n.name, n])),
    policies: new Map(cluster.policies.map((p) => [`${p.namespace}/${p.name}`, p])),
    nodes: new Map(nodes.map((n) => [n.name, n])),
    clusterPolicies: new Map(cnps.map((c) => [c.name, c])),
  };
  const sb = openSandbox();
  try {
    return await measure(sb, cnpCount, snapshot, raw);
  } finally {
    await sb.close();
  }
}

async function measure(sb: Sandbox, cnpCount: number, snapshot: Parameters<Agent['start']>[0], raw: ClusterNetworkPolicy[]): Promise<Run> {
  const withCnps = cnpCount > 0;
  let committedAt = 0;
  const silent = pino({ level: 'silent' });
  const agent = new Agent({ socket: sb.socket, logger: silent, components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: silent })], observer: { synced: () => void (committedAt = performance.now()) } });
  const cpu0 = process.cpuUsage();
  let t0 = performance.now();
  const full = await agent.start(snapshot);
  const fullMs = performance.now() - t0;
  const fullCpu = process.cpuUsage(cpu0);
  const objects = await kernelObjects(sb.socket);

  const rand = rng(7);
  const live = [...snapshot.pods.values()];
  const latencies: number[] = [];
  const msgs0 = agent.totals.messages;
  const cpuEvents = process.cpuUsage();
  for (const change of podChurn(rand, live, PODS, PODS / 50, POD_EVENTS)) {
    committedAt = 0;
    t0 = performance.now();
    agent.onChange(change);
    await agent.idle();
    if (committedAt) latencies.push(committedAt - t0);
  }
  const eventCpu = process.cpuUsage(cpuEvents);
  latencies.sort((a, b) => a - b);
  const msgsPerEvent = (agent.totals.messages - msgs0) / POD_EVENTS;

  let priority: Run['priority'];
  if (withCnps) {
    const took: number[] = [];
    const msgs: number[] = [];
    for (let k = 0; k < PRIORITY_CHANGES; k++) {
      // An Admin policy moved from its place to the other end of the tier's order.
      const rawPolicy = raw[(k * 4) % cnpCount];
      rawPolicy.spec.priority = rawPolicy.spec.priority < 500 ? 1000 - k : k;
      const object = normalizeClusterNetworkPolicy(rawPolicy);
      const before = agent.totals.messages;
      committedAt = 0;
      t0 = performance.now();
      agent.onChange({ kind: 'ClusterNetworkPolicy', type: 'upsert', key: object.name, object } as ClusterChange);
      await agent.idle();
      took.push((committedAt || performance.now()) - t0);
      msgs.push(agent.totals.messages - before);
    }
    const t = spread(took);
    const m = spread(msgs);
    priority = { p50: t.p50, max: t.max, msgsP50: m.p50, msgsMax: m.max };
  }

  // A long NetworkPolicy on this node's first namespace, then one of its rules edited at a time.
  const namespace = live.find((p) => p.nodeName === NODE)!.namespace;
  const upsertLong = (edited: number) => agent.onChange({ kind: 'NetworkPolicy', type: 'upsert', key: `${namespace}/long-policy`, object: longPolicy(namespace, edited) } as ClusterChange);
  upsertLong(0);
  await agent.idle();
  const editTook: number[] = [];
  const editMsgs: number[] = [];
  for (let k = 1; k <= PRIORITY_CHANGES; k++) {
    const before = agent.totals.messages;
    committedAt = 0;
    t0 = performance.now();
    upsertLong(k);
    await agent.idle();
    editTook.push((committedAt || performance.now()) - t0);
    editMsgs.push(agent.totals.messages - before);
  }
  const longChain = (await listTable(sb.socket, 'inet', 'nfkube'))!.rules.reduce((n, r) => (r.comment?.includes('long-policy') ? n + 1 : n), 0);
  const et = spread(editTook);
  const em = spread(editMsgs);
  const ruleEdit = { p50: et.p50, max: et.max, msgsP50: em.p50, msgsMax: em.max, chainRules: longChain };
  await agent.stop();
  return {
    label: withCnps ? `with ${cnpCount} ClusterNetworkPolicies x ${RULES} rules per direction` : 'without ClusterNetworkPolicies',
    fullMs, fullCpuMs: (fullCpu.user + fullCpu.system) / 1000, fullMessages: full.messages, objects,
    eventP50: percentile(latencies, 50), eventP99: percentile(latencies, 99), eventCpuUs: (eventCpu.user + eventCpu.system) / POD_EVENTS, msgsPerEvent, priority, ruleEdit,
  };
}

function soak(): string {
  if (SOAK_SETS <= 0) return '';
  const t0 = Date.now();
  const r = spawnSync(process.execPath, ['--test', join(__dirname, '..', 'test', 'kernel', 'cnp-fuzz.test.js')], { encoding: 'utf8', env: { ...process.env, NFKUBE_CNP_FUZZ_SETS: String(SOAK_SETS) }, maxBuffer: 64 * 1024 * 1024 });
  const output = `${r.stdout}\n${r.stderr}`;
  const line = /# (\d+ sets[^\n]*disagreements)/.exec(output)?.[1] ?? `no summary line (exit ${r.status}, ${output.trim().split('\n').slice(-3).join(' / ')})`;
  const firstFailure = /disagreements in [^\n]*\n[^\n]*/.exec(output)?.[0];
  return `\n\nFuzz soak (test/kernel/cnp-fuzz.test.ts, NFKUBE_CNP_FUZZ_SETS=${SOAK_SETS}): ${line}; ${r.status === 0 ? 'passed' : `FAILED${firstFailure ? `: ${firstFailure.trim()}` : ''}`} in ${((Date.now() - t0) / 1000).toFixed(0)} s.`;
}

/** One run in a fresh process (`--one N`), so every full sync is a cold start, as an agent's. */
function runInProcess(cnpCount: number): Run {
  const out = execFileSync(process.execPath, [...process.execArgv, __filename, '--one', String(cnpCount), ...(quick ? ['--quick'] : [])], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], maxBuffer: 64 * 1024 * 1024 });
  return JSON.parse(out) as Run;
}

async function main(): Promise<void> {
  const one = process.argv.indexOf('--one');
  if (one >= 0) return void process.stdout.write(JSON.stringify(await run(Number(process.argv[one + 1]))));
  const without = runInProcess(0);
  const failures: string[] = [];
  const measured: Run[] = [];
  for (const n of CNP_COUNTS) {
    try {
      measured.push(runInProcess(n));
    } catch (err) {
      const stderr = String((err as { stderr?: string }).stderr ?? (err as Error).message);
      failures.push(`With ${n} ClusterNetworkPolicies the full sync FAILED: ${/NetlinkError: [^\n]*/.exec(stderr)?.[0] ?? stderr.split('\n')[0]}`);
    }
  }
  if (measured.length === 0) throw new Error(failures.join('\n'));
  const withCnps = measured[0];
  const o = (c: ObjectCounts) => `${c.chains} / ${c.rules} / ${c.sets} / ${c.elements}`;
  const rows = [without, ...measured];
  process.stdout.write(
    `## ClusterNetworkPolicy (issue 27 item 5): ${PODS / 1000}k pods / ${POLICIES} NetworkPolicies, with and without ClusterNetworkPolicies (${CNP_COUNTS.join(', ')})\n\n` +
      failures.map((f) => `${f}\n\n`).join('') +
      table(
        ['cluster', 'full sync', 'its CPU time', 'kernel messages', 'kernel objects: chains / rules / sets / elements', `pod event p50 / p99 (event to committed, ${POD_EVENTS} events)`, 'CPU per pod event', 'kernel messages per pod event'],
        rows.map((r) => [r.label, ms(r.fullMs), ms(r.fullCpuMs), String(r.fullMessages), o(r.objects), `${r.eventP50.toFixed(3)} / ${r.eventP99.toFixed(3)} ms`, `${r.eventCpuUs.toFixed(0)} µs`, r.msgsPerEvent.toFixed(2)]),
      ) +
      `\n\nWith the first measured count / without: full sync ${ratio(withCnps.fullMs, without.fullMs)}, its CPU ${ratio(withCnps.fullCpuMs, without.fullCpuMs)}, rules ${ratio(withCnps.objects.rules, without.objects.rules)}, chains ${ratio(withCnps.objects.chains, without.objects.chains)}, pod event p50 ${ratio(withCnps.eventP50, without.eventP50)}.\n\n` +
      table(
        ['one ClusterNetworkPolicy priority change (an Admin policy moved to the other end of its tier)', 'event to committed p50 / max', 'kernel messages p50 / max'],
        measured.map((r) => [`${r.label}: ${PRIORITY_CHANGES} changes`, `${ms(r.priority!.p50)} / ${ms(r.priority!.max)}`, `${r.priority!.msgsP50} / ${r.priority!.msgsMax}`]),
      ) +
      '\n\n' +
      table(
        [`one rule of a ${LONG_POLICY_RULES}-rule NetworkPolicy edited (its port changed)`, 'rules of the policy in the table', 'event to committed p50 / max', 'kernel messages p50 / max'],
        rows.map((r) => [`${r.label}: ${PRIORITY_CHANGES} edits`, String(r.ruleEdit.chainRules), `${ms(r.ruleEdit.p50)} / ${ms(r.ruleEdit.max)}`, `${r.ruleEdit.msgsP50} / ${r.ruleEdit.msgsMax}`]),
      ) +
      `\n\nThe cluster is bench/cluster.ts's (50 pods a namespace, 100 a node, this node node-0; ${PODS / PODS_PER_NODE} Nodes labelled by zone). Policy i is Baseline one time in four, its priority (37 i) mod 1001 with every tenth tied to the one before, its subject a team's namespaces or prod frontend pods; its ${RULES} rules per direction cycle Accept/Deny/Pass, namespace, pod, network and node peers, and no ports, TCP 8080 + UDP 53, a TCP 9000-9100 range, or the named port metrics. Pod events alternate adds (half on this node) and deletes. In-process: the Agent over already-normalised objects; each row is its own process (the full sync runs cold, as at an agent's start) and its own fresh namespace.` +
      soak() +
      '\n\n',
  );
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
