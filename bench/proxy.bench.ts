/** The service proxy side by side with a kube-proxy-style `nft -f` (the rendering kube-proxy's
 * nftables proxier writes, generated here for the same services): full sync of N services x 5
 * endpoints, one endpoint change (nfkube: scoped diff and commit; kube-proxy style: the partial
 * sync transaction it would write, through nft), and headless-service churn (nfkube: CPU per
 * event, messages written). Sizes: 1k and 10k services x 5, and 5k x 50 = 250k endpoints
 * (PROXY_BENCH_SIZES=1000x5,... picks sizes; 44125x2 is kubernetes#139513's Service count;
 * PROXY_BENCH_NFT_MAX_ENDPOINTS, default 100000, the largest size `nft -f` is run at). Each in
 * its own network namespace.
 * These rows are in-process (the component and the commit, no process start or parsing); the
 * end-to-end row runs `nfkube agent --once --manifests DIR --proxy --no-policy` as a new process
 * in its own namespace over Service + EndpointSlice YAML (CPU and peak RSS from bench/probe.js). */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { stringify } from 'yaml';
import type { EndpointSliceInfo, ServiceInfo } from '../src/k8s/service-model';
import type { ClusterChange } from '../src/k8s/source';
import { commit, Transaction } from '../src/nft/transaction';
import { ChangeScope } from '../src/pipeline/scope';
import { ProxyComponent } from '../src/proxy/component';
import { applyDiff, cloneModel, diffRulesets, diffTransaction } from '../src/ruleset/diff';
import { emptyModel } from '../src/ruleset/model';
import { openSandbox } from '../test/helpers/netns';
import { endpoint, node, service, slice, snapshotOf } from '../test/proxy/fixtures';
import { median, ms, ratio, table } from './harness';
import { cluster, kubeProxyText, NODE, proxyObjects } from './proxy-cluster';

/** The kube-proxy-style column past PROXY_BENCH_NFT_MAX_ENDPOINTS. */
const NFT_NOT_RUN = 'not run here (proxy-scale runs it, bounded in time)';

/** What kube-proxy's partial sync writes when one endpoint of one service is added. */
function kubeProxyPartial(svc: ServiceInfo, eps: { address: string }[]): string {
  const name = `${svc.namespace}/${svc.name}/tcp/http`;
  const vm = eps.map((e, k) => `${k} : goto endpoint-${name}__${e.address}/8080`).join(', ');
  const last = eps[eps.length - 1].address;
  return [
    `add chain ip kube-proxy endpoint-${name}__${last}/8080`,
    `flush chain ip kube-proxy endpoint-${name}__${last}/8080`,
    `add rule ip kube-proxy endpoint-${name}__${last}/8080 ip saddr ${last} jump mark-for-masquerade`,
    `add rule ip kube-proxy endpoint-${name}__${last}/8080 meta l4proto tcp dnat to ${last}:8080`,
    `flush chain ip kube-proxy service-${name}`,
    `add rule ip kube-proxy service-${name} ip daddr ${svc.clusterIPs[0]} tcp dport 80 ip saddr != 100.64.0.0/10 jump mark-for-masquerade`,
    `add rule ip kube-proxy service-${name} numgen random mod ${eps.length} vmap { ${vm} }`,
  ].join('\n') + '\n';
}

/** kube-proxy's published full syncs at these sizes: kubernetes#135639 (5,006 Services / 250k
 * endpoints, 13 min) and kubernetes#139513 (44,125 Services, 16m44s). */
function published(n: number, perService: number): { what: string; ms: number } | undefined {
  if (n >= 44_125) return { what: '44,125 Services, 16m44s', ms: 1_004_000 };
  if (n * perService >= 250_000) return { what: '250k endpoints, 13 min', ms: 780_000 };
  return undefined;
}

