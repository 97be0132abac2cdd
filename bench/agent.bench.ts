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
import { PolicyComponent } from '../src/agent/policy-component';
import { Agent } from '../src/pipeline/agent';
import { peerSetName, Renderer } from '../src/agent/render';
import { ClusterChange } from '../src/k8s/source';
import { PodInfo } from '../src/k8s/model';
import { formatTable } from '../src/nft/format';
import { compileFull } from '../src/policy/compile';
import { PolicyIR, PortTriple } from '../src/policy/ir';
import { modelToContents } from '../src/ruleset/model';
import { openSandbox, Sandbox } from '../test/helpers/netns';
import { buildCluster, makePod, NODE, rng } from './cluster';
import { ms, ratio, table } from './harness';

const EVENTS = 1000;
const quick = process.argv.includes('--quick');

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function time(fn: () => void): number {
  const t0 = performance.now();
  fn();
  return performance.now() - t0;
}

/** kube-router's dataplane for the same intent: one ipset per peer set and family, a chain per
 * policy and per pod, FORWARD dispatch per pod address; re-rendered whole on every event. */
function kubeRouterStyle(ir: PolicyIR): { ipsets: string; iptables: string } {
  const sets: string[] = [];
  const setName = (id: string, fam: string) => `KR-${id}-${fam}`.slice(0, 31);
  for (const ps of ir.peerSets.values()) {
    for (const [fam, members] of [['4', ps.v4], ['6', ps.v6]] as const) {
      const name = setName(ps.id, fam);
      sets.push(`create ${name} hash:ip family ${fam === '4' ? 'inet' : 'inet6'} hashsize 1024 maxelem 65536 -exist`, `flush ${name}`);
      for (const m of members) sets.push(`add ${name} ${m}`);
    }
  }
  const lines = ['*filter', ':KUBE-ROUTER-FORWARD - [0:0]'];
  const rules: string[] = [];
  for (const p of ir.policies.values()) {
    for (const dir of ['ingress', 'egress'] as const) {
      const entries = p[dir];
      if (!entries) continue;
      const chain = `KUBE-NWPLCY-${p.id}-${dir === 'ingress' ? 'I' : 'E'}`.slice(0, 28);
      lines.push(`:${chain} - [0:0]`);
      for (const e of entries) {
        const peers = e.peers === 'any' ? [''] : e.peers.filter((r) => r.kind === 'pods').map((r) => `-m set --match-set ${setName(r.set, '4')} ${dir === 'ingress' ? 'src' : 'dst'} `);
        const ports = e.ports === 'any' ? [''] : e.ports.map((pm) => `-p ${pm.protocol.toLowerCase()} ${pm.port !== undefined ? `--dport ${pm.port}${pm.endPort ? `:${pm.endPort}` : ''} ` : ''}`);
        for (const peer of peers) for (const port of ports.length ? ports : ['']) rules.push(`-A ${chain} ${peer}${port}-j ACCEPT`);
      }
    }
  }
  for (const t of ir.targets.values()) {
    const chain = `KUBE-POD-FW-${t.id}`.slice(0, 28);
    lines.push(`:${chain} - [0:0]`);
    for (const dir of ['ingress', 'egress'] as const) {
      for (const pid of t[dir] ?? []) rules.push(`-A ${chain} -j ${`KUBE-NWPLCY-${pid}-${dir === 'ingress' ? 'I' : 'E'}`.slice(0, 28)}`);
    }
    rules.push(`-A ${chain} -j DROP`);
    for (const ip of t.v4) rules.push(`-A KUBE-ROUTER-FORWARD -d ${ip} -j ${chain}`, `-A KUBE-ROUTER-FORWARD -s ${ip} -j ${chain}`);
  }
  lines.push(':FORWARD ACCEPT [0:0]', '-A FORWARD -j KUBE-ROUTER-FORWARD', ...rules, 'COMMIT', '');
  return { ipsets: sets.join('\n') + '\n', iptables: lines.join('\n') };
}

/** The same intent as a person writes it in one nft file, the way the issue's reference file was
 * written: per-pod dispatch rules in a forward base chain, a chain per pod and per policy
 * direction, each peer's addresses inline as an anonymous set, ports as plain matches. */
