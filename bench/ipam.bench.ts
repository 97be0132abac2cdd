/** Issue 15 benchmark (IPAM), in one run:
 * 1. 500 pods across 100 nodes, all at once (whereabouts' published case: 4m34s): time to the last
 *    address, and API writes per 1,000 pods; then the same under 10% injected API failures.
 * 2. ADD through the plugin as a runtime runs it (exec of nfkube-cni-ipam, answered by a warm
 *    agent over its socket): p50/p95 wall time of the compiled plugin (native/cni/) and the Node
 *    plugin, interleaved, side by side with `node -e 0` (the floor any node-based plugin pays).
 * 3. The full fault run: 100 node agents, 5,000 ADDs, random DELs and vanished pods, 20 agent
 *    crashes mid-allocation, 10% faults: duplicates and leaks after GC (must be 0).
 * Agents run in this process against the test API server through client-node.
 * Run: npm run build && node dist/bench/ipam.bench.js [--quick] [--plugin: section 2 only] */
import { spawn } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { pool } from '../test/ipam/cluster';
import { COMPILED_PLUGIN, NODE_PLUGIN, startPluginAgent } from '../test/ipam/plugins';
import { runScale, ScaleResult } from '../test/ipam/scale';
import { ms, ratio, table } from './harness';

const quick = process.argv.includes('--quick');
const pluginOnly = process.argv.includes('--plugin');
const EXECS = quick ? 30 : 100;

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN;
}

function writesPer1000(r: ScaleResult, pods: number): { blocks: number; other: number } {
  let blocks = 0;
  let other = 0;
  for (const [k, n] of r.writes) {
    if (k === 'POST ipblocks') blocks += n;
    else other += n;
  }
  return { blocks: (blocks * 1000) / pods, other: (other * 1000) / pods };
}

