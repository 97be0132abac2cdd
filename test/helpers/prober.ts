/** Probes a whole reachability matrix with real packets: one pod-agent process per pod (serving
 * TCP/UDP 80 and 81 and running probes) plus one prober in the node's namespace, every probe of
 * the matrix in flight at once with a bounded timeout. Also the matrix type and the printable
 * expected-vs-actual "truth table" diff, after the upstream Kubernetes netpol e2e tests. */
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import type { AgentRequest, AgentResponse, Family, ProbeOutcome, ProbeRequest, Protocol } from './pod-agent';
import type { Topology } from './topology';

export type { Family, Protocol } from './pod-agent';

/** The row of traffic that starts in the node's own namespace (kubelet probes). */
export const NODE = 'node';

/** One column group of the matrix: a port, a protocol and an address family. */
export interface Slice {
  protocol: Protocol;
  port: number;
  family: Family;
}

/** The ports each pod serves, per protocol. */
export interface ServedPorts {
  tcp: number[];
  udp: number[];
  sctp: number[];
}

/** What the NetworkPolicy conformance pods serve: TCP and UDP 80 and 81, no SCTP. */
export const DEFAULT_PORTS: ServedPorts = { tcp: [80, 81], udp: [80, 81], sctp: [] };

/** Every (protocol, port, family) the pods serve, the columns of a matrix. */
export function slicesOf(ports: ServedPorts): Slice[] {
  return (['tcp', 'udp', 'sctp'] as const).flatMap((protocol) =>
    ports[protocol].flatMap((port) => ([4, 6] as const).map((family) => ({ protocol, port, family }))));
}

export const SLICES: Slice[] = slicesOf(DEFAULT_PORTS);

export interface Cell extends Slice {
  from: string;
  to: string;
}

export function sliceName(s: Slice): string {
  return `${s.protocol}/${s.port} IPv${s.family}`;
}

export function cellName(c: Cell): string {
  return `${c.from} -> ${c.to} ${sliceName(c)}`;
}

/** A cell's identity, as used in ProbeResult.outcomes. */
export function cellKey(c: Cell): string {
  return `${c.from}|${c.to}|${c.protocol}|${c.port}|${c.family}`;
}

/** A boolean per (from, to, slice): whether the connection gets through. */
export class Matrix {
  private readonly cells = new Map<string, boolean>();

  constructor(readonly sources: string[], readonly targets: string[], initial: boolean, readonly slices: Slice[] = SLICES) {
    for (const cell of this.allCells()) this.cells.set(cellKey(cell), initial);
  }

  *allCells(): Generator<Cell> {
    for (const from of this.sources) for (const to of this.targets) for (const s of this.slices) yield { from, to, ...s };
  }

  get(cell: Cell): boolean {
    const v = this.cells.get(cellKey(cell));
    if (v === undefined) throw new Error(`no such cell: ${cellName(cell)}`);
    return v;
  }

  set(cell: Cell, value: boolean): void {
    const key = cellKey(cell);
    if (!this.cells.has(key)) throw new Error(`no such cell: ${cellName(cell)}`);
    this.cells.set(key, value);
  }

  count(value: boolean): number {
    let n = 0;
    for (const v of this.cells.values()) if (v === value) n++;
    return n;
  }
}

export interface ProbeResult {
  matrix: Matrix;
  /** What each probe saw (a reply or an error), for the diff's explanations. */
  outcomes: Map<string, ProbeOutcome>;
}

export interface Comparison {
  mismatches: Cell[];
  /** The printable truth tables of every slice with a mismatch, then one line per mismatch. */
  report: string;
}