function straightforwardNft(ir: PolicyIR): string {
  const out = ['table inet plain {'];
  const podChains: string[] = [];
  const chain = (name: string, body: string[], to = out) => to.push(`  chain ${name} {`, ...body.map((l) => `    ${l}`), '  }');
  const forward = ['type filter hook forward priority 0; policy accept;', 'ct state established,related accept'];
  const dirs = [
    ['ingress', 'in', 'daddr', 'saddr'],
    ['egress', 'out', 'saddr', 'daddr'],
  ] as const;
  for (const t of ir.targets.values()) {
    for (const [dir, tag, own] of dirs) {
      const policies = t[dir];
      if (!policies) continue;
      chain(`pod-${t.id}-${tag}`, [...policies.map((id) => `jump pol-${id}-${tag}`), 'drop'], podChains);
      for (const ip of t.v4) forward.push(`ip ${own} ${ip} jump pod-${t.id}-${tag}`);
      for (const ip of t.v6) forward.push(`ip6 ${own} ${ip} jump pod-${t.id}-${tag}`);
    }
  }
  for (const p of ir.policies.values()) {
    for (const [dir, tag, own, peer] of dirs) {
      const entries = p[dir];
      if (!entries) continue;
      const rules: string[] = [];
      for (const e of entries) {
        // Each match with its address family ('' for either): a rule joins matches of one family.
        const peers: [string, string][] = [];
        if (e.peers === 'any') peers.push(['', '']);
        else {
          for (const ref of e.peers) {
            if (ref.kind === 'pods') {
              const ps = ir.peerSets.get(ref.set)!;
              if (ps.v4.length) peers.push(['ip', `ip ${peer} { ${ps.v4.join(', ')} } `]);
              if (ps.v6.length) peers.push(['ip6', `ip6 ${peer} { ${ps.v6.join(', ')} } `]);
            } else {
              const b = ir.ipBlockSets.get(ref.set)!;
              const ip = b.family === 'v4' ? 'ip' : 'ip6';
              peers.push([ip, `${ip} ${peer} ${b.cidr} ${b.except.length ? `${ip} ${peer} != { ${b.except.join(', ')} } ` : ''}`]);
            }
          }
        }
        const ports: [string, string][] = [];
        if (e.ports === 'any') ports.push(['', '']);
        else {
          for (const pm of e.ports) {
            const proto = pm.protocol.toLowerCase();
            ports.push(['', pm.port === undefined ? `meta l4proto ${proto} ` : `${proto} dport ${pm.port}${pm.endPort ? `-${pm.endPort}` : ''} `]);
          }
          const named = e.namedPorts ? ir.namedPortSets.get(e.namedPorts)! : undefined;
          // Named ports: (destination address, protocol, port) of every pod that has the name.
          const dest = dir === 'ingress' ? own : peer;
          const triples = (xs: PortTriple[]) => xs.map((x) => `${x.ip} . ${x.protocol.toLowerCase()} . ${x.port}`).join(', ');
          if (named?.v4.length) ports.push(['ip', `ip ${dest} . meta l4proto . th dport { ${triples(named.v4)} } `]);
          if (named?.v6.length) ports.push(['ip6', `ip6 ${dest} . meta l4proto . th dport { ${triples(named.v6)} } `]);
        }
        for (const [fa, a] of peers) for (const [fb, b] of ports) if (!fa || !fb || fa === fb) rules.push(`${a}${b}accept`);
      }
      chain(`pol-${p.id}-${tag}`, rules);
    }
  }
  // Chains are written before the chains that jump to them.
  out.push(...podChains);
  chain('forward', forward);
  out.push('}', '');
  return out.join('\n');
}

interface Result {
  size: string;
  nfkubeFull: number;
  /** Of nfkubeFull: the one kernel exchange (sendmsg of the batch until every ack is read). */
  nfkubeKernel: number;
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
}

