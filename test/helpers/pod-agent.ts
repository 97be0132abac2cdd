/** The process that stands in for a pod in the conformance tests: run inside a pod's network
 * namespace it serves TCP and UDP (by default on ports 80 and 81, IPv4 and IPv6), answering every
 * connection or datagram with its own name, and runs the probes its parent asks for on stdin (one
 * JSON request a line, one JSON answer a line on stdout). With `--sctp` a child (sctp-agent.py)
 * serves those SCTP ports and runs the SCTP probes, by crafted INIT and INIT ACK packets.
 *
 * `node pod-agent.js --name x/a [--no-serve] [--tcp 80,81] [--udp 80,81] [--sctp 9003,9005]` (the
 * node's own prober does not serve). Without `--name` it does nothing, because test runners
 * execute every file under test/. */
import { createServer, connect, type Server, type Socket } from 'node:net';
import { createSocket, type Socket as UdpSocket } from 'node:dgram';
import { createInterface } from 'node:readline';
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';

export const SERVED_PORTS = [80, 81] as const;

export type Protocol = 'tcp' | 'udp' | 'sctp';
export type Family = 4 | 6;

export interface ProbeRequest {
  key: string;
  host: string;
  port: number;
  protocol: Protocol;
  family: Family;
  timeoutMs: number;
}

/** Either the name the server answered with, or why there was no answer. */
export type ProbeOutcome = { reply: string } | { error: string };

export interface AgentRequest {
  id: number;
  probes: ProbeRequest[];
}

export interface AgentResponse {
  id: number;
  outcomes: Record<string, ProbeOutcome>;
}

// UDP probes bind explicit, never-repeating source ports: a reused 4-tuple could ride on a
// conntrack entry left by an earlier case (conntrack cannot be flushed without a tool).
const UDP_SOURCE_PORTS = { first: 20000, count: 40000 };
let nextUdpSourcePort = 0;

function probeTcp(req: ProbeRequest): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    let socket: Socket | undefined;
    let reply = '';
    const finish = (outcome: ProbeOutcome): void => {
      clearTimeout(timer);
      socket?.destroy();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ error: 'timeout' }), req.timeoutMs);
    socket = connect({ host: req.host, port: req.port, family: req.family });
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (reply += chunk));
    socket.on('end', () => finish(reply ? { reply } : { error: 'closed without reply' }));
    socket.on('error', (err: NodeJS.ErrnoException) => finish({ error: err.code ?? err.message }));
  });
}

function probeUdp(req: ProbeRequest): Promise<ProbeOutcome> {
  return new Promise((resolve) => {
    const socket: UdpSocket = createSocket(req.family === 4 ? 'udp4' : 'udp6');
    const resends: NodeJS.Timeout[] = [];
    let done = false;
    const finish = (outcome: ProbeOutcome): void => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      resends.forEach(clearTimeout);
      socket.close();
      resolve(outcome);
    };
    const timer = setTimeout(() => finish({ error: 'timeout' }), req.timeoutMs);
    const send = (): void => {
      if (!done) socket.send('probe', (err) => err && finish({ error: (err as NodeJS.ErrnoException).code ?? err.message }));
    };
    socket.on('message', (msg) => finish({ reply: msg.toString('utf8') }));
    socket.on('error', (err: NodeJS.ErrnoException) => finish({ error: err.code ?? err.message }));
    const port = UDP_SOURCE_PORTS.first + (nextUdpSourcePort++ % UDP_SOURCE_PORTS.count);
    socket.bind({ port, exclusive: true }, () => {
      socket.connect(req.port, req.host, () => {
        send();
        // A datagram is not retransmitted by the kernel; resend so one lost packet is not a "deny".
        resends.push(setTimeout(send, req.timeoutMs / 3), setTimeout(send, (2 * req.timeoutMs) / 3));
      });
    });
  });
}

export function probe(req: ProbeRequest): Promise<ProbeOutcome> {
  return req.protocol === 'tcp' ? probeTcp(req) : probeUdp(req);
}

// dist/test/helpers -> the checkout's test/helpers, where the script lives.
const SCTP_AGENT = join(__dirname, '..', '..', '..', 'test', 'helpers', 'sctp-agent.py');
// SCTP probes, like UDP ones, never reuse a source port: no probe rides on an older association.
const SCTP_SOURCE_PORTS = { first: 20000, count: 40000 };

/** The SCTP child: serves the given ports (unless none) and runs SCTP probe batches. */
class SctpAgent {
  private nextId = 1;
  private nextSourcePort = 0;
  private readonly pending = new Map<number, (outcomes: Record<string, ProbeOutcome>) => void>();

