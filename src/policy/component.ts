/** NetworkPolicy as a pipeline component: the incremental PolicyEngine decides what each change
 * means, the DesiredTable re-renders only that into the policy table's model. */
import type { Logger } from 'pino';
import { ClusterChange, ClusterSnapshot } from '../k8s/source';
import { PolicyEngine } from './engine/engine';
import { Direction, isEmptyDelta, PolicyDelta, PolicyError, PolicyIR } from './engine/ir';
import { Component, TableRef } from '../pipeline/component';
import { ChangeScope } from '../pipeline/scope';
import { RulesetModel } from '../ruleset/model';
import { DesiredTable } from './render/desired';
import { Renderer, RenderError } from './render/render';
import { PolicyModes, type DenyAction } from './modes';
import { DropLogOptions } from './render/tail';
import { ClusterTiers } from './cluster/tiers';

export interface PolicyComponentOptions {
  nodeName: string;
  /** The table's name (see policyTable). */
  table: string;
  denyAction: DenyAction;
  /** Deny rules log to nfnetlink_log. */
  log?: DropLogOptions;
  /** Audit mode support (global and per namespace). */
  modes?: PolicyModes;
  logger: Logger;
  /** Where input problems go instead of the log: the desired-state commands print them. */
  report?: {
    /** A rule entry NetworkPolicy could not read: it allows nothing. */
    inputError(e: PolicyError): void;
    /** An object the renderer isolated (RenderError). */
    failClosed(err: RenderError): void;
    /** A ClusterNetworkPolicy rule that failed closed. */
    clusterInputError?(e: PolicyError): void;
  };
}

/** The policy's table: always `inet`, one table for IPv4 and IPv6. */
export function policyTable(name: string): TableRef {
  return { family: 'inet', name };
}

export class PolicyComponent implements Component {
  readonly name = 'policy';
  readonly table: TableRef;
  private readonly engine: PolicyEngine;
  private readonly renderer: Renderer;
  private desiredTable?: DesiredTable;
  private readonly reportedErrors = new Set<string>();
  /** ClusterNetworkPolicy's Admin and Baseline tiers, in the same table. */
  readonly tiers: ClusterTiers;

  constructor(private readonly opts: PolicyComponentOptions) {
    this.table = policyTable(opts.table);
    this.engine = new PolicyEngine(opts.nodeName);
    const onFailClosed = opts.report ? (err: RenderError) => opts.report!.failClosed(err) : (err: RenderError) => opts.logger.error({ object: err.object, err: err.cause }, err.message);
    this.renderer = new Renderer({ table: opts.table, denyAction: opts.denyAction, log: opts.log, modes: opts.modes, onFailClosed });
    this.tiers = new ClusterTiers({ nodeName: opts.nodeName, table: opts.table, denyAction: opts.denyAction, log: opts.log, modes: opts.modes, logger: opts.logger, onInputError: opts.report?.clusterInputError }, this.renderer);
  }

  /** What start() took, in ms: the engine's load of the snapshot, and the render of its state. */
  loadStages?: { engine: number; render: number };

  start(snapshot: ClusterSnapshot): void {
    const t0 = performance.now();
    this.engine.batch(() => {
      for (const ns of snapshot.namespaces.values()) (this.engine.upsertNamespace(ns), this.opts.modes?.setNamespace(ns));
      for (const pod of snapshot.pods.values()) this.engine.upsertPod(pod);
      for (const np of snapshot.policies.values()) this.engine.upsertPolicy(np);
    });
    const ir = this.engine.state();
    const t1 = performance.now();
    this.reportPolicyErrors([...ir.policies.values()].flatMap((p) => p.errors));
    this.desiredTable = new DesiredTable(this.renderer, ir, snapshot.pods.values());
    this.tiers.start(snapshot, this.desiredTable.desired);
    this.loadStages = { engine: t1 - t0, render: performance.now() - t1 };
  }

