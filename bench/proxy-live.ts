/** One end-to-end row of bench/proxy.bench.ts, run by it inside a fresh network namespace (with
 * loopback up): the test API server holds n services x perService endpoints, `nfkube agent
 * --kubeconfig K --proxy --no-policy` runs as a new process against it over HTTP, and this process
 * times the first commit and then, for each of EVENTS EndpointSlice writes (one endpoint added or
 * removed), the time from the API write to the commit, seen by polling the namespace's ruleset
 * generation (NFT_MSG_GETGEN). Prints one JSON line. Refuses to run outside a namespace the bench
 * made (the agent programs this namespace's kernel). */
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { NetlinkSocket } from '../src/netlink/socket';
import { getGeneration } from '../src/nft/generation';
import { TestApiServer } from '../test/helpers/apiserver';
import { cluster, NODE, proxyObjects } from './proxy-cluster';

const EVENTS = 21;

async function nextGeneration(socket: NetlinkSocket, from: number, timeoutMs: number): Promise<number | undefined> {
  const t0 = performance.now();
  while (performance.now() - t0 < timeoutMs) {
    if ((await getGeneration(socket)) !== from) return performance.now();
    await new Promise((r) => setImmediate(r));
  }
  return undefined;
}

async function main(): Promise<void> {
  if (process.env.NFKUBE_PROXY_LIVE_NETNS !== '1') throw new Error('run by bench/proxy.bench.js inside its own network namespace');
  const [n, perService] = process.argv.slice(2).map(Number);
  const { services, slices } = cluster(n, perService);
  const server = await TestApiServer.start();
  for (const o of proxyObjects(services, slices)) server.create(o as never);
  const kubeconfig = server.writeKubeconfig();
  const socket = NetlinkSocket.open();
  const probe = `${kubeconfig}.probe`;
  const nfkube = process.env.NFKUBE_BENCH_BIN ?? join(__dirname, '..', '..', 'bin', 'nfkube');
  const g0 = await getGeneration(socket);
  const t0 = performance.now();
  const child = spawn(process.execPath, ['-r', join(__dirname, 'probe.js'), nfkube, 'agent', '--kubeconfig', kubeconfig, '--proxy', '--no-policy', '--node-name', NODE, '--log-level', 'warn', '--metrics-addr', ''], {
    env: { ...process.env, NFKUBE_BENCH_PROBE: probe },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  try {
    const first = await nextGeneration(socket, g0, 120_000);
    if (first === undefined) throw new Error('no first commit');
    // Let the full sync's follow-ups (health, conntrack) settle.
    await new Promise((r) => setTimeout(r, 500));
    const latencies: number[] = [];
    let missed = 0;
    const target = slices[n >> 1];
    for (let i = 0; i < EVENTS; i++) {
      const g = await getGeneration(socket);
      const w0 = performance.now();
      server.modify('EndpointSlice', 'ns', target.name, (s) => {
        const eps = s.endpoints as unknown[];
        if (i % 2 === 0) eps.push({ addresses: ['100.127.255.254'], conditions: { ready: true }, nodeName: 'node-2' });
        else eps.pop();
      });
      const at = await nextGeneration(socket, g, 5_000);
      if (at === undefined) missed++;
      else latencies.push(at - w0);
      await new Promise((r) => setTimeout(r, 20));
    }
    latencies.sort((a, b) => a - b);
    child.kill('SIGTERM');
    await exited;
    const p = JSON.parse(readFileSync(probe, 'utf8').trim().split('\n').pop()!) as { userMs: number; systemMs: number; hwmKB: number };
    const pct = (q: number) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
    process.stdout.write(`${JSON.stringify({ firstCommitMs: first - t0, p50: pct(0.5), p90: pct(0.9), missed, cpuMs: p.userMs + p.systemMs, hwmMB: p.hwmKB / 1024 })}\n`);
  } finally {
    child.kill('SIGTERM');
    await socket.close();
    await server.close();
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${String(err)}\n`);
  process.exit(1);
});