async function run(n: number, perService: number): Promise<string[][]> {
  const { services, slices } = cluster(n, perService);
  const headless = service('ns', 'headless', { headless: true });
  const snapshot = snapshotOf([...services, headless], slices, [node(NODE, { podCIDRs: ['100.64.0.0/10'] })]);
  const rows: string[][] = [];

  // nfkube: full sync (render + one transaction).
  const sb = openSandbox();
  let proxy!: ProxyComponent;
  // CPU beside wall time: on a shared machine the wall clock also counts other processes' turns.
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  proxy = new ProxyComponent({ nodeName: NODE });
  proxy.start(snapshot);
  const renderMs = performance.now() - t0;
  const table0 = { family: proxy.table.family, name: proxy.table.name };
  const tx = new Transaction().addTable(table0);
  diffTransaction(emptyModel(table0), proxy.desired, diffRulesets(emptyModel(table0), proxy.desired), tx);
  const res = await commit(sb.socket, tx, { echo: false });
  const fullMs = performance.now() - t0;
  const fullCpu = process.cpuUsage(cpu0);
  const fullCpuText = `CPU ${ms((fullCpu.user + fullCpu.system) / 1000)}, of it kernel ${ms(fullCpu.system / 1000)}`;
  const committed = cloneModel(proxy.desired);

  // nfkube: one endpoint added then removed, alternately, to one service (scoped diff + commit).
  let grow = true;
  let messages = 0;
  const target = slices[Math.floor(n / 2)];
  const grown = { ...target, endpoints: [...target.endpoints, endpoint('100.127.255.254', 'node-2')] };
  const cpu: number[] = [];
  const kernel: number[] = [];
  const totals: number[] = [];
  const change = await median(101, async () => {
    const c0 = performance.now();
    const scope = new ChangeScope();
    proxy.apply({ kind: 'EndpointSlice', type: 'upsert', key: `ns/${target.name}`, object: grow ? grown : target }, scope);
    const d = diffRulesets(committed, proxy.desired, scope);
    const t = diffTransaction(committed, proxy.desired, d);
    const c1 = performance.now();
    cpu.push(c1 - c0);
    messages = t.operations.length;
    await commit(sb.socket, t, { echo: false });
    kernel.push(performance.now() - c1);
    applyDiff(committed, proxy.desired, d);
    totals.push(performance.now() - c0);
    grow = !grow;
  });
  totals.sort((a, b) => a - b);
  const changeP99 = totals[Math.floor(totals.length * 0.99)];

  // nfkube: one Service and its slice added (timed), then removed (not timed), 21 times.
  const commitChanges = async (changes: ClusterChange[]) => {
    const scope = new ChangeScope();
    for (const c of changes) proxy.apply(c, scope);
    const d = diffRulesets(committed, proxy.desired, scope);
    await commit(sb.socket, diffTransaction(committed, proxy.desired, d), { echo: false });
    applyDiff(committed, proxy.desired, d);
  };
  let added = 0;
  const addService = await median(
    21,
    async () => {
      const svc = service('ns', `added-${added}`, { clusterIPs: [`10.254.0.${added + 1}`] });
      const eps = Array.from({ length: perService }, (_, k) => endpoint(`100.125.${added}.${k + 1}`, k === 0 ? NODE : 'node-2'));
      await commitChanges([
        { kind: 'Service', type: 'upsert', key: `ns/${svc.name}`, object: svc },
        { kind: 'EndpointSlice', type: 'upsert', key: `ns/${svc.name}-a`, object: slice('ns', `${svc.name}-a`, svc.name, { endpoints: eps }) },
      ]);
    },
    async () => {
      if (added > 0) {
        const name = `added-${added - 1}`;
        await commitChanges([
          { kind: 'EndpointSlice', type: 'delete', key: `ns/${name}-a`, object: slice('ns', `${name}-a`, name) },
          { kind: 'Service', type: 'delete', key: `ns/${name}`, object: service('ns', name, { clusterIPs: [`10.254.0.${added}`] }) },
        ]);
      }
      added++;
    },
  );

  // nfkube: headless churn (CPU per event, messages).
  let headlessMessages = 0;
  const events = 1000;
  const h0 = performance.now();
  for (let i = 0; i < events; i++) {
    const scope = new ChangeScope();
    const s = slice('ns', 'headless-a', 'headless', { endpoints: [endpoint(`100.126.0.${i % 250}`, 'node-2')] });
    proxy.apply({ kind: 'EndpointSlice', type: 'upsert', key: 'ns/headless-a', object: s }, scope);
    headlessMessages += diffTransaction(committed, proxy.desired, diffRulesets(committed, proxy.desired, scope)).operations.length;
  }
  const headlessMs = (performance.now() - h0) / events;
  await sb.close();

  // kube-proxy style through nft: beyond 100k endpoints it runs for many minutes (10k x 5 took
  // over 2 min on the shared machine), past what a bench run may take here
  // (PROXY_BENCH_NFT_MAX_ENDPOINTS moves the bound).
  if (n * perService > Number(process.env.PROXY_BENCH_NFT_MAX_ENDPOINTS ?? 100_000)) {
    const label = `${n} x ${perService}`;
    rows.push([label, 'full sync (in-process)', `${ms(fullMs)} (render ${ms(renderMs)}, ${res.messages} msgs; ${fullCpuText})`, NFT_NOT_RUN, '-']);
    const ref = published(n, perService);
    if (ref) rows.push([label, `full sync vs kube-proxy published (${ref.what})`, ms(fullMs), ms(ref.ms), ratio(ref.ms, fullMs)]);
    cpu.sort((a, b) => a - b);
    kernel.sort((a, b) => a - b);
    rows.push([label, 'one endpoint change p50 (in-process)', `${ms(change)} (${messages} msgs; apply + diff + encode ${ms(cpu[cpu.length >> 1])}, kernel exchange ${ms(kernel[kernel.length >> 1])})`, NFT_NOT_RUN, '-']);
    rows.push([label, 'one endpoint change p99 (in-process)', ms(changeP99), NFT_NOT_RUN, '-']);
    rows.push([label, 'one Service added p50 (in-process)', ms(addService), NFT_NOT_RUN, '-']);
    return rows;
  }
  const kb = openSandbox();
  const text = kubeProxyText(services, slices);
  const k0 = performance.now();
  kb.run('nft', ['-f', '-'], text);
  const kpFullMs = performance.now() - k0;
  const svc = services[Math.floor(n / 2)];
  const eps = [...target.endpoints, { address: '100.127.255.254' }];
  const kpChange = await median(5, () => {
    kb.run('nft', ['-f', '-'], kubeProxyPartial(svc, eps));
  });
  await kb.close();

  const label = `${n} x ${perService}`;
  rows.push([label, 'full sync (in-process)', `${ms(fullMs)} (render ${ms(renderMs)}, ${res.messages} msgs; ${fullCpuText})`, ms(kpFullMs), ratio(kpFullMs, fullMs)]);
  cpu.sort((a, b) => a - b);
  kernel.sort((a, b) => a - b);
  const p50 = (xs: number[]) => xs[xs.length >> 1];
  rows.push([
    label,
    'one endpoint change p50 (in-process)',
    `${ms(change)} (${messages} msgs; apply + diff + encode ${ms(p50(cpu))}, kernel exchange ${ms(p50(kernel))})`,
    ms(kpChange),
    ratio(kpChange, change),
  ]);
  rows.push([label, 'one endpoint change p99 (in-process)', ms(changeP99), '-', '-']);
  rows.push([label, 'one Service added p50 (in-process)', ms(addService), '-', '-']);
  const ref = published(n, perService);
  if (ref) rows.push([label, `full sync vs kube-proxy published (${ref.what})`, ms(fullMs), ms(ref.ms), ratio(ref.ms, fullMs)]);
  rows.push([label, 'headless endpoint change (in-process)', `${(headlessMs * 1000).toFixed(1)} µs CPU, ${headlessMessages} msgs / ${events} events`, '-', '-']);
  return rows;
}

