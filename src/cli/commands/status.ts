/** `nfkube status`: this node's nfkube at a glance: its tables (held, and by which process; the
 * options recorded; sizes), the local agent's health and last sync, drift (the tables read back
 * and compared with the cluster state, when one can be read), and IPAM's blocks when it runs. */
import { findKubeconfig } from '../../k8s/kubeconfig-path';
import { NetlinkSocket } from '../../netlink/socket';
import * as C from '../../nft/constants';
import { isNfkubeTable } from '../../nft/ownership';
import { listTable, listTables } from '../../nft/readback';
import { DEFAULT_IPAM_METRICS_ADDR } from '../../ipam/start';
import { DEFAULT_METRICS_ADDR, localClientAddress, parseListenAddress } from '../../observe/server';
import { DEFAULT_PROXY_TABLE } from '../../proxy/render';
import { Command } from '../command';
import { COMMON_OPTIONS, OptionTable, OUTPUT_OPTION, outputFormat, parse, tableName, usageText } from '../options';
import { withTableRecords } from '../table-record';
import { PROXY_CLI_OPTIONS } from '../../proxy/options';
import { findHolder, TableHolder } from '../table-holder';
import { compareTable, desiredTables } from '../../node/desired';

const { manifests, kubeconfig, 'node-name': node, table } = COMMON_OPTIONS;
const options = {
  table,
  'proxy-table': PROXY_CLI_OPTIONS['proxy-table'],
  'metrics-addr': { type: 'string', value: 'ADDR', description: "the local agent's --metrics-addr (health, readiness, last sync)", default: DEFAULT_METRICS_ADDR },
  'ipam-metrics-addr': { type: 'string', value: 'ADDR', description: "the local agent's --ipam-metrics-addr (IPAM's blocks; skipped when nothing answers)", default: DEFAULT_IPAM_METRICS_ADDR },
  manifests: { ...manifests, description: 'read the cluster state from this directory to check for drift' },
  kubeconfig: { ...kubeconfig, description: 'the cluster to read to check for drift', default: '$KUBECONFIG, ~/.kube/config or in-cluster; no drift check without one' },
  'node-name': node,
  output: OUTPUT_OPTION,
} as const satisfies OptionTable;
const usage = usageText('nfkube status [-o json] [options]', options, "This node's nfkube: tables, the local agent's health and last sync, drift, IPAM blocks.\nExit 1 when the agent is not healthy or not ready, or a table drifted.");

export interface TableStatus {
  table: string;
  exists: boolean;
  /** Carries nfkube's mark. */
  nfkube?: boolean;
  held?: boolean;
  holder?: TableHolder;
  recordedOptions?: string;
  chains?: number;
  rules?: number;
  sets?: number;
  elements?: number;
}

export interface NodeStatus {
  tables: TableStatus[];
  agent: { address: string; reachable: boolean; healthy?: boolean; health?: string; ready?: boolean; lastSync?: string; lastSyncAgeSeconds?: number; pods?: number; policies?: number; error?: string };
  drift: { checked: boolean; reason?: string; tables?: { table: string; drift: boolean }[] };
  ipam?: { address: string; blocks: { pool: string; family: string; blocks: number; inUse: number }[] };
}

async function tableStatus(socket: NetlinkSocket, name: string): Promise<TableStatus> {
  const t = (await listTables(socket, 'inet')).find((x) => x.name === name);
  if (!t) return { table: `inet ${name}`, exists: false };
  const s: TableStatus = { table: `inet ${name}`, exists: true, nfkube: isNfkubeTable(t), held: ((t.flags ?? 0) & C.NFT_TABLE_F_OWNER) !== 0 };
  if (s.held && t.owner !== undefined) s.holder = findHolder(t.owner);
  if (t.options !== undefined) s.recordedOptions = t.options;
  const c = await listTable(socket, 'inet', name);
  if (c) Object.assign(s, { chains: c.chains.length, rules: c.rules.length, sets: c.sets.length, elements: [...c.elements.values()].reduce((n, e) => n + e.length, 0) });
  return s;
}

/** The value of each unlabelled sample of a Prometheus text exposition, and the labelled ones. */
export function metricSamples(text: string): { name: string; labels: Record<string, string>; value: number }[] {
  const out = [];
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{([^}]*)\})? (\S+)$/.exec(line);
    if (!m) continue;
    const labels = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    out.push({ name: m[1], labels, value: Number(m[3]) });
  }
  return out;
}

async function get(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(5000) });
  return { status: res.status, body: (await res.text()).trim() };
}

async function agentStatus(address: string, now: number): Promise<NodeStatus['agent']> {
  try {
    const [health, ready, metrics] = await Promise.all([get(`http://${address}/healthz`), get(`http://${address}/readyz`), get(`http://${address}/metrics`)]);
    const samples = metricSamples(metrics.body);
    const value = (name: string) => samples.find((s) => s.name === name)?.value;
    const last = value('nfkube_last_successful_sync_timestamp_seconds');
    return {
      address,
      reachable: true,
      healthy: health.status === 200,
      health: health.body,
      ready: ready.status === 200,
      ...(last ? { lastSync: new Date(last * 1000).toISOString(), lastSyncAgeSeconds: Math.round(now / 1000 - last) } : {}),
      pods: value('nfkube_pods'),
      policies: value('nfkube_policies'),
    };
  } catch (err) {
    return { address, reachable: false, error: (err as { cause?: Error }).cause?.message ?? (err as Error).message };
  }
}