  get desired(): RulesetModel {
    if (!this.desiredTable) throw new Error('policy component: desired state read before start()');
    return this.desiredTable.model;
  }

  /** The local pod (`namespace/name`) whose default deny counts an address in `dir`: how the
   * per-address counters are attributed. */
  podAt(address: string, dir: Direction): string | undefined {
    return this.desiredTable?.podAt(address, dir);
  }

  /** The compiled NetworkPolicy state the table renders (explain and verify --counters read it). */
  state(): PolicyIR {
    return this.engine.state();
  }

  /** The audit modes the table renders, per namespace (all enforced without --policy-mode). */
  get modes(): PolicyModes {
    return this.opts.modes ?? new PolicyModes();
  }

  /** Whether start() has built the desired model. */
  get started(): boolean {
    return this.desiredTable !== undefined;
  }

  apply(change: ClusterChange, scope: ChangeScope): boolean {
    if (!this.desiredTable) return false;
    let delta: PolicyDelta | undefined;
    try {
      delta = this.applyToEngine(change);
    } catch (err) {
      this.opts.logger.error({ err, object: `${change.kind} ${change.key}` }, 'policy engine rejected a change');
      return false;
    }
    if (!delta) return this.tiers.apply(change, scope);
    const modes = this.opts.modes;
    const modeChanged = change.kind === 'Namespace' && !!modes && (change.type === 'upsert' ? modes.setNamespace(change.object) : modes.deleteNamespace(change.key));
    const sourcesChanged = change.kind === 'Pod' && this.desiredTable.podChanged(change, scope);
    const tiersChanged = this.tiers.apply(change, scope);
    if (isEmptyDelta(delta) && !modeChanged) return sourcesChanged || tiersChanged;
    this.reportPolicyErrors(delta.policies.upsert.flatMap((p) => p.errors));
    this.desiredTable.apply(delta, scope);
    if (modeChanged) this.desiredTable.namespaceModeChanged(change.key, scope);
    return true;
  }

  /** The node's neighbour table changed for `address` (see NeighbourWatch): binds a local pod's
   * address to its MAC; returns whether the desired model changed. */
  neighbourChanged(address: string, mac: Buffer | undefined, scope: ChangeScope): boolean {
    return this.desiredTable?.neighbourChanged(address, mac, scope) ?? false;
  }

  stats(): Record<string, number> {
    const s = this.engine.stats();
    const t = this.tiers.stats();
    return { pods: s.targets ?? 0, policies: s.policies ?? 0, clusterPolicies: t.clusterPolicies, failedClosed: (s.policiesFailedClosed ?? 0) + this.renderer.failedClosed.size + t.clusterPoliciesFailedClosed };
  }

  /** The change's effect on the engine; undefined for kinds NetworkPolicy does not read. */
  private applyToEngine(c: ClusterChange): PolicyDelta | undefined {
    switch (c.kind) {
      case 'Pod':
        return c.type === 'upsert' ? this.engine.upsertPod(c.object) : this.engine.deletePod(c.object);
      case 'Namespace':
        return c.type === 'upsert' ? this.engine.upsertNamespace(c.object) : this.engine.deleteNamespace(c.object);
      case 'NetworkPolicy':
        return c.type === 'upsert' ? this.engine.upsertPolicy(c.object) : this.engine.deletePolicy(c.object);
      default:
        return undefined;
    }
  }

  private reportPolicyErrors(errors: PolicyError[]): void {
    for (const e of errors) {
      const key = `${e.policy} ${e.field} ${e.message}`;
      if (this.reportedErrors.has(key)) continue;
      this.reportedErrors.add(key);
      if (this.opts.report) this.opts.report.inputError(e);
      else this.opts.logger.error({ object: `NetworkPolicy ${e.policy}`, field: e.field }, `${e.message}: this rule entry allows nothing; the policy still isolates its pods`);
    }
  }
}