  private constructor(private readonly child: ChildProcess) {}

  static start(name: string, served: number[]): Promise<SctpAgent> {
    const child = spawn('python3', [SCTP_AGENT, '--name', name, ...(served.length > 0 ? ['--serve', served.join(',')] : [])], { stdio: ['pipe', 'pipe', 'inherit'] });
    const agent = new SctpAgent(child);
    return new Promise((resolve, reject) => {
      child.once('exit', (code) => reject(new Error(`sctp-agent exited with ${code}`)));
      createInterface({ input: child.stdout! }).on('line', (line) => {
        const msg = JSON.parse(line) as { ready: string } | { id: number; outcomes: Record<string, ProbeOutcome> };
        if ('ready' in msg) resolve(agent);
        else {
          agent.pending.get(msg.id)?.(msg.outcomes);
          agent.pending.delete(msg.id);
        }
      });
    });
  }

  probe(reqs: ProbeRequest[]): Promise<Record<string, ProbeOutcome>> {
    const id = this.nextId++;
    const probes = reqs.map((r) => ({ key: r.key, host: r.host, port: r.port, timeoutMs: r.timeoutMs,
      sport: SCTP_SOURCE_PORTS.first + (this.nextSourcePort++ % SCTP_SOURCE_PORTS.count) }));
    return new Promise((resolve) => {
      this.pending.set(id, resolve);
      this.child.stdin!.write(`${JSON.stringify({ id, probes })}\n`);
    });
  }

  stop(): void {
    this.child.stdin!.end();
  }
}

function portList(argv: string[], flag: string, fallback: readonly number[]): number[] {
  const at = argv.indexOf(flag);
  if (at < 0) return [...fallback];
  return argv[at + 1].split(',').filter((p) => p !== '').map(Number);
}

async function serve(name: string, tcpPorts: number[], udpPorts: number[]): Promise<void> {
  const listening: Promise<void>[] = [];
  for (const [host, udpType] of [['0.0.0.0', 'udp4'], ['::', 'udp6']] as const) {
    for (const port of tcpPorts) {
      const tcp: Server = createServer((conn) => {
        conn.on('error', () => undefined);
        conn.end(name);
      });
      listening.push(new Promise((resolve, reject) => {
        tcp.once('error', reject);
        tcp.listen({ host, port, ipv6Only: host === '::' }, resolve);
      }));
    }
    for (const port of udpPorts) {
      const udp = createSocket({ type: udpType, ipv6Only: host === '::' });
      udp.on('message', (_msg, from) => udp.send(name, from.port, from.address));
      udp.on('error', () => undefined);
      listening.push(new Promise((resolve) => udp.bind({ address: host, port }, resolve)));
    }
  }
  await Promise.all(listening);
}

async function main(argv: string[]): Promise<void> {
  const nameAt = argv.indexOf('--name');
  if (nameAt < 0) return;
  const name = argv[nameAt + 1];
  const serving = !argv.includes('--no-serve');
  if (serving) await serve(name, portList(argv, '--tcp', SERVED_PORTS), portList(argv, '--udp', SERVED_PORTS));
  const sctp = argv.includes('--sctp') ? await SctpAgent.start(name, serving ? portList(argv, '--sctp', []) : []) : undefined;
  const lines = createInterface({ input: process.stdin });
  lines.on('line', async (line) => {
    const request = JSON.parse(line) as AgentRequest;
    const sctpProbes = request.probes.filter((p) => p.protocol === 'sctp');
    const [results, sctpOutcomes] = await Promise.all([
      Promise.all(request.probes.filter((p) => p.protocol !== 'sctp').map(async (p) => [p.key, await probe(p)] as const)),
      sctpProbes.length === 0 ? {} : sctp ? sctp.probe(sctpProbes) : Object.fromEntries(sctpProbes.map((p) => [p.key, { error: 'no --sctp' }])),
    ]);
    const response: AgentResponse = { id: request.id, outcomes: { ...Object.fromEntries(results), ...sctpOutcomes } };
    process.stdout.write(`${JSON.stringify(response)}\n`);
  });
  // The parent closing our stdin is the signal to go.
  lines.on('close', () => {
    sctp?.stop();
    process.exit(0);
  });
  process.stdout.write(`${JSON.stringify({ ready: name })}\n`);
}

if (require.main === module) {
  main(process.argv.slice(2)).catch((err) => {
    process.stderr.write(`pod-agent: ${err instanceof Error ? err.stack : String(err)}\n`);
    process.exit(1);
  });
}
