/** `nfkube demo` end to end: a sandbox of namespaces for the manifests' pods on one node, a
 * reachability matrix before any policy, a Service answering from its endpoints, the agent enforcing the NetworkPolicies in the node's
 * namespace, the ruleset read back from the kernel, the matrix again, and cleanup whatever
 * happens (an error, or an abort from SIGINT/SIGTERM between steps). */
import { Writable } from 'node:stream';
import pino, { type Logger } from 'pino';
import { PolicyComponent, policyTable } from '../policy/component';
import { Agent } from '../pipeline/agent';
import { ManifestSource } from '../k8s/manifest-source';
import type { PodInfo } from '../k8s/model';
import { NetlinkSocket } from '../netlink/socket';
import type { Netns } from '../netlink/netns';
import { formatTable } from '../nft/format';
import { listTable } from '../nft/readback';
import { compileFull } from '../policy/engine/compile';
import type { PolicyIR } from '../policy/engine/ir';
import { explainDenial } from './explain';
import { CELL, formatLegend, formatMatrix, Matrix } from './matrix';
import { NODE_V4, NODE_V6, Sandbox } from './sandbox';
import { showService } from './service';
import { Listeners, probe } from './traffic';
import { PolicyModes, type DenyAction } from '../policy/modes';
import { DropLogOptions } from '../policy/render/tail';
import { DropLogging, startDropLogging } from '../policy/droplog';
import { comboChainName, policyChainName } from '../policy/render/render';

/** The drop log the demo shows: nfnetlink_log group 100, as `--log-drops` defaults to. */
const DEMO_LOG: DropLogOptions = { group: 100, rate: 10, burst: 5 };

export interface DemoOptions {
  manifests: string;
  nodeName: string;
  table: string;
  denyAction: DenyAction;
  /** How long a connect may go unanswered before the path counts as blocked. */
  probeTimeoutMs: number;
  color: boolean;
  logger: Logger;
  /** Aborting stops the demo at the next step; cleanup still runs. */
  signal: AbortSignal;
  write(text: string): void;
}

export class DemoAborted extends Error {
  constructor() {
    super('demo interrupted');
    this.name = 'DemoAborted';
  }
}

/** A pod the demo can run: on this node, Running, with addresses, not on the host network. */
function runnable(pod: PodInfo, nodeName: string): boolean {
  return pod.nodeName === nodeName && pod.phase === 'Running' && pod.ips.length > 0 && !pod.hostNetwork;
}

async function measure(sandbox: Sandbox, listeners: Listeners, timeoutMs: number): Promise<Matrix> {
  const sources: { label: string; netns: Netns; key?: string; ips?: string[] }[] = [
    { label: `${sandbox.nodeName} (node)`, netns: sandbox.node },
    ...sandbox.pods.map((p) => ({ label: p.key, netns: p.netns, key: p.key, ips: p.pod.ips })),
  ];
  const columns = listeners.targets;
  const rows = await Promise.all(
    sources.map(async (s) => ({
      label: s.label,
      pod: s.key && s.ips ? { key: s.key, ips: s.ips } : undefined,
      // A pod reaching its own address never leaves its namespace: no policy applies.
      cells: await Promise.all(columns.map((t) => (t.pod.key === s.key ? undefined : probe(s.netns, t, timeoutMs)))),
    })),
  );
  return { columns, rows };
}

