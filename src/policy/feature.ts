/** NetworkPolicy enforcement as a feature of the node: its options, the kinds it reads, its
 * component (the policy table), the namespace-mode warnings, the anti-spoofing neighbour binding
 * and the per-policy counters served at scrape time. */
import type { Logger } from 'pino';
import type { NamespaceInfo } from '../k8s/model';
import { POLICY_KINDS, type ClusterSnapshot } from '../k8s/source';
import type { OptionValues } from '../options/table';
import { type DenyAction, denyAction, stringOption, tableName } from '../options/values';
import type { Feature } from '../pipeline/feature';
import { logCoexistence } from './coexist';
import { PolicyComponent, policyTable } from './component';
import { DENY_OPTIONS, dropLogOptions, modeAnnotationWarner, NO_POLICY_OPTION, POLICY_TABLE_OPTIONS, policyModes } from './options';
import type { DropLogOptions } from './render/tail';
import { policyRecord } from './table-record';

export interface PolicySettings {
  table: string;
  denyAction: DenyAction;
  log?: DropLogOptions;
  policyMode?: string;
}

/** The policy settings of any command that renders or reads the policy table. */
export function policySettings(v: OptionValues): PolicySettings {
  return { table: tableName(stringOption(v, 'table')), denyAction: denyAction(stringOption(v, 'deny-action')), log: dropLogOptions(v), policyMode: stringOption(v, 'policy-mode') };
}

/** When no pod of the snapshot runs on `node`: a wrong --node-name renders an empty table. */
function noPodsWarning(snapshot: ClusterSnapshot, node: string): string[] {
  return [...snapshot.pods.values()].some((p) => p.nodeName === node) ? [] : [`no pods are scheduled on node ${node}: nothing to enforce yet (is --node-name right?)`];
}

function invalidModeWarning(logger: Logger) {
  return (namespace: string, value: string) => logger.warn({ object: `Namespace ${namespace}`, field: 'metadata.annotations["nfkube.io/policy-mode"]', value }, 'not enforce or audit; enforcing');
}

export const policyFeature: Feature<PolicySettings> = {
  name: 'policy',
  options: { ...POLICY_TABLE_OPTIONS, ...DENY_OPTIONS, ...NO_POLICY_OPTION },
  kinds: POLICY_KINDS,
  settings: (v) => {
    // Checked whether or not policy runs: the flags are the node's, and a typo must not pass.
    const settings = policySettings(v);
    return v['no-policy'] === true ? undefined : settings;
  },
  ownedTable: (v) => policyTable(tableName(stringOption(v, 'table'))),
  snapshotWarnings: noPodsWarning,
  component: (s, nodeName, report, values) =>
    new PolicyComponent({
      nodeName,
      table: s.table,
      denyAction: s.denyAction,
      log: s.log,
      modes: policyModes(values),
      logger: silentLogger(),
      report: {
        inputError: (e) => report.problem({ object: `NetworkPolicy ${e.policy}`, field: e.field, message: `NetworkPolicy ${e.policy}: ${e.field}: ${e.message}` }),
        failClosed: (err) => report.problem({ object: err.object, message: err.message }),
        clusterInputError: (e) => report.problem({ object: `ClusterNetworkPolicy ${e.policy}`, field: e.field, message: `ClusterNetworkPolicy ${e.policy}: ${e.field}: ${e.message}` }),
      },
    }),
  async open(s, ctx) {
    await logCoexistence(ctx.socket, s.table, ctx.logger);
    const modes = policyModes(ctx.values, [], invalidModeWarning(ctx.logger));
    const warnMode = modeAnnotationWarner(modes, ctx.logger);
    const policy = new PolicyComponent({ nodeName: ctx.nodeName, table: s.table, denyAction: s.denyAction, log: s.log, modes, logger: ctx.logger });
    return {
      component: policy,
      record: policyRecord(s),
      load(snapshot) {
        for (const ns of snapshot.namespaces.values()) warnMode(ns);
      },
      apply(change) {
        if (change.kind === 'Namespace' && change.type === 'upsert') warnMode(change.object as NamespaceInfo);
      },
      async started(agent) {
        // Binds local pods' addresses to their MACs from the node's neighbour table
        // (render/source-check.ts) for as long as the agent runs.
        const { bindNeighbours } = require('./neighbour-watch') as typeof import('./neighbour-watch');
        const watch = await bindNeighbours(agent, policy, { netns: ctx.netns, logger: ctx.logger });
        ctx.defer(() => watch.close());
      },
      serving(metrics, counterSocket) {
        const { policyCounterReader } = require('./metrics-bridge') as typeof import('./metrics-bridge');
        metrics.setPolicyCounterReader(policyCounterReader(counterSocket, s.table, (address, dir) => policy.podAt(address, dir)), (err: unknown) => ctx.logger.warn({ err }, 'reading policy counters failed'));
      },
    };
  },
};

/** The desired-state commands report problems themselves (InputReport): the component logs nothing. */
function silentLogger(): Logger {
  const { createLogger } = require('../log') as typeof import('../log');
  return createLogger('silent');
}
