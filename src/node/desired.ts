/** The desired state of the enabled features' tables for a snapshot, built by the same component
 * start(snapshot) the agent runs: what render prints, and what verify, status and explain compare
 * with the kernel. */
import type { ClusterSnapshot } from '../k8s/source';
import { createLogger } from '../log';
import type { NetlinkSocket } from '../netlink/socket';
import { listMarkedTable } from '../nft/ownership';
import type { TableContents } from '../nft/types';
import type { OptionValues } from '../options/table';
import { nodeName as nodeNameOf, stringOption, tableName } from '../options/values';
import type { Component } from '../pipeline/component';
import type { EnabledFeature, InputReport } from '../pipeline/feature';
import { plan, Plan } from '../pipeline/plan';
import { PolicyComponent } from '../policy/component';
import type { ClusterTiers } from '../policy/cluster/tiers';
import type { PolicyIR } from '../policy/engine/ir';
import { adoptBindings } from '../policy/render/source-check';
import { modelFromKernel, RulesetModel, tableFlagsProblem } from '../ruleset/model';
import { enabledFeatures, kindsOf } from './enabled';
import { readSnapshot } from './source';

/** Each table-owning feature's component, started on `snapshot`, in registry order. */
export function desiredComponents(enabled: readonly EnabledFeature[], snapshot: ClusterSnapshot, nodeName: string, values: OptionValues, report: InputReport = { problem: () => undefined }): Component[] {
  const components: Component[] = [];
  for (const { feature, settings } of enabled) {
    const component = feature.component?.(settings, nodeName, report, values);
    if (!component) continue;
    component.start(snapshot);
    components.push(component);
  }
  return components;
}

/** The NetworkPolicy component among `components`, when policy is on. */
export function policyOf(components: readonly Component[]): PolicyComponent | undefined {
  return components.find((c): c is PolicyComponent => c instanceof PolicyComponent);
}

/** The tables the options ask for (policy, and the proxy's with --proxy), as the cluster state
 * says they must be; `ir`, the policy's compiled model, when policy is on. */
export async function desiredTables(v: OptionValues, ctx: { defer(close: () => unknown): void }): Promise<{ models: RulesetModel[]; ir?: PolicyIR; tiers?: ClusterTiers }> {
  const enabled = enabledFeatures(v);
  const node = nodeNameOf(stringOption(v, 'node-name'));
  // Which node's view is compared, as a log line on stderr: stdout stays the difference alone.
  createLogger(stringOption(v, 'log-level') ?? 'info').info({ node, table: `inet ${tableName(stringOption(v, 'table'))}` }, `verifying node ${node}`);
  const snap = await readSnapshot(v, ctx, kindsOf(enabled));
  const components = desiredComponents(enabled, snap, node, v);
  const policy = policyOf(components);
  return { models: components.map((c) => c.desired), ir: policy?.state(), tiers: policy?.tiers };
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
