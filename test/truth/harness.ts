/** Shared pieces of the kernel-truth tests: a cluster that drives an Agent directly and can be
 * written out as manifests for the CLI, the CLI run inside a sandbox, and snapshots of the state
 * nfkube must never change. */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { resolve } from 'node:path';
import pino, { Logger } from 'pino';
import { PolicyComponent } from '../../src/policy/component';
import { Agent } from '../../src/pipeline/agent';
import { Sandbox } from '../helpers/netns';
import { baseCluster, Cluster, namespace, NODE, pod, policy } from '../agent/fixtures';

export { baseCluster, Cluster, namespace, NODE, pod, policy };

export const silent = pino({ level: 'silent' });
const NFKUBE = resolve(__dirname, '../../../bin/nfkube');

type Raw = Record<string, any>;

export async function startAgent(sb: Sandbox, cluster: Cluster, logger: Logger = silent, socket = sb.socket): Promise<Agent> {
  const agent = new Agent({ socket, logger, components: [new PolicyComponent({ nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger })] });
  await agent.start(cluster.snapshot());
  cluster.agent = agent;
  return agent;
}

export interface CliResult {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs `nfkube <args>` inside the sandbox's network namespace. */
export function nfkube(sb: Sandbox, args: string[]): CliResult {
  const r = spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, NFKUBE, ...args], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  return { status: r.status ?? -1, stdout: r.stdout, stderr: r.stderr };
}

/** `nfkube verify` of the cluster's current manifests, in the sandbox. */
export function verify(sb: Sandbox, cluster: Cluster): CliResult {
  const dir = cluster.writeManifests();
  try {
    return nfkube(sb, ['verify', '--manifests', dir, '--node-name', NODE]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Everything in the namespace's ruleset except nfkube's own table, as `nft -j` prints it. */
export function foreignNft(sb: Sandbox, ownTable = 'nfkube'): string {
  const doc = JSON.parse(sb.run('nft', ['-j', 'list', 'ruleset'])) as { nftables: Raw[] };
  const foreign = doc.nftables.filter((entry) => {
    if ('metainfo' in entry) return false;
    const obj = Object.values(entry)[0] as Raw;
    const table = 'table' in entry ? obj.name : obj.table;
    return !(obj.family === 'inet' && table === ownTable);
  });
  return JSON.stringify(foreign, null, 1);
}

/** `*-save` output without its comment lines (they carry timestamps). */
export function saved(sb: Sandbox, tool: 'iptables-save' | 'ip6tables-save' | 'iptables-legacy-save' | 'ip6tables-legacy-save'): string {
  return sb.run(tool, [])
    .split('\n')
    .filter((l) => !l.startsWith('#'))
    .join('\n');
}

/** The state nfkube must leave byte-identical: foreign nft tables, iptables-nft and
 * iptables-legacy rules, ipsets. */
export function foreignState(sb: Sandbox): Record<string, string> {
  return {
    nft: foreignNft(sb),
    iptables: saved(sb, 'iptables-save'),
    ip6tables: saved(sb, 'ip6tables-save'),
    iptablesLegacy: saved(sb, 'iptables-legacy-save'),
    ip6tablesLegacy: saved(sb, 'ip6tables-legacy-save'),
    ipset: sb.run('ipset', ['save']),
  };
}
