/** The node's IPAM service: answers the CNI plugin's requests from the blocks this node holds,
 * claims blocks by creating their IPBlock (409: another node has it), borrows single addresses
 * through IPAddressClaim creates when the pool has no free block, records every allocation durably
 * before answering, publishes its allocations to the blocks' status (coalesced, seconds later),
 * and garbage-collects what pods, runtimes and deleted Nodes left behind.
 *
 * This file composes the parts and runs start-up; each part states its own invariants:
 * cni-requests.ts (the socket's commands), allocator.ts (which address a handle gets),
 * block-claims.ts (the blocks held), lending.ts (lending and borrowing), ledger.ts (durability),
 * publisher.ts (block status), gc.ts (garbage collection), confirmed-api.ts (unknown API
 * outcomes).
 *
 * Invariants of start-up: the record is replayed before anything is answered; an address the API
 * publishes for a handle the record lacks is recorded and held as that handle's; a recorded
 * address in a block this node no longer holds is claimed back; a start that fails holds
 * nothing. */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { IpamReply, IpamRequest } from '../cni/protocol';
import { Allocator, watermarkFor } from './allocator';
import { IpamApi } from './api';
import { BlockClaims } from './block-claims';
import { BlockUpdates } from './block-updates';
import { ConfirmedApi } from './confirmed-api';
import { IpamContext, Liveness } from './context';
import { GarbageCollector, GcReport } from './gc';
import { HandleQueue } from './handle-queue';
import { AllocationLedger } from './ledger';
import { Lending } from './lending';
import { IpamMetrics, IpamUsage } from './metrics';
import { ClaimObject, readBlock, readClaim } from './objects';
import { PoolCatalog } from './pool-catalog';
import { Publisher } from './publisher';
import { PublishedBlock, reconcilePublished } from './reconcile';
import { CniRequests } from './cni-requests';
import { handleKey, NodeState } from './state';

export interface IpamServiceOptions {
  api: IpamApi;
  nodeName: string;
  /** Directory of the write-ahead record (<stateDir>/<node>.wal). */
  stateDir: string;
  logger: Logger;
  metrics?: IpamMetrics;
  /** Claim a new block when fewer free addresses than this remain (default: a quarter block). */
  watermark?: number;
  /** Period of pod/node garbage collection (default 60 s). */
  gcIntervalMs?: number;
  /** How long a Node must stay deleted before its blocks are released (default 5 min). */
  nodeGraceMs?: number;
  /** Delay before allocations are published to block status, coalescing bursts (default 2 s). */
  publishDelayMs?: number;
  /** Release blocks of deleted Nodes (default true). */
  nodeGc?: boolean;
  now?: () => number;
}

export class IpamService {
  readonly nodeName: string;
  readonly state = new NodeState();
  private readonly ctx: IpamContext;
  private readonly life = new Liveness();
  private readonly gcIntervalMs: number;
  private readonly confirmed: ConfirmedApi;
  private readonly pools: PoolCatalog;
  private readonly blocks: BlockClaims;
  private readonly publisher: Publisher;
  private readonly ledger: AllocationLedger;
  private readonly gc: GarbageCollector;
  private readonly requests: CniRequests;

  constructor(o: IpamServiceOptions) {
    this.nodeName = o.nodeName;
    this.gcIntervalMs = o.gcIntervalMs ?? 60_000;
    const ctx: IpamContext = { api: o.api, nodeName: o.nodeName, state: this.state, log: o.logger, metrics: o.metrics, now: o.now ?? Date.now, life: this.life };
    this.ctx = ctx;
    const confirmed = (this.confirmed = new ConfirmedApi(ctx));
    const updates = new BlockUpdates(ctx, confirmed);
    const publisher = (this.publisher = new Publisher(ctx, updates, o.publishDelayMs ?? 2_000));
    const pools = (this.pools = new PoolCatalog(ctx));
    const blocks = (this.blocks = new BlockClaims(ctx, confirmed, updates, pools, publisher));
    const lending = new Lending(ctx, confirmed, updates, blocks, (size) => watermarkFor(o.watermark, size));
    const ledger = (this.ledger = new AllocationLedger(ctx, join(o.stateDir, `${o.nodeName}.wal`)));
    const allocator = new Allocator(ctx, { confirmed, pools, blocks, lending, ledger, publisher }, o.watermark);
    const queue = new HandleQueue();
    this.gc = new GarbageCollector(ctx, { confirmed, pools, blocks, lending, ledger, allocator, queue }, { nodeGraceMs: o.nodeGraceMs ?? 300_000, nodeGc: o.nodeGc ?? true });
    this.requests = new CniRequests(ctx, { allocator, pools, queue });
    o.metrics?.setUsageReader(() => this.usage());
  }

