/** The drop log as a feature of the node: with --log-drops, each packet a deny rule logs to
 * nfnetlink_log becomes one log line, a counter and an entry of /drops. It keeps its own view of
 * the cluster (pods, namespaces and their audit modes) from the change stream. */
import type { OptionValues } from '../../options/table';
import { type DenyAction, denyAction, stringOption } from '../../options/values';
import type { Feature } from '../../pipeline/feature';
import { PolicyModes } from '../modes';
import { dropLogOptions, policyModes } from '../options';
import type { DropLogOptions } from '../render/tail';

export interface DropLogSettings {
  log: DropLogOptions;
  denyAction: DenyAction;
}

export const dropLogFeature: Feature<DropLogSettings> = {
  name: 'droplog',
  // Declared with the policy's options (policy/options.ts): they shape the deny rules too.
  options: {},
  kinds: [],
  settings(v: OptionValues) {
    const log = dropLogOptions(v);
    return log && v['no-policy'] !== true ? { log, denyAction: denyAction(stringOption(v, 'deny-action')) } : undefined;
  },
  needsMetrics: () => true,
  async open(s, ctx) {
    // Loaded only with --log-drops.
    const { startDropLogging } = require('./index') as typeof import('./index');
    // Without --policy-mode the table enforces everywhere, annotations or not.
    const audit = policyModes(ctx.values);
    const drops = await startDropLogging({ log: s.log, nodeName: ctx.nodeName, modes: audit ?? new PolicyModes(), denyAction: s.denyAction, logger: ctx.logger, registry: ctx.metrics?.registry, netns: ctx.netns });
    ctx.defer(() => drops.close());
    return {
      drops: drops.ring,
      load(snapshot) {
        for (const ns of snapshot.namespaces.values()) audit?.setNamespace(ns);
        drops.load(snapshot);
      },
      apply(change) {
        if (audit && change.kind === 'Namespace') void (change.type === 'upsert' ? audit.setNamespace(change.object) : audit.deleteNamespace(change.key));
        drops.apply(change);
      },
    };
  },
};
