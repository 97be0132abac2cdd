/** `nfkube verify`: read nfkube's tables back (policy, and the proxy's with --proxy) and compare
 * them, canonically, with what the cluster state says they must be. Exit 0 only when they are
 * equal. The agent's planner decides. */
import { Renderer } from '../../agent/render';
import { createLogger } from '../../log';
import { NetlinkSocket } from '../../netlink/socket';
import { listMarkedTable } from '../../nft/ownership';
import { tableText } from '../../pipeline/component';
import { plan } from '../../pipeline/plan';
import { compileFull } from '../../policy/compile';
import type { PolicyIR } from '../../policy/ir';
import { formatDiff, isEmptyDiff } from '../../ruleset/diff';
import { emptyModel, modelFromKernel, RulesetModel, tableFlagsProblem } from '../../ruleset/model';
import { Command } from '../command';
import { denyAction, nodeName, OptionTable, parse, tableName, usageText } from '../options';
import { readSnapshot, SOURCE_OPTIONS } from '../source';
import { dropLogOptions, policyModes } from '../deny-options';
import { PROXY_CLI_OPTIONS, proxyChoice, proxyComponent } from '../proxy-options';
import { formatPolicyCounters, policyCounters, readCounterRows } from '../../explain/counters';

const options = {
  ...SOURCE_OPTIONS,
  ...PROXY_CLI_OPTIONS,
  'no-policy': { type: 'boolean', description: 'with --proxy: verify the proxy table alone' },
  counters: { type: 'boolean', description: "also print the kernel's per-policy counters, sorted by drops" },
} as const satisfies OptionTable;
const usage = usageText('nfkube verify [--manifests DIR | --kubeconfig PATH] [options]', options, 'Reads the tables back and compares them canonically with the desired state: exit 0 only when equal.');

const command: Command = {
  summary: 'compare the kernel with the desired ruleset; print the difference (exit 1 if any)',
  usage,
  options,
  async run(args, ctx) {
    const v = parse(args, options, usage);
    const choice = proxyChoice(v);
    const node = nodeName(v['node-name']);
    // Which node's view is compared, as a log line on stderr: stdout stays the difference alone.
    createLogger((v['log-level'] as string | undefined) ?? 'info').info({ node, table: `inet ${tableName(v.table)}` }, `verifying node ${node}`);
    const snap = await readSnapshot(v, ctx, choice.kinds);
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    let differ = 0;
    if (choice.policy) {
      const ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, node);
      const desired = new Renderer({ table: tableName(v.table), denyAction: denyAction(v['deny-action']), log: dropLogOptions(v), modes: policyModes(v, snap.namespaces.values()) }).full(ir, undefined, undefined, snap.pods.values());
      differ += await verifyTable(socket, desired, v.counters ? ir : undefined);
    }
    if (choice.proxy) {
      const proxy = proxyComponent(choice.proxy, node);
      proxy.start(snap);
      differ += await verifyTable(socket, proxy.desired);
    }
    return differ > 0 ? 1 : 0;
  },
};

/** Prints how the kernel's copy of one table differs from `desired` (and, given the policy IR,
 * its per-policy counters); 1 when it differs. */
async function verifyTable(socket: NetlinkSocket, desired: RulesetModel, countersFor?: PolicyIR): Promise<number> {
  const table = desired.table;
  const back = await listMarkedTable(socket, table.family, table.name);
  const kernel = back ? modelFromKernel(back) : undefined;
  const flags = back ? tableFlagsProblem(back.table) : undefined;
  const p = plan(kernel, flags, desired, false);
  if (countersFor && back) process.stdout.write(formatPolicyCounters(policyCounters(await readCounterRows(socket, table.name, countersFor), countersFor)));
  if (!back) process.stdout.write(`table ${tableText(table)} does not exist\n`);
  if (flags) process.stdout.write(`${flags}\n`);
  if (p.action === 'noop') {
    process.stdout.write(`table ${tableText(table)} matches the desired state (${desired.chains.size} chains, ${desired.sets.size} sets)\n`);
    return 0;
  }
  if (!isEmptyDiff(p.diff)) process.stdout.write(`${formatDiff(kernel ?? emptyModel(table), desired, p.diff)}\n`);
  return 1;
}

export default command;
