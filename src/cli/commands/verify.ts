/** `nfkube verify`: read nfkube's tables back (policy, and the proxy's with --proxy) and compare
 * them, canonically, with what the cluster state says they must be. Exit 0 only when they are
 * equal. The agent's planner decides. */
import { NetlinkSocket } from '../../netlink/socket';
import { tableText } from '../../pipeline/component';
import { compareTable, desiredTables } from '../../node/desired';
import type { ClusterTiers } from '../../policy/cluster/tiers';
import type { PolicyIR } from '../../policy/engine/ir';
import { formatDiff, isEmptyDiff } from '../../ruleset/diff';
import { emptyModel, RulesetModel } from '../../ruleset/model';
import { Command } from '../command';
import { OptionTable, parse, SOURCE_OPTIONS, tableName, usageText } from '../options';
import { PROXY_CLI_OPTIONS } from '../../proxy/options';
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
