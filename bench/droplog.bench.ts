/** Drop logging: the agent's CPU per logged drop, the drop rate it keeps up with when the
 * kernel-side limit is off (and what the limit leaves it), and the cost of logging on the data
 * path: datagrams per second through an isolated pod's default deny with logging off, on with
 * the default limit (per combination chain), and on without a limit. One topology, configurations interleaved,
 * median of three floods of 100,000 datagrams each. */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Writable } from 'node:stream';
import pino from 'pino';
import { Agent } from '../src/pipeline/agent';
import { PolicyComponent } from '../src/policy/component';
import { PolicyModes } from '../src/policy/modes';
import { DropLogOptions } from '../src/policy/render/tail';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../src/k8s/normalize';
import { NetlinkSocket } from '../src/netlink/socket';
import { readPolicyCounters } from '../src/policy/metrics-bridge';
import { ClusterView } from '../src/policy/droplog/cluster-view';
import { DropLog } from '../src/policy/droplog/drop-log';
import { NflogSubscription } from '../src/nflog/subscription';
import { namespace, pod, policy } from '../test/agent/fixtures';
import { createTopology } from '../test/helpers/topology';
import { ratio, table } from './harness';

const execFileAsync = promisify(execFile);
const NODE = 'node-1';
const DATAGRAMS = 100_000;
const ROUNDS = 3;
const GROUP = 9;

const FLOOD = `
import socket, sys, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.connect((sys.argv[1], 80))
n = int(sys.argv[2])
t = time.perf_counter()
for _ in range(n):
    s.send(b'0123456789abcdef')
print((time.perf_counter() - t) * 1000)
`;

interface Config {
  name: string;
  log?: DropLogOptions;
}
const CONFIGS: Config[] = [
  { name: 'logging off' },
  { name: 'logging on, default limit (10/s, burst 5 per combination chain)', log: { group: GROUP, rate: 10, burst: 5 } },
  { name: 'logging on, no limit', log: { group: GROUP, rate: 0, burst: 5 } },
];