async function run(pods: number, policies: number): Promise<Result> {
  const cluster = buildCluster(pods, policies, 42);
  const snapshot = {
    pods: new Map(cluster.pods.map((p) => [`${p.namespace}/${p.name}`, p])),
    namespaces: new Map(cluster.namespaces.map((n) => [n.name, n])),
    policies: new Map(cluster.policies.map((p) => [`${p.namespace}/${p.name}`, p])),
  };

  // nfkube
  const sb = openSandbox();
  let kernelMs = 0;
  const transact = sb.socket.transact.bind(sb.socket);
  sb.socket.transact = async (datagrams) => {
    const t = performance.now();
    try {
      return await transact(datagrams);
    } finally {
      kernelMs = Math.max(kernelMs, performance.now() - t);
    }
  };
  // Event-to-committed latency is taken when the commit completes, not after the read-back of
  // rewritten chains that follows it.
  let committedAt = 0;
  const agent = new Agent({ socket: sb.socket, logger: pino({ level: 'silent' }), components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger: pino({ level: 'silent' }) })], observer: { synced: () => void (committedAt = performance.now()) } });
  let t0 = performance.now();
  await agent.start(snapshot);
  const nfkubeFull = performance.now() - t0;
  const nfkubeKernel = kernelMs;
  const rand = rng(7);
  const live = [...snapshot.pods.values()];
  const latencies: number[] = [];
  const msgs0 = agent.totals.messages;
  const empty0 = agent.totals.emptyEvents;
  const cpu0 = process.cpuUsage();
  for (let i = 0; i < EVENTS; i++) {
    let change: ClusterChange;
    if (i % 2 === 0) {
      const p: PodInfo = makePod(rand, pods + i, `ns-${Math.floor(rand() * (pods / 50))}`, rand() < 0.5 ? 0 : 1 + Math.floor(rand() * 10));
      live.push(p);
      change = { kind: 'Pod', type: 'upsert', key: `${p.namespace}/${p.name}`, object: p };
    } else {
      const p = live.splice(Math.floor(rand() * live.length), 1)[0];
      change = { kind: 'Pod', type: 'delete', key: `${p.namespace}/${p.name}`, object: p };
    }
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

  const nftSb: Sandbox = openSandbox();
  const nftFull = time(() => nftSb.run('nft', ['-f', full]));
  const plainSb: Sandbox = openSandbox();
  const nftPlain = time(() => plainSb.run('nft', ['-f', plain]));
  const plainRules = plainSb.run('nft', ['list', 'table', 'inet', 'plain']).split('\n').filter((l) => /accept|jump|drop/.test(l)).length;
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
    nfkubeKernel,
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
    `## NetworkPolicy agent: full sync and ${EVENTS} pod events\n\n` +
      table(
        ['size', 'nfkube full sync (from a ready snapshot: policy engine load, render, encode, commit)', 'of which the kernel', 'nft -f, nfkube\'s ruleset', 'nft -f, straightforward file', 'kube-router style full', 'nfkube / nft -f (nfkube\'s ruleset)', 'nfkube kernel alone / nft -f (nfkube\'s ruleset)', 'nfkube / nft -f (straightforward)', 'nfkube / kube-router'],
        rows.map((r) => [r.size, ms(r.nfkubeFull), ms(r.nfkubeKernel), ms(r.nftFull), `${ms(r.nftPlain)} (${r.plainRules} rules)`, ms(r.krFull), ratio(r.nfkubeFull, r.nftFull), ratio(r.nfkubeKernel, r.nftFull), ratio(r.nfkubeFull, r.nftPlain), ratio(r.nfkubeFull, r.krFull)]),
      ) +
      '\n\nThe full sync is a fresh process\'s first: its code runs cold, as at an agent\'s start. "nft -f, nfkube\'s ruleset" loads the file `nfkube render` prints for the same cluster (verdict maps, shared named sets). "nft -f, straightforward file" loads the same intent written as a person writes it, as the issue\'s reference file was: per-pod dispatch rules, a chain per pod and per policy direction, peers inline as anonymous sets.\n\n' +
      table(
        ['size', 'nfkube event p50 / p99 (event to committed; events that commit)', 'CPU per event', 'kernel messages per event', 'events with 0 messages', 'nft -f element delta', 'kube-router style per event', 'peak RSS', 'restart over an unchanged cluster'],
        rows.map((r) => [r.size, `${r.eventP50.toFixed(3)} / ${r.eventP99.toFixed(3)} ms`, `${r.eventCpuUs.toFixed(0)} µs`, r.msgsPerEvent.toFixed(2), `${r.emptyEvents} of ${EVENTS}`, ms(r.nftEvent), ms(r.krEvent), `${r.rssMB.toFixed(0)} MB`, `${ms(r.restartMs)}, ${r.restartMessages} messages`]),
      ) +
      '\n\nEvents alternate pod adds (half on this node) and deletes of random pods. CPU per event is the process\'s CPU time over the 1,000 events divided by 1,000: it includes the read-back of the chains each commit rewrote. Each size runs in its own process; peak RSS is that process\'s maximum, with the generated cluster objects (the informer cache\'s share) included. The restart is a new Agent started over the cluster as the events left it: it reads the table back, compares, and writes only what differs.\n\n',
  );
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
