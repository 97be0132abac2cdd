/** Shared pieces of the kernel-truth tests: a cluster that drives an Agent directly and can be
 * written out as manifests for the CLI, the CLI run inside a sandbox, and snapshots of the state
 * nfkube must never change. */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Writable } from 'node:stream';
import pino, { Logger } from 'pino';
import { Agent } from '../../src/agent/agent';
import { normalizeNamespace, normalizeNetworkPolicy, normalizePod } from '../../src/k8s/normalize';
import { ClusterChange, ClusterSnapshot } from '../../src/k8s/source';
import { Sandbox } from '../helpers/netns';
import { namespace, NODE, pod, policy } from '../agent/fixtures';

export { namespace, NODE, pod, policy };

export const silent = pino({ level: 'silent' });
const NFKUBE = resolve(__dirname, '../../../bin/nfkube');

type Raw = Record<string, any>;
type Kind = 'Pod' | 'NetworkPolicy' | 'Namespace';

/** A cluster held both as raw API objects (for manifests) and normalized (for an Agent). */
export class Cluster {
  readonly raw = new Map<string, Raw>();
  private readonly normalized = { Pod: new Map<string, any>(), Namespace: new Map<string, any>(), NetworkPolicy: new Map<string, any>() };
  agent?: Agent;

  apply(obj: Raw): void {
    const kind = obj.kind as Kind;
    const key = obj.metadata.namespace ? `${obj.metadata.namespace}/${obj.metadata.name}` : obj.metadata.name;
    const object = kind === 'Pod' ? normalizePod(obj) : kind === 'Namespace' ? normalizeNamespace(obj) : normalizeNetworkPolicy(obj);
    this.raw.set(`${kind} ${key}`, obj);
    this.normalized[kind].set(key, object);
    this.agent?.onChange({ kind, type: 'upsert', key, object } as ClusterChange);
  }

  remove(kind: Kind, key: string): void {
    const object = this.normalized[kind].get(key);
    this.raw.delete(`${kind} ${key}`);
    this.normalized[kind].delete(key);
    this.agent?.onChange({ kind, type: 'delete', key, object } as ClusterChange);
  }

  snapshot(): ClusterSnapshot {
    return { pods: new Map(this.normalized.Pod), namespaces: new Map(this.normalized.Namespace), policies: new Map(this.normalized.NetworkPolicy) };
  }

  /** Writes the cluster as one `kind: List` manifest into a fresh directory; returns it. */
  writeManifests(): string {
    const dir = mkdtempSync(join(tmpdir(), 'nfkube-truth-'));
    writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: [...this.raw.values()] }));
    return dir;
  }
}

/** Two namespaces, three local pods (one dual-stack, one with a named port), an ingress policy
 * using the named port and a default-deny egress policy. */
export function baseCluster(): Cluster {
  const c = new Cluster();
  for (const ns of ['x', 'y']) c.apply(namespace(ns));
  c.apply(pod('x', 'a', '198.18.0.2', { app: 'web' }, { ports: [{ name: 'http', containerPort: 80 }], ip6: '2001:db8::2' }));
  c.apply(pod('x', 'b', '198.18.0.3', { app: 'client' }));
  c.apply(pod('y', 'c', '198.18.0.4', { app: 'client' }));
  c.apply(policy('x', 'web', { podSelector: { matchLabels: { app: 'web' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'client' } } }], ports: [{ port: 'http' }] }] }));
  c.apply(policy('y', 'deny-egress', { podSelector: {}, policyTypes: ['Egress'] }));
  return c;
}

export async function startAgent(sb: Sandbox, cluster: Cluster, logger: Logger = silent, socket = sb.socket): Promise<Agent> {
  const agent = new Agent({ socket, nodeName: NODE, table: 'nfkube', denyAction: 'drop', logger });
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

/** A pino logger whose lines are collected as parsed objects. */
export function recordingLogger(): { logger: Logger; lines: Raw[] } {
  const lines: Raw[] = [];
  const sink = new Writable({
    write(chunk, _enc, done) {
      for (const l of String(chunk).split('\n')) if (l.trim()) lines.push(JSON.parse(l));
      done();
    },
  });
  return { logger: pino({ level: 'debug' }, sink), lines };
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