/** `nfkube agent --once --manifests DIR --proxy --no-policy` as a new process in a fresh namespace. */
function agentOnce(n: number, perService: number): string[] {
  const { services, slices } = cluster(n, perService);
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-proxy-bench-'));
  const docs = proxyObjects(services, slices);
  for (let i = 0; i < docs.length; i += 200) writeFileSync(join(dir, `objects-${i / 200}.yaml`), docs.slice(i, i + 200).map((d) => stringify(d)).join('---\n'));
  const probe = join(dir, 'probe.json');
  const sb = openSandbox();
  try {
    const nfkube = join(__dirname, '..', '..', 'bin', 'nfkube');
    const t0 = performance.now();
    const r = spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, '-r', join(__dirname, 'probe.js'), nfkube, 'agent', '--once', '--manifests', dir, '--proxy', '--no-policy', '--node-name', NODE], {
      env: { ...process.env, NFKUBE_BENCH_PROBE: probe },
      encoding: 'utf8',
    });
    const wallMs = performance.now() - t0;
    if (r.status !== 0) throw new Error(`agent --once exited ${r.status}: ${r.stderr.slice(-2000)}`);
    const p = JSON.parse(readFileSync(probe, 'utf8').trim().split('\n').pop()!) as { userMs: number; systemMs: number; hwmKB: number };
    const chains = sb.run('nft', ['list', 'table', 'inet', 'nfkube-proxy']).split('\n').filter((l) => /^\tchain /.test(l)).length;
    // The same services through nft -f, as a new process too.
    const kb = openSandbox();
    const k0 = performance.now();
    kb.run('nft', ['-f', '-'], kubeProxyText(services, slices));
    const kpMs = performance.now() - k0;
    void kb.close();
    return [`${n} x ${perService}`, 'agent --once, new process (end to end)', `wall ${ms(wallMs)}, CPU ${ms(p.userMs + p.systemMs)}, peak RSS ${(p.hwmKB / 1024).toFixed(0)} MB (${chains} chains)`, ms(kpMs), ratio(kpMs, wallMs)];
  } finally {
    void sb.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The agent over HTTP against the test API server, in a fresh namespace (bench/proxy-live.ts). */
function agentLive(n: number, perService: number): string[] {
  const sb = openSandbox();
  try {
    sb.run('ip', ['link', 'set', 'lo', 'up']);
    const r = spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, join(__dirname, 'proxy-live.js'), String(n), String(perService)], {
      env: { ...process.env, NFKUBE_PROXY_LIVE_NETNS: '1' },
      encoding: 'utf8',
      timeout: 180_000,
    });
    if (r.status !== 0) throw new Error(`proxy-live exited ${r.status}: ${r.stderr.slice(-2000)}`);
    const x = JSON.parse(r.stdout.trim().split('\n').pop()!) as { firstCommitMs: number; p50: number; p90: number; p99: number; missed: number; cpuPerEventMs: number; cpuMs: number; hwmMB: number };
    return [
      `${n} x ${perService}`,
      'agent over HTTP (informers), new process: first commit; one endpoint change, API write -> commit',
      `first commit ${ms(x.firstCommitMs)}; change p50 ${ms(x.p50)}, p90 ${ms(x.p90)}, p99 ${ms(x.p99)} (${x.missed} missed); agent CPU per change ${ms(x.cpuPerEventMs)}; CPU ${ms(x.cpuMs)}, peak RSS ${x.hwmMB.toFixed(0)} MB`,
      '-',
      '-',
    ];
  } finally {
    void sb.close();
  }
}

