/** `nfkube demo` end to end: a sandbox of namespaces for the manifests' pods on one node, a
 * reachability matrix before any policy, the agent enforcing the NetworkPolicies in the node's
 * namespace, the ruleset read back from the kernel, the matrix again, and cleanup whatever
 * happens (an error, or an abort from SIGINT/SIGTERM between steps). */
import type { Logger } from 'pino';
import { PolicyComponent } from '../agent/policy-component';
import { Agent } from '../pipeline/agent';
import { ManifestSource } from '../k8s/manifest-source';
import type { PodInfo } from '../k8s/model';
import { NetlinkSocket } from '../netlink/socket';
import type { Netns } from '../netlink/netns';
import { formatTable } from '../nft/format';
import { listTable } from '../nft/readback';
import { formatMatrix, Matrix } from './matrix';
import { netnsId, NODE_V4, NODE_V6, Sandbox } from './sandbox';
import { Listeners, probe } from './traffic';

export interface DemoOptions {
  manifests: string;
  nodeName: string;
  table: string;
  denyAction: 'drop' | 'reject';
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
  const sources: { label: string; netns: Netns; key?: string }[] = [
    { label: `${sandbox.nodeName} (node)`, netns: sandbox.node },
    ...sandbox.pods.map((p) => ({ label: p.key, netns: p.netns, key: p.key })),
  ];
  const columns = listeners.targets;
  const rows = await Promise.all(
    sources.map(async (s) => ({
      label: s.label,
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
  try {
    step();
    sandbox = await Sandbox.build(o.nodeName, pods);
    o.write('\nSandbox: network namespaces held by this process (the host namespace is not touched)\n');
    o.write(`  ${sandbox.nodeName.padEnd(16)} ${netnsId(sandbox.node)}  ${NODE_V4} ${NODE_V6} (lo)\n`);
    for (const p of sandbox.pods) o.write(`  ${p.key.padEnd(16)} ${netnsId(p.netns)}  ${p.pod.ips.join(' ')} (eth0, veth ${p.hostLink} on the node)\n`);
    listeners = await Listeners.start(sandbox.pods);

    step();
    o.write('\nReachability before any policy (TCP connect; rows: from, columns: to)\n');
    o.write(formatMatrix(await measure(sandbox, listeners, o.probeTimeoutMs), o.color));

    step();
    socket = NetlinkSocket.open({ netns: sandbox.node });
    agent = new Agent({ socket, logger: o.logger, components: [new PolicyComponent({ nodeName: o.nodeName, table: o.table, denyAction: o.denyAction, logger: o.logger })] });
    const report = await agent.start(snapshot);
    o.write(`\nThe agent committed table inet ${o.table} in the node's namespace: ${report.messages} netlink messages, one transaction, ${report.durationMs.toFixed(1)} ms\n`);

    step();
    o.write('\nReachability with the NetworkPolicies enforced\n');
    o.write(formatMatrix(await measure(sandbox, listeners, o.probeTimeoutMs), o.color));

    step();
    const table = await listTable(socket, 'inet', o.table);
    if (!table) throw new Error(`table inet ${o.table} is missing from the node's namespace after the agent committed it`);
    o.write('\nThe enforced ruleset, read back from the kernel (counters include the probes above)\n');
    o.write(formatTable(table));
  } finally {
    await agent?.stop();
    await socket?.close();
    await listeners?.close();
    sandbox?.close();
    if (sandbox) o.write(`\nCleaned up: closed ${sandbox.pods.length + 1} network namespaces; the kernel removes them with their veths.\n`);
  }
}
