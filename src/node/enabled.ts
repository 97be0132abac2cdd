/** Which features the option values turn on, with their settings. */
import type { ObjectKind } from '../k8s/source';
import { tableText, type TableRef } from '../pipeline/component';
import type { EnabledFeature, Feature } from '../pipeline/feature';
import type { OptionValues } from '../options/table';
import { FEATURES } from './features';

/** The enabled features, in registry order; throws when none is, or when two would own one table. */
export function enabledFeatures(values: OptionValues, features: readonly Feature<unknown>[] = FEATURES): EnabledFeature[] {
  const enabled: EnabledFeature[] = [];
  for (const feature of features) {
    const settings = feature.settings(values);
    if (settings !== undefined) enabled.push({ feature, settings });
  }
  if (enabled.length === 0) throw new Error('--no-policy needs --proxy or --ipam (the agent would have nothing to do)');
  const owners = new Map<string, string>();
  for (const { feature } of enabled) {
    const table = feature.ownedTable?.(values);
    if (!table) continue;
    const text = tableText(table);
    const other = owners.get(text);
    if (other) throw new Error(`table ${text}: both ${other} and ${feature.name} would own it (give one another name: --table, --proxy-table)`);
    owners.set(text, feature.name);
  }
  return enabled;
}

/** What the enabled features read from the cluster, each kind once. */
export function kindsOf(enabled: readonly EnabledFeature[]): ObjectKind[] {
  return [...new Set(enabled.flatMap((e) => e.feature.kinds))];
}

/** The tables of every feature that owns one, as the values name them, whether or not it is on. */
export function ownedTables(values: OptionValues, features: readonly Feature<unknown>[] = FEATURES): TableRef[] {
  return features.flatMap((f) => f.ownedTable?.(values) ?? []);
}