  get walPath(): string {
    return this.ledger.path;
  }

  /** Replays the record, loads pools and this node's blocks, and starts periodic GC. */
  async start(): Promise<void> {
    await this.ledger.open();
    try {
      await this.load();
    } catch (err) {
      await this.ledger.discard();
      this.state.blocks.clear();
      throw err;
    }
    this.gc.startTimer(this.gcIntervalMs);
    this.ctx.log.info({ node: this.nodeName, blocks: this.state.blocks.size, allocations: this.state.allocations.size, pools: this.pools.names() }, 'ipam agent started');
  }

  private async load(): Promise<void> {
    const { log } = this.ctx;
    await this.confirmed.retry('load pools', () => this.pools.refresh());
    const blocks = await this.confirmed.listBlocks();
    const claims = await this.confirmed.listClaims();
    const published: PublishedBlock[] = [];
    for (const obj of blocks) {
      const b = readBlock(obj);
      this.blocks.noteTaken(b.name);
      const block = b.node === this.nodeName ? this.blocks.adopt(obj) : undefined;
      if (block) published.push({ block, allocations: obj.status?.allocations });
    }
    await this.holdPublished(published, claims.map(readClaim));
    for (const a of this.state.allocations.values()) this.state.markAllocation(a);
    this.blocks.markForeignClaims(claims.map(readClaim));
    for (const a of this.state.allocations.values()) {
      for (const ip of a.ips) {
        if (!ip.claim && !this.state.blocks.has(ip.block)) {
          log.error({ block: ip.block, address: ip.address, handle: handleKey(a.network, a.containerID, a.ifname) }, 'recorded allocation is in a block this node no longer holds; reclaiming it');
          void this.blocks.reclaimLost(ip.block, a.pool).catch((err) => log.error({ err, block: ip.block }, 'reclaiming block failed'));
        }
      }
    }
    for (const b of this.state.blocks.values()) this.publisher.markChanged(b.name);
    this.publisher.schedule();
  }

  /** Why this service cannot serve now (its record cannot be written), or undefined. */
  get problem(): string | undefined {
    return this.ledger.problem;
  }

  /** Addresses the API publishes for handles the record lacks (a lost or old record) are held,
   * recorded first, until GC proves their pods gone. */
  private async holdPublished(published: PublishedBlock[], claims: ClaimObject[]): Promise<void> {
    const { adopted, problems } = reconcilePublished(published, claims, this.pools, this.state.allocations, this.nodeName);
    for (const problem of problems) this.ctx.log.error({ problem }, 'a published allocation cannot be accounted for');
    if (adopted.size === 0) return;
    this.ctx.log.warn({ handles: [...adopted.keys()] }, 'the API publishes allocations the local record lacks; holding them until GC finds their pods gone');
    await this.ledger.hold(adopted);
  }

  /** Clean stop: pending publishes are written, the record is closed. */
  async stop(): Promise<void> {
    this.gc.stopTimer();
    this.publisher.cancel();
    await this.gc.current?.catch(() => undefined);
    await this.flushPublish().catch(() => undefined);
    this.life.stop();
    await this.ledger.close();
  }

  /** A crash as far as the API and the disk can tell: nothing more is written or answered. */
  crash(): void {
    this.life.stop();
    this.gc.stopTimer();
    this.publisher.cancel();
    this.ledger.abandon();
  }

  handle(req: IpamRequest): Promise<IpamReply> {
    return this.requests.handle(req);
  }

  /** One GC pass: pods that no longer exist, claims nobody holds, blocks of deleted Nodes. */
  runGc(): Promise<GcReport> {
    return this.gc.run();
  }

  /** Writes each changed block's allocations into its status now. */
  flushPublish(): Promise<void> {
    return this.publisher.flush();
  }

  usage(): IpamUsage[] {
    return this.state.usage();
  }
}
