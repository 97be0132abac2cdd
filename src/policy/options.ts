/** The options that shape each pod's default deny, shared by every command that renders or
 * reads the table (agent, render, verify, explain) so they agree on it. */
import type { NamespaceInfo } from '../k8s/model';
import type { Logger } from 'pino';
import { parsePolicyMode, POLICY_MODE_ANNOTATION, PolicyModes } from './modes';
import { DropLogOptions } from './render/tail';
import type { OptionTable, OptionValues } from '../options/table';
import { boundedInteger, stringOption } from '../options/values';

export const DEFAULT_LOG_GROUP = 100;
export const DEFAULT_LOG_RATE = 10;
export const DEFAULT_LOG_BURST = 5;

export const POLICY_TABLE_OPTIONS = {
  table: { type: 'string', value: 'NAME', description: "name of nfkube's own nftables table (family inet)", default: 'nfkube' },
  'deny-action': { type: 'string', value: 'drop|reject', description: 'what happens to traffic no policy allows to or from an isolated pod', default: 'drop' },
} as const satisfies OptionTable;

export const NO_POLICY_OPTION = {
  'no-policy': { type: 'boolean', description: 'do not enforce NetworkPolicy: run the proxy (--proxy) and/or IPAM (--ipam) alone' },
} as const satisfies OptionTable;

export const DENY_OPTIONS = {
  'log-drops': { type: 'boolean', description: "each pod's default deny logs to nfnetlink_log (the agent writes one line per drop), rate-limited in the kernel per combination chain (the pods isolated by the same policies)" },
  'log-group': { type: 'string', value: 'N', description: 'the NFLOG group the deny rules log to', default: String(DEFAULT_LOG_GROUP) },
  'log-rate': { type: 'string', value: 'N', description: 'logged packets per second per combination chain and direction (0: no limit)', default: String(DEFAULT_LOG_RATE) },
  'log-burst': { type: 'string', value: 'N', description: 'packets logged in a burst before the rate applies', default: String(DEFAULT_LOG_BURST) },
  'policy-mode': { type: 'string', value: 'enforce|audit', description: `audit support: with audit, what a deny would drop is logged and accepted instead; with enforce, namespaces annotated ${POLICY_MODE_ANNOTATION}: audit are audited (off when absent)` },
} as const satisfies OptionTable;

/** --log-drops [--log-group G] [--log-rate R] [--log-burst B]; undefined without --log-drops. */
export function dropLogOptions(v: OptionValues): DropLogOptions | undefined {
  const given = ['log-group', 'log-rate', 'log-burst'].filter((k) => v[k] !== undefined);
  if (!v['log-drops']) {
    if (given.length > 0) throw new Error(`--${given[0]} needs --log-drops`);
    return undefined;
  }
  return {
    group: boundedInteger(v['log-group'], '--log-group', DEFAULT_LOG_GROUP, 0, 65535),
    rate: boundedInteger(v['log-rate'], '--log-rate', DEFAULT_LOG_RATE, 0, 1_000_000),
    burst: boundedInteger(v['log-burst'], '--log-burst', DEFAULT_LOG_BURST, 1, 1_000_000),
  };
}

/** --policy-mode, with every namespace's annotation taken in; undefined without the flag. Audit
 * support adds the audit sets and two rules to each default deny chain, so it is asked for: with
 * `--policy-mode enforce` namespaces may switch themselves to audit by annotation. */
export function policyModes(v: OptionValues, namespaces: Iterable<Readonly<NamespaceInfo>> = [], onInvalid?: (namespace: string, value: string) => void): PolicyModes | undefined {
  if (v['policy-mode'] === undefined) return undefined;
  const modes = new PolicyModes(parsePolicyMode(stringOption(v, 'policy-mode')), onInvalid);
  for (const ns of namespaces) modes.setNamespace(ns);
  return modes;
}

/** Without --policy-mode a namespace's mode annotation cannot be honoured: says so, once per
 * namespace and value. With it, nothing to say. */
export function modeAnnotationWarner(modes: PolicyModes | undefined, logger: Logger): (ns: Readonly<NamespaceInfo>) => void {
  const warned = new Set<string>();
  return (ns) => {
    if (modes || ns.policyMode === undefined || warned.has(`${ns.name} ${ns.policyMode}`)) return;
    warned.add(`${ns.name} ${ns.policyMode}`);
    logger.warn({ object: `Namespace ${ns.name}`, value: ns.policyMode }, `the ${POLICY_MODE_ANNOTATION} annotation needs the agent started with --policy-mode enforce|audit; enforcing`);
  };
}