function run(cmd: string, args: string[], env: NodeJS.ProcessEnv, input: string): Promise<{ code: number | null; out: string; ms: number }> {
  return new Promise((res, rej) => {
    const t0 = performance.now();
    const child = spawn(cmd, args, { env, stdio: ['pipe', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.on('data', (c) => (out += c));
    child.on('error', rej);
    child.stdin.on('error', () => {}); // VERSION exits without reading stdin
    child.on('close', (code) => res({ code, out, ms: performance.now() - t0 }));
    child.stdin.end(input);
  });
}

async function pluginExec(): Promise<{ add: number[]; compiled: number[]; compiledVersion: number[]; nodeFloor: number[] }> {
  const warm = await startPluginAgent('bench-node', [pool('bench', ['198.18.0.0/16'])]);
  const agent = warm.agent;
  const conf = JSON.stringify({ cniVersion: '1.0.0', name: 'bench', ipam: { type: 'nfkube-cni-ipam', socket: warm.socket.path } });
  // Warm: the first block is claimed before timing.
  await agent.handle({ command: 'ADD', network: 'warm', containerID: 'w', ifname: 'eth0' });
  const add: number[] = [];
  const compiled: number[] = [];
  const compiledVersion: number[] = [];
  const nodeFloor: number[] = [];
  const env = (id: string) => ({ CNI_COMMAND: 'ADD', CNI_CONTAINERID: id, CNI_IFNAME: 'eth0', CNI_NETNS: '/proc/self/ns/net' });
  for (let i = 0; i < EXECS; i++) {
    const floor = await run(process.execPath, ['-e', '0'], {}, '');
    nodeFloor.push(floor.ms);
    const r = await run(process.execPath, [NODE_PLUGIN], env(`c${i}`), conf);
    if (r.code !== 0) throw new Error(`plugin ADD failed: ${r.out}`);
    add.push(r.ms);
    if (!COMPILED_PLUGIN) continue;
    const c = await run(COMPILED_PLUGIN, [], env(`k${i}`), conf);
    if (c.code !== 0) throw new Error(`compiled plugin ADD failed: ${c.out}`);
    compiled.push(c.ms);
    compiledVersion.push((await run(COMPILED_PLUGIN, [], { CNI_COMMAND: 'VERSION' }, '')).ms);
  }
  await warm.close();
  return { add, compiled, compiledVersion, nodeFloor };
}

/** Section 2 alone: `node dist/bench/ipam.bench.js --plugin` runs only this (about a minute). */
async function pluginSection(): Promise<string[]> {
  const p = await pluginExec();
  const compiledRow = p.compiled.length
    ? [
        ['nfkube-cni-ipam ADD, compiled (native/cni/)', ms(pct(p.compiled, 50)), ms(pct(p.compiled, 95)), ratio(pct(p.compiled, 50), pct(p.add, 50)), ratio(pct(p.compiled, 50), pct(p.nodeFloor, 50))],
        ['compiled VERSION (exec alone, no agent)', ms(pct(p.compiledVersion, 50)), ms(pct(p.compiledVersion, 95)), ratio(pct(p.compiledVersion, 50), pct(p.add, 50)), ratio(pct(p.compiledVersion, 50), pct(p.nodeFloor, 50))],
      ]
    : [['nfkube-cni-ipam ADD, compiled', 'not built', '', '', '']];
  return [
    `ADD through the plugin as a runtime runs it (exec to result: exec, socket, warm agent; ${EXECS} sequential ADDs per plugin, interleaved), side by side with bare \`node -e 0\`. Target: p50 <= 20 ms.`,
    '',
    table(
      ['', 'p50', 'p95', 'ratio p50 to the Node plugin', 'ratio p50 to node -e 0'],
      [
        ...compiledRow,
        ['nfkube-cni-ipam ADD, Node plugin', ms(pct(p.add, 50)), ms(pct(p.add, 95)), '1.00x', ratio(pct(p.add, 50), pct(p.nodeFloor, 50))],
        ['node -e 0', ms(pct(p.nodeFloor, 50)), ms(pct(p.nodeFloor, 95)), ratio(pct(p.nodeFloor, 50), pct(p.add, 50)), '1.00x'],
      ],
    ),
    '',
  ];
}

async function main(): Promise<void> {
  const lines: string[] = ['## IPAM (issue 15)', ''];
  if (pluginOnly) {
    process.stdout.write([...lines, ...(await pluginSection())].join('\n') + '\n');
    return;
  }
  const burst = { nodes: 100, adds: 500, crashes: 0, delRate: 0, vanishRate: 0, seed: 7, dualStack: false };
  const clean = await runScale({ ...burst, faultRate: 0 });
  const faulty = await runScale({ ...burst, faultRate: 0.1 });
  const row = (name: string, r: ScaleResult) => {
    const w = writesPer1000(r, 500);
    return [name, ms(r.timeToLastMs), `${r.succeeded}/${r.succeeded + r.failedCleanly}`, ms(pct(r.addLatencyMs, 50)), ms(pct(r.addLatencyMs, 99)), w.blocks.toFixed(0), w.other.toFixed(0), String(r.blocks), String(r.duplicatesSeen.length + r.findings.filter((x) => x.kind === 'duplicate').length)];
  };
  lines.push(
    '500 pods across 100 nodes, all ADDs at once (IPv4 pool, /26 blocks). whereabouts published 4m34s for this case.',
    '',
    table(
      ['API faults', 'time to last address', 'succeeded', 'p50 ADD (agent)', 'p99 ADD (agent)', 'block creates / 1,000 pods', 'other writes / 1,000 pods', 'blocks', 'duplicates'],
      [row('none', clean), row('10% (500s, resets, replies dropped after commit, delays)', faulty)],
    ),
    '',
    'Block creates are the only writes on the allocation path; "other writes" are the coalesced status publishes (allocations per block, seconds later, for `nfkube ipam check`) and retried writes. With 100 nodes every node needs one block of its own, so 500 pods cost 100 claims (200 per 1,000 pods); at 1,000 pods on 16 nodes it is 1,000/62.',
    '',
  );
  lines.push(...(await pluginSection()));
  const full = quick
    ? await runScale({ nodes: 20, adds: 500, faultRate: 0.1, crashes: 6, delRate: 0.2, vanishRate: 0.1, seed: 11 })
    : await runScale({ nodes: 100, adds: 5000, faultRate: 0.1, crashes: 20, delRate: 0.2, vanishRate: 0.1, seed: 11 });
  const n = quick ? '20 nodes / 500 ADDs' : '100 nodes / 5,000 ADDs';
  lines.push(
    `Fault run, ${n} (dual-stack), 20% DELs, 10% pods deleted without DEL, ${quick ? 6 : 20} agent crashes mid-allocation, 10% API faults (${full.faultsInjected} injected):`,
    '',
    table(
      ['time to last answer', 'succeeded', 'failed cleanly', 'duplicates', 'leaks after GC', 'live attachments lost', 'checker findings'],
      [[ms(full.timeToLastMs), String(full.succeeded), String(full.failedCleanly), String(full.duplicatesSeen.length), String(full.leaks.length), String(full.lost.length), String(full.findings.length)]],
    ),
    '',
  );
  process.stdout.write(lines.join('\n') + '\n');
  const bad = full.duplicatesSeen.length + full.leaks.length + full.lost.length + full.findings.length + clean.duplicatesSeen.length + faulty.duplicatesSeen.length;
  if (bad) {
    process.stderr.write(JSON.stringify({ duplicates: full.duplicatesSeen.slice(0, 5), leaks: full.leaks.slice(0, 5), lost: full.lost.slice(0, 5), findings: full.findings.slice(0, 5) }, null, 2) + '\n');
    process.exitCode = 1;
  }
}

main().then(
  () => process.exit(),
  (err) => {
    process.stderr.write(`${err?.stack ?? err}\n`);
    process.exit(1);
  },
);