/** Compares expected with actual; the report is empty when they agree. */
export function compareMatrices(expected: Matrix, actual: ProbeResult): Comparison {
  const mismatches = [...expected.allCells()].filter((c) => expected.get(c) !== actual.matrix.get(c));
  if (mismatches.length === 0) return { mismatches, report: '' };
  const lines: string[] = [
    `${mismatches.length} of ${[...expected.allCells()].length} cells differ.`,
    'legend: . allowed as expected   x blocked as expected   B expected allowed, got Blocked   A expected blocked, got Allowed',
  ];
  for (const s of expected.slices) {
    if (!mismatches.some((m) => m.protocol === s.protocol && m.port === s.port && m.family === s.family)) continue;
    lines.push('', `${sliceName(s)} (rows: from, columns: to)`);
    const width = Math.max(...expected.sources.map((r) => r.length), ...expected.targets.map((t) => t.length)) + 1;
    lines.push(['', ...expected.targets].map((t) => t.padEnd(width)).join(''));
    for (const from of expected.sources) {
      const row = expected.targets.map((to) => {
        const cell = { from, to, ...s };
        const want = expected.get(cell);
        const got = actual.matrix.get(cell);
        const mark = want === got ? (want ? '.' : 'x') : want ? 'B' : 'A';
        return mark.padEnd(width);
      });
      lines.push([from.padEnd(width), ...row].join(''));
    }
  }
  lines.push('');
  for (const m of mismatches) {
    const outcome = actual.outcomes.get(cellKey(m));
    const seen = !outcome ? 'not probed' : 'reply' in outcome ? `reply "${outcome.reply}"` : outcome.error;
    lines.push(`${cellName(m)}: expected ${expected.get(m) ? 'allowed' : 'blocked'}, got ${actual.matrix.get(m) ? 'allowed' : 'blocked'} (${seen})`);
  }
  return { mismatches, report: lines.join('\n') };
}

interface Agent {
  id: string;
  child: ChildProcess;
  pending: Map<number, (r: AgentResponse) => void>;
  exited: Promise<void>;
}

const AGENT_SCRIPT = join(__dirname, 'pod-agent.js');
const AGENT_START_TIMEOUT_MS = 20_000;
const AGENT_ANSWER_SLACK_MS = 30_000;

function startAgent(id: string, netnsPath: string, serve: boolean, ports: ServedPorts): Promise<Agent> {
  const args = [`--net=${netnsPath}`, process.execPath, AGENT_SCRIPT, '--name', id, ...(serve ? [] : ['--no-serve']),
    '--tcp', ports.tcp.join(','), '--udp', ports.udp.join(','), ...(ports.sctp.length > 0 ? ['--sctp', ports.sctp.join(',')] : [])];
  const child = spawn('nsenter', args, { stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
  const pending = new Map<number, (r: AgentResponse) => void>();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`pod agent ${id} did not start within ${AGENT_START_TIMEOUT_MS} ms: ${stderr}`));
    }, AGENT_START_TIMEOUT_MS);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`pod agent ${id} exited with ${code}: ${stderr}`));
    });
    createInterface({ input: child.stdout! }).on('line', (line) => {
      const msg = JSON.parse(line) as AgentResponse | { ready: string };
      if ('ready' in msg) {
        clearTimeout(timer);
        resolve({ id, child, pending, exited });
        return;
      }
      pending.get(msg.id)?.(msg);
      pending.delete(msg.id);
    });
  });
}

export interface ProbeOptions {
  /** Per probe; all probes run at once, so this also bounds a whole matrix. Default 1000 ms. */
  timeoutMs?: number;
}

export class Prober {
  private nextId = 1;

  private constructor(
    private readonly topology: Topology,
    private readonly agents: Map<string, Agent>,
    readonly slices: Slice[],
    private readonly nodeServes: boolean,
  ) {}

  /** Starts a serving agent in every pod and a probing-only one in the node; with `nodeServes`
   * the node's serves too (as host-network pods do), and the node is a target as well. */
  static async start(topology: Topology, ports: ServedPorts = DEFAULT_PORTS, opts: { nodeServes?: boolean } = {}): Promise<Prober> {
    const nodeServes = opts.nodeServes ?? false;
    const starting = [
      startAgent(NODE, topology.nodeNetnsPath, nodeServes, ports),
      ...topology.pods.map((p) => startAgent(p.id, p.netnsPath, true, ports)),
    ];
    const settled = await Promise.allSettled(starting);
    const agents = new Map<string, Agent>();
    for (const s of settled) if (s.status === 'fulfilled') agents.set(s.value.id, s.value);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    const prober = new Prober(topology, agents, slicesOf(ports), nodeServes);
    if (failed) {
      await prober.close();
      throw failed.reason;
    }
    return prober;
  }