async function main(): Promise<void> {
  const topo = createTopology('routed', [{ namespace: 'x', name: 'a' }, { namespace: 'x', name: 'b' }]);
  const [a, b] = topo.pods;
  const snapshot = {
    namespaces: new Map([['x', normalizeNamespace(namespace('x'))]]),
    pods: new Map([['x/a', normalizePod(pod('x', 'a', a.ipv4, { app: 'a' }, { node: NODE }))], ['x/b', normalizePod(pod('x', 'b', b.ipv4, { app: 'b' }, { node: NODE }))]]),
    policies: new Map([['x/deny-b', normalizeNetworkPolicy(policy('x', 'deny-b', { podSelector: { matchLabels: { app: 'b' } }, policyTypes: ['Ingress'] }))]]),
  };
  const socket = NetlinkSocket.open({ netns: topo.nodeNetnsPath });
  const view = new ClusterView(NODE);
  view.load(snapshot);
  let lines = 0;
  // Real serialisation, as the agent's pino logger does, into a sink.
  const logger = pino({ level: 'info' }, new Writable({ write: (_c, _e, done) => (lines++, done()) }));
  const drops = new DropLog({ view, modes: new PolicyModes(), denyAction: 'drop', logger });
  const sub = await NflogSubscription.open({ group: GROUP, netns: topo.nodeNetnsPath, onPacket: (p) => drops.handle(p) });
  const results = new Map<string, { pps: number[]; lines: number[]; cpuPerLine: number[]; cpuMs: number[]; lost: number[]; dropped: bigint[] }>();
  try {
    for (let round = 0; round < ROUNDS; round++) {
      for (const cfg of CONFIGS) {
        await quiet(() => lines);
        const agent = new Agent({ socket, logger: pino({ level: 'silent' }), components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', log: cfg.log, logger: pino({ level: 'silent' }) })] });
        await agent.start(snapshot);
        await agent.stop();
        const before = await denyPackets(socket);
        const overrunsBefore = sub.stats.overruns;
        lines = 0;
        const cpu0 = process.cpuUsage();
        // The sender runs in its own process while this one's event loop reads the log.
        const { stdout: out } = await execFileAsync('nsenter', [`--net=${a.netnsPath}`, 'python3', '-c', FLOOD, b.ipv4, String(DATAGRAMS)], { encoding: 'utf8' });
        await quiet(() => lines);
        const cpu = process.cpuUsage(cpu0);
        const r = results.get(cfg.name) ?? { pps: [], lines: [], cpuPerLine: [], cpuMs: [], lost: [], dropped: [] };
        const sendMs = Number(out);
        r.pps.push(DATAGRAMS / (sendMs / 1000));
        r.lines.push(lines);
        const cpuMs = (cpu.user + cpu.system) / 1000;
        r.cpuMs.push(cpuMs);
        r.cpuPerLine.push(lines > 0 ? (cpuMs * 1000) / lines : NaN);
        r.lost.push(sub.stats.overruns - overrunsBefore);
        r.dropped.push((await denyPackets(socket)) - before);
        results.set(cfg.name, r);
      }
    }
  } finally {
    await sub.close();
    await socket.close();
    topo.close();
  }
  const med = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)];
  const off = med(results.get(CONFIGS[0].name)!.pps);
  const rows = CONFIGS.map((cfg) => {
    const r = results.get(cfg.name)!;
    const perLine = med(r.cpuPerLine);
    return [
      cfg.name,
      `${(med(r.pps) / 1000).toFixed(0)}k`,
      ratio(med(r.pps), off),
      r.dropped.every((d) => d === BigInt(DATAGRAMS)) ? `all ${DATAGRAMS}` : r.dropped.join(', '),
      String(med(r.lines)),
      String(med(r.lost)),
      `${med(r.cpuMs).toFixed(1)} ms`,
      Number.isNaN(perLine) ? '-' : `${perLine.toFixed(1)} µs`,
    ];
  });
  process.stdout.write(`## Drop logging: data-path cost and agent CPU per logged drop

${table(['configuration', 'datagrams/s through the deny (sender)', 'vs logging off', 'dropped by the kernel', 'lines logged', 'lost (socket overruns)', 'agent CPU', 'agent CPU per logged drop'], rows)}

One pod floods ${DATAGRAMS.toLocaleString('en')} UDP datagrams (python3 sendto loop) at an isolated pod on the same node; median of ${ROUNDS} floods per configuration, configurations interleaved. The sender's rate includes the forward path (veth, both base chains, the combination chain, the default deny chain), so it shows what the log rule adds per packet. The sender is a separate process; this process is the agent's drop logging, reading while the flood runs. Agent CPU is its CPU from the flood's start until no line has arrived for 300 ms: receiving, decoding, resolving pods and policies, and writing one pino JSON line per packet. With the default limit the kernel hands the agent at most burst + rate x seconds lines per combination chain, whatever the flood; without one every dropped packet is a message to the agent, and the lines and overruns columns (the kernel's ENOBUFS reports, each for one or more lost messages) show whether it kept up. On a machine of few cores the agent and the flood share them, so the sender's rate falls with the agent's work, not with the rule.
`);
}

/** Resolves once `count` has not moved for 300 ms: every batch the kernel queued is read. */
async function quiet(count: () => number): Promise<void> {
  for (let last = -1; count() !== last; ) {
    last = count();
    await new Promise((r) => setTimeout(r, 300));
  }
}

/** Every packet the default deny caught, from the per-address counter sets. */
async function denyPackets(socket: NetlinkSocket): Promise<bigint> {
  const read = await readPolicyCounters(socket, 'nfkube', (address) => address);
  let n = 0n;
  for (const r of read.rows) if (r.verdict !== 'accept') n += BigInt(r.packets);
  return n;
}

main().catch((err) => {
  process.stderr.write(`${err.stack ?? err}\n`);
  process.exit(1);
});
