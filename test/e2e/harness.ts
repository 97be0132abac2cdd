/** One topology, its probers and a manifests directory shared by a file's conformance cases:
 * each case writes its manifests, enforces (the agent run once in the node's namespace, or a
 * hand-written ruleset for the harness's own checks), probes the whole matrix, compares, and
 * removes the table again before the next case. */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { compareMatrices, DEFAULT_PORTS, Prober, type Cell, type Comparison, type Matrix, type ProbeResult, type ServedPorts } from '../helpers/prober';
import { conformancePods, createTopology, type PodPlacement, type Topology, type TopologyKind } from '../helpers/topology';
import { clusterObjects, writeManifests, type ClusterTweaks, type K8sObject } from './manifests';
import { Reachability } from './reachability';

export const REPO_ROOT = resolve(__dirname, '..', '..', '..');
export const NODE_NAME = 'nfk-node-1';
export const TABLE = 'nfkube';
const PROBE_TIMEOUT_MS = 1000;
const RETRY_TIMEOUT_MS = 4000;
const RETRIES = 2;

/** Why the agent can't be run yet, or undefined when it can. */
export function agentUnavailable(): string | undefined {
  const built = join(REPO_ROOT, 'dist', 'src', 'cli', 'commands', 'agent.js');
  return existsSync(built) ? undefined : `the agent command is not built yet (${built} missing)`;
}

export interface CaseRun {
  comparison: Comparison;
  result: ProbeResult;
  /** How many expected-allowed cells had to be probed again before they answered (or not). */
  reprobedCells: number;
}

export class Harness {
  private constructor(
    readonly topology: Topology,
    readonly prober: Prober,
    readonly manifestsDir: string,
  ) {}

  /** Builds the topology and starts the probers; tears down whatever was made if that fails. */
  static async open(kind: TopologyKind, placements: PodPlacement[] = conformancePods(), ports: ServedPorts = DEFAULT_PORTS, opts: { nodeServes?: boolean } = {}): Promise<Harness> {
    const topology = createTopology(kind, placements);
    let prober: Prober | undefined;
    try {
      prober = await Prober.start(topology, ports, opts);
      // A first round resolves every neighbour, so cases are not the ones paying for it.
      await prober.probeAll({ timeoutMs: PROBE_TIMEOUT_MS });
      return new Harness(topology, prober, mkdtempSync(join(tmpdir(), 'nfk-manifests-')));
    } catch (err) {
      await prober?.close();
      topology.close();
      throw err;
    }
  }

  get pods(): string[] {
    return this.topology.pods.map((p) => p.id);
  }

  reachability(): Reachability {
    return new Reachability(this.pods);
  }

  writeCase(policies: K8sObject[], tweaks?: ClusterTweaks): void {
    writeManifests(this.manifestsDir, clusterObjects(this.topology.pods, NODE_NAME, tweaks), policies);
  }

  /** `nfkube ARGS` inside the node's namespace; rejects with its stderr on a non-zero exit. */
  async nfkube(args: string[]): Promise<string> {
    return this.topology.runInNode(process.execPath, [join(REPO_ROOT, 'bin', 'nfkube'), ...args], { cwd: REPO_ROOT });
  }

  /** `nfkube agent --once` over the manifests directory. */
  async runAgent(extraArgs: string[] = []): Promise<string> {
    return this.nfkube(['agent', '--once', '--manifests', this.manifestsDir, '--node-name', NODE_NAME, '--table', TABLE, ...extraArgs]);
  }

  /** The node's tables as `family name`, by the nft oracle. */
  async tables(): Promise<string[]> {
    const listed = await this.topology.runInNode('nft', ['list', 'tables']);
    return listed.split('\n').map((l) => /^table (\S+ \S+)$/.exec(l.trim())?.[1]).filter((t): t is string => t !== undefined);
  }

  /** Applies a ruleset with the nft oracle inside the node's namespace. */
  async nft(ruleset: string): Promise<void> {
    await this.topology.runInNode('nft', ['-f', '-'], { input: ruleset });
  }

  /** Deletes every table in the node's namespace, so no case sees another's rules. */
  async resetTables(): Promise<void> {
    for (const table of await this.tables()) await this.topology.runInNode('nft', ['delete', 'table', ...table.split(' ')]);
  }

  /** Probes and compares. Cells expected allowed but found blocked are probed again, alone and
   * with a longer timeout, so a probe starved on a loaded machine is not reported as a policy
   * failure; a cell found open that should be blocked is never retried. */
  async probeAndCompare(expected: Reachability): Promise<CaseRun> {
    return this.probeAndCompareMatrix(expected.matrix());
  }

  /** probeAndCompare against a matrix built some other way (e.g. by a reference evaluator). */
  async probeAndCompareMatrix(want: Matrix): Promise<CaseRun> {
    const result = await this.prober.probeAll({ timeoutMs: PROBE_TIMEOUT_MS });
    let reprobedCells = 0;
    for (let attempt = 0; attempt < RETRIES; attempt++) {
      const starved = compareMatrices(want, result).mismatches.filter((c) => want.get(c));
      if (starved.length === 0) break;
      reprobedCells += starved.length;
      await this.prober.probeInto(result, starved, { timeoutMs: RETRY_TIMEOUT_MS });
    }
    return { comparison: compareMatrices(want, result), result, reprobedCells };
  }

  /** Probes these cells again into result, with the longer retry timeout. */
  async reprobe(result: ProbeResult, cells: Cell[]): Promise<void> {
    await this.prober.probeInto(result, cells, { timeoutMs: RETRY_TIMEOUT_MS });
  }

  /** Enforces, probes and compares; the node's tables are always removed after. */
  async runCase(expected: Reachability, enforce: () => Promise<unknown>): Promise<CaseRun> {
    try {
      await enforce();
      return await this.probeAndCompare(expected);
    } finally {
      await this.resetTables();
    }
  }

  async close(): Promise<void> {
    try {
      await this.prober.close();
    } finally {
      this.topology.close();
      rmSync(this.manifestsDir, { recursive: true, force: true });
    }
  }
}
