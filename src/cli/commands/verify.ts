/** `nfkube verify`: read nfkube's tables back (policy, and the proxy's with --proxy) and compare
 * them, canonically, with what the cluster state says they must be. Exit 0 only when they are
 * equal. The agent's planner decides. */
import { Renderer } from '../../policy/render/render';
import { adoptBindings } from '../../policy/render/source-check';
import { createLogger } from '../../log';
import { NetlinkSocket } from '../../netlink/socket';
import { listMarkedTable } from '../../nft/ownership';
import { tableText } from '../../pipeline/component';
import { plan, Plan } from '../../pipeline/plan';
import type { TableContents } from '../../nft/types';
import type { OptionValues } from '../config';
import { compileFull } from '../../policy/engine/compile';
import { ClusterTiers, fullPolicyTable } from '../../policy/cluster/tiers';
import type { PolicyIR } from '../../policy/engine/ir';
import { formatDiff, isEmptyDiff } from '../../ruleset/diff';
import { emptyModel, modelFromKernel, RulesetModel, tableFlagsProblem } from '../../ruleset/model';
import { Command, RunContext } from '../command';
import { denyAction, nodeName, OptionTable, parse, tableName, usageText } from '../options';
import { readSnapshot, SOURCE_OPTIONS } from '../source';
import { dropLogOptions, policyModes } from '../deny-options';
import { PROXY_CLI_OPTIONS, proxyChoice, proxyComponent } from '../proxy-options';
import { withTableRecords } from '../table-record';
import { formatPolicyCounters, policyCounters, readCounterRows } from '../../explain/counters';
import { clusterRuleCounters, formatClusterRuleCounters } from '../../explain/cluster-counters';

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
    const socket = NetlinkSocket.open();
    ctx.defer(() => socket.close());
    const v = await withTableRecords(socket, 'verify', parse(args, options, usage));
    const { models, ir, tiers } = await desiredTables(v, ctx);
    let differ = 0;
    for (const desired of models) differ += await verifyTable(socket, desired, v.counters && desired.table.name === tableName(v.table) ? ir : undefined, tiers);
    return differ > 0 ? 1 : 0;
  },
};

/** The tables the options ask for (policy, and the proxy's with --proxy), as the cluster state
 * says they must be; `ir`, the policy's compiled model, when policy is on. */
export async function desiredTables(v: OptionValues, ctx: RunContext): Promise<{ models: RulesetModel[]; ir?: PolicyIR; tiers?: ClusterTiers }> {
  const choice = proxyChoice(v);
  const node = nodeName(v['node-name']);
  // Which node's view is compared, as a log line on stderr: stdout stays the difference alone.
  createLogger((v['log-level'] as string | undefined) ?? 'info').info({ node, table: `inet ${tableName(v.table)}` }, `verifying node ${node}`);
  const snap = await readSnapshot(v, ctx, choice.kinds);
  const models: RulesetModel[] = [];
  let ir: PolicyIR | undefined;
  let tiers: ClusterTiers | undefined;
  if (choice.policy) {
    ir = compileFull({ pods: snap.pods.values(), namespaces: snap.namespaces.values(), policies: snap.policies.values() }, node);
    const renderer = new Renderer({ table: tableName(v.table), denyAction: denyAction(v['deny-action']), log: dropLogOptions(v), modes: policyModes(v, snap.namespaces.values()) });
    const policyTable = fullPolicyTable(renderer, ir, snap, createLogger('silent'));
    models.push(policyTable.model);
    tiers = policyTable.tiers;
  }
  if (choice.proxy) {
    const proxy = proxyComponent(choice.proxy, node);
    proxy.start(snap);
    models.push(proxy.desired);
  }
  return { models, ir, tiers };
}

/** The kernel's copy of `desired`'s table, and what it would take to reach `desired` (which takes
 * the kernel's MAC bindings of local pods' addresses: see adoptBindings). */
export async function compareTable(socket: NetlinkSocket, desired: RulesetModel): Promise<{ back: TableContents | undefined; kernel: RulesetModel | undefined; flags: string | undefined; plan: Plan }> {
  const table = desired.table;
  const back = await listMarkedTable(socket, table.family, table.name);
  const kernel = back ? modelFromKernel(back) : undefined;
  const flags = back ? tableFlagsProblem(back.table) : undefined;
  if (kernel) adoptBindings(desired, kernel);
  return { back, kernel, flags, plan: plan(kernel, flags, desired, false) };
}

/** Prints how the kernel's copy of one table differs from `desired` (and, given the policy IR,
 * its per-policy counters); 1 when it differs. */
async function verifyTable(socket: NetlinkSocket, desired: RulesetModel, countersFor?: PolicyIR, tiers?: ClusterTiers): Promise<number> {
  const table = desired.table;
  const { back, kernel, flags, plan: p } = await compareTable(socket, desired);
  if (countersFor && back) process.stdout.write(formatPolicyCounters(policyCounters(await readCounterRows(socket, table.name, countersFor), countersFor)));
  const clusterPolicies = tiers ? [...tiers.engine.state().policies.values()] : [];
  if (countersFor && back && clusterPolicies.length > 0) process.stdout.write(formatClusterRuleCounters(clusterRuleCounters(back.rules, clusterPolicies)));
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