async function main(): Promise<void> {
  const sizes: [number, number][] = [
    [1000, 5],
    [10000, 5],
    [5000, 50],
  ];
  // PROXY_BENCH_SIZES=1000x5,5000x50 runs only those sizes.
  const only = process.env.PROXY_BENCH_SIZES;
  if (only) sizes.splice(0, sizes.length, ...only.split(',').map((s) => s.split('x').map(Number) as [number, number]));
  const rows: string[][] = [];
  for (const [n, k] of sizes) {
    const done = await run(n, k);
    // As they come: a long run keeps what it measured.
    process.stderr.write(done.map((r) => `${r.join(' | ')}\n`).join(''));
    rows.push(...done);
  }
  if (process.env.PROXY_BENCH_E2E !== '0') rows.push(agentOnce(1000, 5), agentLive(1000, 5));
  process.stdout.write(`## Service proxy (nfkube vs a kube-proxy-style nft -f)\n\n`);
  process.stdout.write(
    table(['services x endpoints', 'operation', 'nfkube', 'kube-proxy style (nft -f, new process)', 'nft / nfkube'], rows) +
      '\n\nkube-proxy style = the text its nftables proxier writes, loaded by `nft -f` (its partial sync for one endpoint; kube-proxy also re-reads the table with `nft --json list`, not counted). Published: 5,006 services / 250k endpoints full sync 13 min (kubernetes#135639); 44,125 Services 16m44s (kubernetes#139513). One Service added: a ClusterIP Service of one TCP port and its slice, then removed again before the next.\n',
  );
}

void main();