export async function runDemo(o: DemoOptions): Promise<void> {
  const step = () => {
    if (o.signal.aborted) throw new DemoAborted();
  };
  const source = new ManifestSource({
    dir: o.manifests,
    onChange: () => undefined,
    onError: (e) => o.logger.error({ object: e.object, field: e.field, file: e.file, document: e.document }, e.message),
  });
  const snapshot = await source.start();
  await source.stop();
  const pods = [...snapshot.pods.values()].filter((p) => runnable(p, o.nodeName));
  const skipped = [...snapshot.pods.values()].filter((p) => !runnable(p, o.nodeName)).map((p) => `${p.namespace}/${p.name}`);
  if (pods.length === 0) throw new Error(`${o.manifests}: no Running pod with podIPs on node ${o.nodeName} (--node-name)`);
  o.write(`nfkube demo: node ${o.nodeName}, ${pods.length} pods and ${snapshot.policies.size} NetworkPolicies from ${o.manifests}\n`);
  if (skipped.length) o.write(`  not on this node or not running, so not in the sandbox: ${skipped.join(', ')}\n`);

  let sandbox: Sandbox | undefined;
  let listeners: Listeners | undefined;
  let socket: NetlinkSocket | undefined;
  let agent: Agent | undefined;
  let drops: DropLogging | undefined;
  const dropLines: string[] = [];
  try {
    step();
    sandbox = await Sandbox.build(o.nodeName, pods);
    o.write('\nSandbox: network namespaces held by this process (the host namespace is not touched)\n');
    o.write(`  ${sandbox.nodeName.padEnd(16)} ${sandbox.node.id}  ${NODE_V4} ${NODE_V6} (lo)\n`);
    for (const p of sandbox.pods) o.write(`  ${p.key.padEnd(16)} ${p.netns.id}  ${p.pod.ips.join(' ')} (eth0, veth ${p.hostLink} on the node)\n`);
    listeners = await Listeners.start(sandbox.pods);

    step();
    o.write('\nReachability before any policy (TCP connect; rows: from, columns: to)\n');
    const open = await measure(sandbox, listeners, o.probeTimeoutMs);
    o.write(formatMatrix(open, o.color));
    o.write(`\n${formatLegend(open, { timeoutMs: o.probeTimeoutMs, nodeLabel: open.rows[0].label, changes: false })}`);

    step();
    await showService({ sandbox, probeTimeoutMs: o.probeTimeoutMs, logger: o.logger, step, write: (text) => o.write(text) });

    step();
    socket = NetlinkSocket.open({ netns: sandbox.node });
    const modes = new PolicyModes();
    const dropLogger = pino({ level: 'info', base: { component: 'nfkube' } }, new Writable({ write: (chunk, _enc, done) => (dropLines.push(String(chunk).trimEnd()), done()) }));
    drops = await startDropLogging({ log: DEMO_LOG, nodeName: o.nodeName, modes, denyAction: o.denyAction, logger: dropLogger, netns: sandbox.node });
    drops.load(snapshot);
    agent = new Agent({ socket, logger: o.logger, components: [new PolicyComponent({ nodeName: o.nodeName, table: o.table, denyAction: o.denyAction, log: DEMO_LOG, modes, logger: o.logger })] });
    const report = await agent.start(snapshot);
    o.write(`\nThe agent committed table inet ${o.table} in the node's namespace: ${report.messages} netlink messages, one transaction, ${report.durationMs.toFixed(1)} ms\n`);

    step();
    o.write('\nReachability with the NetworkPolicies enforced\n');
    const enforced = await measure(sandbox, listeners, o.probeTimeoutMs);
    o.write(formatMatrix(enforced, o.color, open));
    o.write(`\n${formatLegend(enforced, { timeoutMs: o.probeTimeoutMs, nodeLabel: enforced.rows[0].label, changes: true })}`);
    const ir = compileFull({ pods: snapshot.pods.values(), namespaces: snapshot.namespaces.values(), policies: snapshot.policies.values() }, o.nodeName);
    o.write(formatDenials(enforced, ir));

    step();
    await showDropLog(o, sandbox, enforced, dropLines);

    step();
    const own = policyTable(o.table);
    const table = await listTable(socket, own.family, own.name);
    if (!table) throw new Error(`table inet ${o.table} is missing from the node's namespace after the agent committed it`);
    o.write('\nThe enforced ruleset, read back from the kernel (counters include the probes above)\n');
    o.write(annotateChains(formatTable(table), ir));
  } finally {
    await drops?.close();
    await agent?.stop();
    await socket?.close();
    await listeners?.close();
    sandbox?.close();
    if (sandbox) o.write(`\nCleaned up: closed ${sandbox.pods.length + 1} network namespaces; the kernel removes them with their veths.\n`);
  }
}

/** For each cell that is not connected: the side that isolates the connection and the
 * NetworkPolicies that select it, none of which allows it. */