  get sources(): string[] {
    return [NODE, ...this.topology.pods.map((p) => p.id)];
  }

  get targets(): string[] {
    return [...this.topology.pods.map((p) => p.id), ...(this.nodeServes ? [NODE] : [])];
  }

  /** The addresses of every target by id (the node's own when it serves). */
  private targetAddresses(): Map<string, { ipv4: string; ipv6: string }> {
    const byTarget = new Map<string, { ipv4: string; ipv6: string }>(this.topology.pods.map((p) => [p.id, p]));
    if (this.nodeServes) byTarget.set(NODE, { ipv4: this.topology.nodeIPv4, ipv6: this.topology.nodeIPv6 });
    return byTarget;
  }

  /** Probes every source to every pod on every slice, all at once. A cell is allowed when the
   * target itself answered (a reply naming another pod counts as blocked, and shows in the diff). */
  async probeAll(opts: ProbeOptions = {}): Promise<ProbeResult> {
    const result: ProbeResult = { matrix: new Matrix(this.sources, this.targets, false, this.slices), outcomes: new Map() };
    await this.probeInto(result, [...result.matrix.allCells()], opts);
    return result;
  }

  /** Probes just these cells again, all at once, updating result in place. */
  async probeInto(result: ProbeResult, cells: Cell[], opts: ProbeOptions = {}): Promise<void> {
    const timeoutMs = opts.timeoutMs ?? 1000;
    const byTarget = this.targetAddresses();
    await Promise.all(this.sources.map(async (from) => {
      const mine = cells.filter((c) => c.from === from);
      if (mine.length === 0) return;
      const probes: ProbeRequest[] = mine.map((c) => {
        const target = byTarget.get(c.to)!;
        return { key: cellKey(c), host: c.family === 4 ? target.ipv4 : target.ipv6, port: c.port, protocol: c.protocol, family: c.family, timeoutMs };
      });
      const response = await this.request(from, probes, timeoutMs);
      for (const c of mine) {
        const outcome = response.outcomes[cellKey(c)];
        result.outcomes.set(cellKey(c), outcome);
        result.matrix.set(c, outcome !== undefined && 'reply' in outcome && outcome.reply === c.to);
      }
    }));
  }

  /** One connection from a pod (or the node) to a pod: whether the target itself answered. */
  async probe(from: string, to: string, slice: Slice, timeoutMs = 1000): Promise<{ ok: boolean; outcome: ProbeOutcome | undefined }> {
    const target = this.targetAddresses().get(to);
    if (!target) throw new Error(`no target ${to} in the topology`);
    const cell: Cell = { from, to, ...slice };
    const key = cellKey(cell);
    const host = slice.family === 4 ? target.ipv4 : target.ipv6;
    const response = await this.request(from, [{ key, host, port: slice.port, protocol: slice.protocol, family: slice.family, timeoutMs }], timeoutMs);
    const outcome = response.outcomes[key];
    return { ok: outcome !== undefined && 'reply' in outcome && outcome.reply === to, outcome };
  }

  private request(from: string, probes: ProbeRequest[], timeoutMs: number): Promise<AgentResponse> {
    const agent = this.agents.get(from)!;
    const id = this.nextId++;
    const request: AgentRequest = { id, probes };
    return new Promise((resolve, reject) => {
      // Probes time out on their own; this only catches an agent that died or hung.
      const limitMs = timeoutMs + AGENT_ANSWER_SLACK_MS;
      const timer = setTimeout(() => {
        agent.pending.delete(id);
        reject(new Error(`pod agent ${from} did not answer within ${limitMs} ms`));
      }, limitMs);
      agent.pending.set(id, (r) => {
        clearTimeout(timer);
        resolve(r);
      });
      agent.child.stdin!.write(`${JSON.stringify(request)}\n`);
    });
  }

  /** Stops every agent: closing stdin asks them to exit; a straggler is killed. */
  async close(): Promise<void> {
    await Promise.all([...this.agents.values()].map(async (agent) => {
      agent.child.stdin!.end();
      const killer = setTimeout(() => agent.child.kill('SIGKILL'), 2000);
      await agent.exited;
      clearTimeout(killer);
    }));
    this.agents.clear();
  }
}
