/** The node's neighbour table, watched for the MACs of local pods' addresses (source-check.ts
 * binds each address to the last MAC seen for it): one dump at start, then the kernel's
 * RTNLGRP_NEIGH notifications; notifications lost to an overrun are made up for by another dump.
 * The kernel has an entry for a pod once the node and the pod exchanged a packet (the pod's ARP
 * or NDP for its gateway, a kubelet probe). */
import type { Logger } from 'pino';
import type { Agent } from '../pipeline/agent';
import type { PolicyComponent } from './component';
import { decodeNfMessages } from '../netlink/message';
import { Netns } from '../netlink/netns';
import { NetlinkSocket } from '../netlink/socket';
import { Rtnl, rtnlBody } from '../rtnl/client';
import { decodeNeighbour, Neighbour } from '../rtnl/codec';
import {
  NETLINK_ROUTE, NUD_DELAY, NUD_PERMANENT, NUD_PROBE, NUD_REACHABLE, NUD_STALE, RTM_DELNEIGH, RTM_NEWNEIGH, RTNLGRP_NEIGH,
} from '../rtnl/constants';

const ETH_ALEN = 6;
/** States whose link-layer address the kernel has seen in use (not INCOMPLETE or FAILED; a
 * NOARP entry has no address to bind). */
const USABLE_STATES = NUD_REACHABLE | NUD_STALE | NUD_DELAY | NUD_PROBE | NUD_PERMANENT;

/** The MAC a neighbour entry gives its address; undefined when the entry is deleted or has no
 * usable Ethernet address. */
export function neighbourMac(n: Neighbour, deleted: boolean): Buffer | undefined {
  return !deleted && (n.state & USABLE_STATES) !== 0 && n.lladdr?.length === ETH_ALEN ? n.lladdr : undefined;
}

/** Told each entry's address and MAC (undefined: none usable any more). */
export type NeighbourHandler = (address: string, mac: Buffer | undefined) => void;

export class NeighbourWatch {
  private closed = false;

  private constructor(
    private readonly notifications: NetlinkSocket,
    private readonly rtnl: Rtnl,
    private readonly onNeighbour: NeighbourHandler,
    private readonly logger: Logger,
  ) {}

  /** Subscribes first, then dumps, so no change falls between the two. */
  static async start(onNeighbour: NeighbourHandler, opts: { netns?: Netns | string; logger: Logger }): Promise<NeighbourWatch> {
    const notifications = NetlinkSocket.open({ protocol: NETLINK_ROUTE, netns: opts.netns });
    const rtnl = Rtnl.open(opts.netns);
    const watch = new NeighbourWatch(notifications, rtnl, onNeighbour, opts.logger);
    try {
      notifications.joinGroup(RTNLGRP_NEIGH);
      notifications.listen((raw, overruns, errno) => watch.receive(raw, overruns, errno));
      await watch.dump();
    } catch (err) {
      await watch.close();
      throw err;
    }
    return watch;
  }

  async close(): Promise<void> {
    this.closed = true;
    await Promise.all([this.notifications.close(), this.rtnl.close()]);
  }

  private async dump(): Promise<void> {
    for (const n of await this.rtnl.neighbours()) if (!this.closed) this.onNeighbour(n.address, neighbourMac(n, false));
  }

  private receive(raw: Buffer, overruns: number, errno: number): void {
    if (this.closed) return;
    if (overruns > 0 || errno !== 0) {
      this.logger.warn({ overruns, errno }, 'neighbour notifications lost; reading the neighbour table again');
      void this.dump().catch((err) => this.logger.error({ err }, 'neighbour table dump failed'));
    }
    if (raw.length === 0) return;
    try {
      for (const m of decodeNfMessages(raw)) {
        if (m.type !== RTM_NEWNEIGH && m.type !== RTM_DELNEIGH) continue;
        const n = decodeNeighbour(rtnlBody(m));
        this.onNeighbour(n.address, neighbourMac(n, m.type === RTM_DELNEIGH));
      }
    } catch (err) {
      this.logger.warn({ err }, 'undecodable neighbour notification ignored');
    }
  }
}

/** Feeds the node's neighbour table to the policy component, through the agent that commits its
 * table. Start it once the agent has started (earlier entries would be ignored). */
export function bindNeighbours(agent: Agent, policy: PolicyComponent, opts: { netns?: Netns | string; logger: Logger }): Promise<NeighbourWatch> {
  return NeighbourWatch.start((address, mac) => void agent.onNodeChange(policy.name, `neighbour ${address}`, (scope) => policy.neighbourChanged(address, mac, scope)), opts);
}