/** IPAM's blocks from the first address whose metrics have them: its own --ipam-metrics-addr, or
 * the agent's when IPAM runs alone (--ipam --no-policy serves them on --metrics-addr). */
async function ipamStatus(addresses: string[]): Promise<NodeStatus['ipam']> {
  for (const address of addresses) {
    const found = await ipamBlocks(address);
    if (found) return found;
  }
  return undefined;
}

async function ipamBlocks(address: string): Promise<NodeStatus['ipam']> {
  try {
    const samples = metricSamples((await get(`http://${address}/metrics`)).body);
    if (!samples.some((s) => s.name.startsWith('nfkube_ipam_'))) return undefined;
    const inUse = (pool: string, family: string) => samples.find((s) => s.name === 'nfkube_ipam_addresses_in_use' && s.labels.pool === pool && s.labels.family === family)?.value ?? 0;
    return { address, blocks: samples.filter((s) => s.name === 'nfkube_ipam_blocks_owned').map((s) => ({ pool: s.labels.pool, family: s.labels.family, blocks: s.value, inUse: inUse(s.labels.pool, s.labels.family) })) };
  } catch {
    // IPAM is off (or elsewhere): nothing to show.
    return undefined;
  }
}

function formatStatus(s: NodeStatus): string {
  const lines: string[] = [];
  for (const t of s.tables) {
    if (!t.exists) {
      lines.push(`table ${t.table}: absent`);
      continue;
    }
    const holder = t.held ? `held by ${t.holder?.pid !== undefined ? `pid ${t.holder.pid}${t.holder.command ? ` (${t.holder.command})` : ''}` : `netlink port ${t.holder?.port ?? '?'}`}` : 'not held (no agent running)';
    lines.push(`table ${t.table}: ${t.nfkube ? '' : "NOT nfkube's, "}${holder}; ${t.chains} chains, ${t.rules} rules, ${t.sets} sets, ${t.elements} elements`);
    if (t.recordedOptions !== undefined) lines.push(`  options: ${t.recordedOptions || '(defaults)'}`);
  }
  const a = s.agent;
  if (!a.reachable) lines.push(`agent at ${a.address}: not reachable (${a.error})`);
  else {
    lines.push(`agent at ${a.address}: ${a.healthy ? 'healthy' : 'NOT HEALTHY'}, ${a.ready ? 'ready' : 'not ready'} (${a.health})`);
    if (a.lastSync) lines.push(`  last sync: ${a.lastSync} (${a.lastSyncAgeSeconds}s ago)`);
    if (a.pods !== undefined) lines.push(`  pods: ${a.pods}, policies: ${a.policies}`);
  }
  if (!s.drift.checked) lines.push(`drift: not checked (${s.drift.reason})`);
  else for (const d of s.drift.tables ?? []) lines.push(`drift: table ${d.table} ${d.drift ? 'DIFFERS from the desired state (run nfkube verify)' : 'matches the desired state'}`);
  if (s.ipam) for (const b of s.ipam.blocks) lines.push(`ipam: pool ${b.pool} ${b.family}: ${b.blocks} blocks, ${b.inUse} addresses in use`);
  return `${lines.join('\n')}\n`;
}

const command: Command = {
  summary: "this node's nfkube: tables and their holder, the agent's health and last sync, drift, IPAM blocks (-o json)",
  usage,
  options,
  async run(args, ctx) {
    const given = parse(args, options, usage);
    const format = outputFormat(given.output);
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    const names = [tableName(given.table), tableName(given['proxy-table'] ?? DEFAULT_PROXY_TABLE)];
    const agentAddress = localClientAddress(parseListenAddress(given['metrics-addr'] ?? DEFAULT_METRICS_ADDR));
    // The agent first: a ready agent has committed its tables, so the tables read next exist.
    const agent = await agentStatus(agentAddress, Date.now());
    const tables = [await tableStatus(socket, names[0]), await tableStatus(socket, names[1])];
    const status: NodeStatus = {
      tables,
      agent,
      drift: { checked: false },
      ipam: await ipamStatus([localClientAddress(parseListenAddress(given['ipam-metrics-addr'] ?? DEFAULT_IPAM_METRICS_ADDR, '--ipam-metrics-addr')), agentAddress]),
    };
    let source: string | undefined;
    try {
      if (!given.manifests) findKubeconfig(given.kubeconfig);
    } catch (err) {
      source = (err as Error).message;
    }
    const present = tables.filter((t) => t.exists && t.nfkube);
    if (source !== undefined) status.drift.reason = source;
    else if (present.length === 0) status.drift.reason = 'no nfkube table';
    else {
      // The options each table records, and the tables there are, say what to compare.
      const v = await withTableRecords(socket, 'status', { ...given, 'log-level': 'warn', ...(tables[1].exists && tables[1].nfkube ? { proxy: true } : {}), ...(tables[0].exists ? {} : { 'no-policy': true }) });
      const { models } = await desiredTables(v, ctx);
      status.drift = { checked: true, tables: [] };
      for (const m of models) status.drift.tables!.push({ table: `${m.table.family} ${m.table.name}`, drift: (await compareTable(socket, m)).plan.action !== 'noop' });
    }
    process.stdout.write(format === 'json' ? `${JSON.stringify(status, null, 2)}\n` : formatStatus(status));
    const drifted = status.drift.tables?.some((d) => d.drift) ?? false;
    return status.agent.healthy && status.agent.ready && !drifted ? 0 : 1;
  },
};

export default command;
