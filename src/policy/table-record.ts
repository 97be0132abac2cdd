/** The options that shape the policy table, as the agent records them in it. */
import { flagText } from '../options/record';
import type { DropLogOptions } from './render/tail';

export const POLICY_RECORDED = ['deny-action', 'log-drops', 'log-group', 'log-rate', 'log-burst', 'policy-mode'] as const;

/** The policy table's record, from the options the agent runs with. */
export function policyRecord(o: { denyAction: string; log?: DropLogOptions; policyMode?: string }): string {
  return flagText([
    ['deny-action', o.denyAction],
    ['log-drops', o.log !== undefined],
    ['log-group', o.log?.group.toString()],
    ['log-rate', o.log?.rate.toString()],
    ['log-burst', o.log?.burst.toString()],
    ['policy-mode', o.policyMode],
  ]);
}