function formatDenials(m: Matrix, ir: PolicyIR): string {
  const lines: string[] = [];
  m.rows.forEach((r) => {
    r.cells.forEach((cell, ci) => {
      if (cell === undefined || cell === 'allowed') return;
      const t = m.columns[ci];
      const sourceAddr = r.pod?.ips.find((ip) => ip.includes(':') === (t.family === 'v6'));
      const path = `${r.label} -> ${t.pod.key}:${t.port} ${t.family} (${cell === 'blocked' ? CELL.blocked : cell})`;
      const reasons = sourceAddr === undefined ? [] : explainDenial(ir, { source: r.pod?.key, sourceAddr, target: t.pod.key, targetAddr: t.address, port: t.port });
      if (reasons.length === 0) {
        lines.push(`  ${path}: no policy denies it (not caused by nfkube)`);
        return;
      }
      const why = reasons.map((d) => `${d.direction} of ${d.pod} is isolated by ${d.policies.join(', ')}, ${d.policies.length > 1 ? 'none of them allows' : 'it does not allow'} this`);
      lines.push(`  ${path}: ${why.join('; ')}`);
    });
  });
  return lines.length ? `\nWhy each path is closed (the deciding policies):\n${lines.join('\n')}\n` : '';
}

/** Chain names are hashes (pol_<id>_in, combo_<id>_out): a comment after each chain's opening
 * line says which NetworkPolicy it belongs to, or which pods share a combination chain. */
function annotateChains(text: string, ir: PolicyIR): string {
  const owners = new Map<string, string>();
  for (const p of ir.policies.values()) for (const dir of ['ingress', 'egress'] as const) owners.set(policyChainName(p.id, dir), `NetworkPolicy ${p.namespace}/${p.name}`);
  const pods = new Map<string, string[]>();
  for (const t of [...ir.targets.values()].sort((x, y) => (x.key < y.key ? -1 : 1))) {
    for (const dir of ['ingress', 'egress'] as const) {
      const policies = t[dir];
      if (!policies) continue;
      const name = comboChainName(policies, dir);
      const keys = pods.get(name);
      if (keys) keys.push(t.key);
      else pods.set(name, [t.key]);
    }
  }
  for (const [name, keys] of pods) owners.set(name, `pod${keys.length > 1 ? 's' : ''} ${keys.join(', ')}`);
  return text.replace(/^(\s*chain ((?:pol|combo)_\w+?_(in|out)) \{)$/gm, (line, _open, name: string, dir: string) => {
    const owner = owners.get(name);
    return owner ? `${line} # ${owner}, ${dir === 'in' ? 'ingress' : 'egress'}` : line;
  });
}

/** Probes the first denied pod-to-pod cell once more and prints the drop log lines it caused,
 * as the agent writes them with --log-drops. */
async function showDropLog(o: DemoOptions, sandbox: Sandbox, m: Matrix, lines: string[]): Promise<void> {
  // Row 0 is the node: its own traffic is never policed.
  for (let r = 1; r < m.rows.length; r++) {
    const c = m.rows[r].cells.findIndex((cell) => cell !== undefined && cell !== 'allowed');
    if (c < 0) continue;
    const target = m.columns[c];
    const what = `${m.rows[r].label} -> ${target.pod.key}:${target.port} (${target.family === 'v4' ? 'IPv4' : 'IPv6'})`;
    lines.length = 0;
    await probe(sandbox.pods[r - 1].netns, target, o.probeTimeoutMs);
    await new Promise((resolve) => setTimeout(resolve, 300));
    o.write(`\nThe drop log of one denied probe, ${what}: one JSON line per logged packet (nfnetlink_log group ${DEMO_LOG.group}, at most ${DEMO_LOG.rate}/s per combination chain)\n`);
    // Retransmissions of the matrix's own probes may still be arriving: only this probe's lines.
    const mine = lines.filter((line) => {
      const d = (JSON.parse(line) as { drop?: { src: string; dstAddr: string; dport?: number } }).drop;
      return d?.src === m.rows[r].label && d.dstAddr === target.address && d.dport === target.port;
    });
    for (const line of mine) o.write(`  ${line}\n`);
    if (mine.length === 0) o.write('  (nothing logged)\n');
    return;
  }
  o.write('\nNo pod-to-pod probe was denied, so there is no drop log to show.\n');
}
