/** ClusterNetworkPolicy enforcement as a part of the policy component: the engine decides what a
 * change means, the tiers table re-renders only that into the policy table's model. The policy
 * component hands it every change and the model; it reads Pods, Namespaces, Nodes and
 * ClusterNetworkPolicies. */
import type { Logger } from 'pino';
import type { ClusterChange, ClusterSnapshot } from '../../k8s/source';
import type { PolicyModes } from '../modes';
import type { DropLogOptions } from '../render/tail';
import type { Renderer } from '../render/render';
import type { ChangeScope } from '../../pipeline/scope';
import type { RulesetModel } from '../../ruleset/model';
import type { DesiredModel } from '../../pipeline/desired-model';
import { podFacts } from '../engine/objects';
import type { PolicyError, PolicyIR } from '../engine/ir';
import { ClusterPolicyEngine, isEmptyClusterDelta, type ClusterDelta } from './engine';
import { ClusterTiersTable } from './desired';
import type { CompiledClusterPolicy } from './ir';
import { ClusterRenderer } from './render';

export interface ClusterTiersOptions {
  nodeName: string;
  table: string;
  denyAction: 'drop' | 'reject';
  log?: DropLogOptions;
  modes?: PolicyModes;
  logger: Logger;
  /** Where a rule that failed closed is reported instead of the log (render, verify). */
  onInputError?: (e: PolicyError) => void;
}

export class ClusterTiers {
  readonly engine: ClusterPolicyEngine;
  private readonly renderer: ClusterRenderer;
  private table?: ClusterTiersTable;
  private readonly reported = new Set<string>();
  /** Local pods' addresses by key, with their namespace (for audit mode). */
  private readonly localPods = new Map<string, { namespace: string; addresses: string[] }>();
  /** Policies holding errors, by name: what failed closed. */
  private readonly failing = new Set<string>();

  constructor(
    private readonly opts: ClusterTiersOptions,
    private readonly base: Renderer,
  ) {
    this.engine = new ClusterPolicyEngine(opts.nodeName);
    this.renderer = new ClusterRenderer(base, { table: opts.table, denyAction: opts.denyAction, log: opts.log, audit: !!opts.modes });
  }

  start(snapshot: ClusterSnapshot, desired: DesiredModel): void {
    this.engine.load(snapshot);
    this.table = new ClusterTiersTable(this.renderer, this.base, desired);
    for (const pod of snapshot.pods.values()) this.trackPod(pod.namespace + '/' + pod.name, podFacts(pod, this.opts.nodeName));
    const state = this.engine.state();
    this.table.load(state);
    this.report([...state.policies.values()]);
  }

  /** Applies one change; true when the model changed. Namespace mode changes are read from
   * `opts.modes`, which the policy component updates first. */
  apply(change: ClusterChange, scope: ChangeScope): boolean {
    if (!this.table) return false;
    let delta: ClusterDelta;
    try {
      delta = this.toEngine(change);
    } catch (err) {
      this.opts.logger.error({ err, object: `${change.kind} ${change.key}` }, 'cluster policy engine rejected a change');
      return false;
    }
    let changed = !isEmptyClusterDelta(delta);
    if (changed) {
      this.report(delta.policies.upsert);
      for (const p of delta.policies.remove) this.failing.delete(p.name);
      this.table.apply(delta, scope);
    }
    if (change.kind === 'Pod') {
      const facts = change.type === 'upsert' ? podFacts(change.object, this.opts.nodeName) : undefined;
      changed = this.trackPod(change.key, facts, scope) || changed;
    } else if (change.kind === 'Namespace') {
      for (const [key, pod] of this.localPods) if (pod.namespace === change.key) changed = this.auditPod(key, scope) || changed;
    }
    return changed;
  }

  /** The compiled policy of an id (explain, the drop log, counters). */
  policyById(id: string): CompiledClusterPolicy | undefined {
    return this.table?.policy(id);
  }

  stats(): { clusterPolicies: number; clusterPoliciesFailedClosed: number } {
    return { clusterPolicies: this.engine.size, clusterPoliciesFailedClosed: this.failing.size };
  }

  private trackPod(key: string, facts: ReturnType<typeof podFacts> | undefined, scope?: ChangeScope): boolean {
    if (facts?.local) this.localPods.set(key, { namespace: facts.namespace, addresses: facts.v4.concat(facts.v6) });
    else if (!this.localPods.delete(key)) return false;
    return this.auditPod(key, scope);
  }

  private auditPod(key: string, scope?: ChangeScope): boolean {
    const pod = this.localPods.get(key);
    if (!this.opts.modes || !this.table) return false;
    const had = scope ? scope.sets.size + scope.elements.size : 0;
    this.table.auditPod(key, pod?.addresses, !!pod && this.opts.modes.mode(pod.namespace) === 'audit', scope);
    return scope ? scope.sets.size + scope.elements.size !== had : false;
  }

  private toEngine(c: ClusterChange): ClusterDelta {
    const e = this.engine;
    switch (c.kind) {
      case 'Pod':
        return c.type === 'upsert' ? e.upsertPod(c.object) : e.deletePod(c.object);
      case 'Namespace':
        return c.type === 'upsert' ? e.upsertNamespace(c.object) : e.deleteNamespace(c.object);
      case 'Node':
        return c.type === 'upsert' ? e.upsertNode(c.object) : e.deleteNode(c.object);
      case 'ClusterNetworkPolicy':
        return c.type === 'upsert' ? e.upsertPolicy(c.object) : e.deletePolicy(c.object);
      default:
        return e.batch(() => undefined);
    }
  }

  private report(policies: CompiledClusterPolicy[]): void {
    for (const p of policies) {
      if (p.errors.length > 0) this.failing.add(p.name);
      else this.failing.delete(p.name);
      for (const e of p.errors) this.reportError(e);
    }
  }

  private reportError(e: PolicyError): void {
    const key = `${e.policy} ${e.field} ${e.message}`;
    if (this.reported.has(key)) return;
    this.reported.add(key);
    if (this.opts.onInputError) return this.opts.onInputError(e);
    this.opts.logger.error({ object: `ClusterNetworkPolicy ${e.policy}`, field: e.field }, e.message);
  }
}

/** The whole policy table rendered once, NetworkPolicy's and the tiers' (render, verify,
 * explain): what the agent's component builds at start. */
export function fullPolicyTable(renderer: Renderer, ir: PolicyIR, snapshot: ClusterSnapshot, logger: Logger): { model: RulesetModel; tiers: ClusterTiers } {
  const { desired } = renderer.render(ir, snapshot.pods.values());
  const o = renderer.opts;
  const tiers = new ClusterTiers({ nodeName: ir.nodeName, table: o.table, denyAction: o.denyAction, log: o.log, modes: o.modes, logger }, renderer);
  tiers.start(snapshot, desired);
  return { model: desired.model, tiers };
}
