/** Where the ClusterNetworkPolicy tiers join the policy table: one jump in each base chain before
 * NetworkPolicy's dispatch (the Admin tier) and one after it (the Baseline tier, reached only by
 * packets of pods NetworkPolicy does not isolate in that direction: an isolated pod's dispatch is
 * a goto that ends in an accept or the default deny). A tier's verdicts end the base chain
 * (accept, or a deny); its Pass, and a packet no rule of it matched, return to the base chain. */
import * as b from '../../nft/build';
import type { Expr } from '../../nft/types';
import type { Direction } from '../engine/ir';

export type TierName = 'admin' | 'baseline';

const DIR_SUFFIX: Record<Direction, string> = { ingress: 'in', egress: 'out' };

/** The entry chain of a tier in a direction: `cnp_admin_in` ... `cnp_baseline_out`. */
export const tierChainName = (tier: TierName, dir: Direction): string => `cnp_${tier}_${DIR_SUFFIX[dir]}`;

/** The base chains' jump into a tier. */
export function tierHook(tier: TierName, dir: Direction): Expr[] {
  return [b.jump(tierChainName(tier, dir))];
}
