/** Start-up coexistence check, read-only: finds other base chains on the hooks nfkube uses whose
 * verdicts can override nfkube's, and logs each one. Nothing here writes to the kernel.
 *
 * In netfilter every base chain on a hook sees the packet in priority order; `accept` ends only
 * the chain it is in, while `drop` (a rule's or the chain policy) is final. So another chain can
 * discard traffic nfkube allows, never let through traffic nfkube drops:
 *   - a chain with policy drop discards whatever its own rules do not accept, before or after nfkube;
 *   - a chain that runs first (lower priority; equal priorities run in registration order) can
 *     drop, reject, queue or re-mark packets before nfkube decides, and nfkube never sees them.
 * iptables-nft chains are nf_tables base chains and are found here; iptables-legacy chains are not
 * visible over nfnetlink (docs/coexistence.md). */
import type { Logger } from 'pino';
import { NetlinkSocket } from '../netlink/socket';
import { listChains } from '../nft/readback';
import { Chain, Family, HookName } from '../nft/types';
import { Renderer } from './render/render';
import { SOURCE_CHAIN } from './render/source-check';

/** Families whose base chains sit on the same IPv4/IPv6 hooks as nfkube's inet chains (bridge,
 * arp and netdev hooks are different hooks even where the names match). */
const SHARED_HOOK_FAMILIES: ReadonlySet<Family> = new Set(['inet', 'ip', 'ip6']);

export interface OwnBaseChain {
  name: string;
  hook: HookName;
  priority: number;
}

export interface ForeignChainFinding {
  family: Family;
  table: string;
  chain: string;
  hook: HookName;
  priority: number;
  policy: 'accept' | 'drop';
  /** Why it can override nfkube, one sentence each. */
  reasons: string[];
}

/** nfkube's own base chains whose verdicts another chain can override, from the renderer so the
 * check follows the real layout. The source check (prerouting) only drops: a foreign chain
 * before it can add drops, never let through what it drops. */
export function ownBaseChains(table: string): OwnBaseChain[] {
  return new Renderer({ table, denyAction: 'drop' })
    .base()
    .chains.filter((c) => c.chain.base && c.chain.name !== SOURCE_CHAIN)
    .map((c) => ({ name: c.chain.name, hook: c.chain.base!.hook, priority: c.chain.base!.priority }));
}

/** Why one foreign base chain can override nfkube's verdicts (empty: it cannot). */
export function overrideReasons(chain: Chain, own: OwnBaseChain[]): string[] {
  const base = chain.base;
  if (!base || !SHARED_HOOK_FAMILIES.has(chain.family)) return [];
  const mine = own.filter((o) => o.hook === base.hook);
  if (mine.length === 0) return [];
  const reasons: string[] = [];
  if (base.policy === 'drop') reasons.push(`policy drop: packets its rules do not accept are dropped even when nfkube accepts them`);
  const before = mine.filter((o) => base.priority < o.priority).map((o) => o.name);
  const tied = mine.filter((o) => base.priority === o.priority).map((o) => o.name);
  if (before.length) reasons.push(`priority ${base.priority} runs before ${before.join(', ')}: a drop, reject or queue there ends the packet before nfkube decides`);
  if (tied.length) reasons.push(`priority ${base.priority} equals ${tied.join(', ')}: the kernel runs equal priorities in registration order, so it may run first`);
  return reasons;
}

/** Every foreign base chain that can override nfkube, in dump order. */
export async function findOverridingChains(socket: NetlinkSocket, table: string): Promise<ForeignChainFinding[]> {
  const own = ownBaseChains(table);
  const out: ForeignChainFinding[] = [];
  for (const c of await listChains(socket)) {
    if (c.family === 'inet' && c.table === table) continue;
    const reasons = overrideReasons(c, own);
    if (!reasons.length || !c.base) continue;
    out.push({ family: c.family, table: c.table, chain: c.name, hook: c.base.hook, priority: c.base.priority, policy: c.base.policy, reasons });
  }
  return out;
}

/** Logs each overriding chain as a warning. A failed check is logged and never stops the agent:
 * it only informs. */
export async function logCoexistence(socket: NetlinkSocket, table: string, logger: Logger): Promise<ForeignChainFinding[]> {
  let found: ForeignChainFinding[];
  try {
    found = await findOverridingChains(socket, table);
  } catch (err) {
    logger.warn({ err }, 'could not list base chains to check coexistence with other firewalls');
    return [];
  }
  for (const f of found) {
    logger.warn(
      { table: `${f.family} ${f.table}`, chain: f.chain, hook: f.hook, priority: f.priority, policy: f.policy, reasons: f.reasons },
      `base chain ${f.family} ${f.table} ${f.chain} (hook ${f.hook} priority ${f.priority} policy ${f.policy}) can override nfkube: ${f.reasons.join('; ')}`,
    );
  }
  return found;
}
