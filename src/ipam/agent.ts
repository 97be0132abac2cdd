/** The node's IPAM agent: answers the CNI plugin's requests from the blocks this node holds, claims
 * blocks by creating their IPBlock (409: another node has it), borrows single addresses through
 * IPAddressClaim creates when the pool has no free block, records every allocation durably before
 * answering, publishes its allocations to the blocks' status (coalesced, seconds later), and
 * garbage-collects what pods, runtimes and deleted Nodes left behind.
 *
 * Invariants: an address is handed out only from a block whose claim was confirmed (created, or
 * read back as ours) or through a confirmed IPAddressClaim; an unknown API outcome is read back,
 * never taken as success; an allocation is on disk before ADD returns, and an ADD whose record
 * is known not written holds nothing; a freed address is reused only after its release is on
 * disk; an address the API publishes for a handle the record lacks is held as that handle's; a
 * node short of addresses lends nothing and takes back what nobody borrowed; a live pod's address
 * is never released by GC. */
import { join } from 'node:path';
import type { Logger } from 'pino';
import { formatCidr, formatIp, IpFamily, ipInCidr, parseCidr, parseIp, ParsedCidr } from '../net/ip';
import { ApiError, IpamApi, isConflict, isUnknown, NodeInfo, PodInfo } from './api';
import { IpamMetrics, IpamUsage } from './metrics';
import { blockManifest, claimManifest, KObject, PLURALS, PodRef, readBlock, readClaim } from './objects';
import {
  addressClaimName,
  blockCidr,
  blockCount,
  blockName,
  overlappingPools,
  parsePool,
  Pool,
  PoolError,
  poolSelectsNode,
  rangeOf,
  reservedInRange,
  startIndex,
} from './pool';
import { CNI_ERR, IpamIp, IpamReply, IpamRequest } from '../cni/protocol';
import { PublishedBlock, reconcilePublished } from './reconcile';
import { requestProblem } from './request';
import { AllocatedIp, Allocation, BlockState, handleKey, NodeState } from './state';
import { Wal, WalError } from './wal';

export interface IpamAgentOptions {
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

/** A request that failed with a CNI error code. */
export class IpamError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

const BACKOFF_MS = [20, 50, 100, 200, 400, 800, 1600];
const READ_BACK_ATTEMPTS = 8;
/** Probes per range when looking for an unclaimed block (bounded for huge v6 ranges). */
const MAX_PROBES = 4096;

export interface GcReport {
  pod: number;
  node: number;
  orphanClaims: number;
}

export class IpamAgent {
  readonly nodeName: string;
  readonly state = new NodeState();
  private readonly api: IpamApi;
  private readonly log: Logger;
  private readonly metrics?: IpamMetrics;
  private readonly now: () => number;
  private wal?: Wal;
  private pools = new Map<string, Pool>();
  private poolProblems: string[] = [];
  private nodeLabels: Record<string, string> = {};
  /** Names of blocks known to be held by someone (from lists and lost claims). */
  private readonly taken = new Set<string>();
  private readonly claiming = new Map<string, Promise<boolean>>();
  private readonly perKey = new Map<string, Promise<unknown>>();
  /** Handles whose ADD is between choosing addresses and answering: GC leaves them alone. */
  private readonly inflight = new Set<string>();
  private readonly dirtyBlocks = new Set<string>();
  private readonly lastBlockObject = new Map<string, KObject>();
  private publishTimer?: NodeJS.Timeout;
  private publishing?: Promise<void>;
  private gcTimer?: NodeJS.Timeout;
  private gcRunning?: Promise<GcReport>;
  private readonly missingNodes = new Map<string, number>();
  /** Orders block adoptions against block lists: a block adopted after a list began is not
   * judged by that list. */
  private seq = 0;
  private readonly adoptedSeq = new Map<string, number>();
  private dead = false;
  private readonly opts: Required<Pick<IpamAgentOptions, 'gcIntervalMs' | 'nodeGraceMs' | 'publishDelayMs' | 'nodeGc'>> & { watermark?: number; stateDir: string };

  constructor(o: IpamAgentOptions) {
    this.api = o.api;
    this.nodeName = o.nodeName;
    this.log = o.logger;
    this.metrics = o.metrics;
    this.now = o.now ?? Date.now;
    this.opts = {
      stateDir: o.stateDir,
      watermark: o.watermark,
      gcIntervalMs: o.gcIntervalMs ?? 60_000,
      nodeGraceMs: o.nodeGraceMs ?? 300_000,
      publishDelayMs: o.publishDelayMs ?? 2_000,
      nodeGc: o.nodeGc ?? true,
    };
    this.metrics?.setUsageReader(() => this.usage());
  }

  get walPath(): string {
    return join(this.opts.stateDir, `${this.nodeName}.wal`);
  }

  /** Replays the record, loads pools and this node's blocks, and starts periodic GC. */
  async start(): Promise<void> {
    const { wal, live } = await Wal.open(this.walPath, () => this.state.allocations.size, (reason) => this.log.warn({ path: this.walPath }, reason));
    this.wal = wal;
    try {
      await this.load(live);
    } catch (err) {
      this.wal = undefined;
      await wal.close();
      this.state.allocations.clear();
      this.state.blocks.clear();
      throw err;
    }
    if (this.opts.gcIntervalMs > 0) {
      this.gcTimer = setInterval(() => void this.runGc().catch((err) => this.log.warn({ err }, 'ipam gc failed')), this.opts.gcIntervalMs);
      this.gcTimer.unref();
    }
    this.log.info({ node: this.nodeName, blocks: this.state.blocks.size, allocations: this.state.allocations.size, pools: [...this.pools.keys()] }, 'ipam agent started');
  }

  private async load(live: Map<string, Allocation>): Promise<void> {
    for (const [k, a] of live) this.state.allocations.set(k, a);
    await this.retry('load pools', () => this.refreshPools());
    const blocks = await this.retry('list blocks', () => this.api.list(PLURALS.blocks));
    const claims = await this.retry('list claims', () => this.api.list(PLURALS.claims));
    const published: PublishedBlock[] = [];
    for (const obj of blocks) {
      const b = readBlock(obj);
      this.taken.add(b.name);
      const block = b.node === this.nodeName ? this.adoptBlock(obj) : undefined;
      if (block) published.push({ block, allocations: obj.status?.allocations });
    }
    await this.holdPublished(published, claims.map(readClaim));
    for (const a of this.state.allocations.values()) this.state.markAllocation(a);
    this.markForeignClaims(claims.map(readClaim));
    for (const a of this.state.allocations.values()) {
      for (const ip of a.ips) {
        if (!ip.claim && !this.state.blocks.has(ip.block)) {
          this.log.error({ block: ip.block, address: ip.address, handle: handleKey(a.network, a.containerID, a.ifname) }, 'recorded allocation is in a block this node no longer holds; reclaiming it');
          void this.reclaimLost(ip.block, a.pool).catch((err) => this.log.error({ err, block: ip.block }, 'reclaiming block failed'));
        }
      }
    }
    for (const b of this.state.blocks.values()) this.dirtyBlocks.add(b.name);
    this.schedulePublish();
  }

  /** Why this agent cannot serve now (its record cannot be written), or undefined. */
  get problem(): string | undefined {
    return this.wal ? this.wal.problem : 'the allocation record is not open';
  }

  /** Addresses the API publishes for handles the record lacks (a lost or old record) are held,
   * recorded first, until GC proves their pods gone. */
  private async holdPublished(published: PublishedBlock[], claims: ReturnType<typeof readClaim>[]): Promise<void> {
    const { adopted, problems } = reconcilePublished(published, claims, this.pools, this.state.allocations, this.nodeName);
    for (const problem of problems) this.log.error({ problem }, 'a published allocation cannot be accounted for');
    if (adopted.size === 0) return;
    this.log.warn({ handles: [...adopted.keys()] }, 'the API publishes allocations the local record lacks; holding them until GC finds their pods gone');
    await this.wal!.append([...adopted].map(([key, alloc]) => ({ op: 'add' as const, key, alloc })));
    for (const [key, alloc] of adopted) this.state.allocations.set(key, alloc);
  }

  /** Clean stop: pending publishes are written, the record is closed. */
  async stop(): Promise<void> {
    clearInterval(this.gcTimer);
    clearTimeout(this.publishTimer);
    await this.gcRunning?.catch(() => undefined);
    await this.flushPublish().catch(() => undefined);
    this.dead = true;
    await this.wal?.close();
  }

  /** A crash as far as the API and the disk can tell: nothing more is written or answered. */
  crash(): void {
    this.dead = true;
    clearInterval(this.gcTimer);
    clearTimeout(this.publishTimer);
    this.wal?.abandon();
  }

  // ---- requests ----

  async handle(req: IpamRequest): Promise<IpamReply> {
    // The socket's bytes are untrusted: every field is checked before any is used.
    const bad = requestProblem(req);
    if (bad) return { ok: false, ...bad };
    try {
      if (this.dead) throw new IpamError(CNI_ERR.tryAgainLater, 'the ipam agent is stopping');
      switch (req.command) {
        case 'ADD':
          return { ok: true, ips: await this.add(req) };
        case 'DEL':
          await this.del(req);
          return { ok: true };
        case 'CHECK':
          this.check(req);
          return { ok: true };
        case 'GC':
          return { ok: true, released: await this.cniGc(req) };
        case 'STATUS':
          this.status(req);
          return { ok: true };
        default:
          throw new IpamError(CNI_ERR.invalidEnv, `unknown command ${JSON.stringify((req as { command?: unknown }).command)}`);
      }
    } catch (err) {
      if (err instanceof IpamError) return { ok: false, code: err.code, msg: err.message };
      if (err instanceof PoolError) return { ok: false, code: CNI_ERR.invalidConfig, msg: err.message };
      this.log.error({ err, command: req.command, containerID: req.containerID }, 'ipam request failed');
      return { ok: false, code: CNI_ERR.tryAgainLater, msg: `ipam: ${(err as Error).message}` };
    }
  }

  private keyOf(req: IpamRequest): string {
    if (!req.network) throw new IpamError(CNI_ERR.invalidConfig, 'network configuration has no name');
    if (!req.containerID) throw new IpamError(CNI_ERR.invalidEnv, 'CNI_CONTAINERID is required');
    if (!req.ifname) throw new IpamError(CNI_ERR.invalidEnv, 'CNI_IFNAME is required');
    return handleKey(req.network, req.containerID, req.ifname);
  }

  /** Runs fn after every earlier request for the same handle. */
  private serial<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.perKey.get(key) ?? Promise.resolve();
    const next = prev.then(fn, fn);
    const tail = next.catch(() => undefined);
    this.perKey.set(key, tail);
    void tail.then(() => {
      if (this.perKey.get(key) === tail) this.perKey.delete(key);
    });
    return next;
  }

  private async add(req: IpamRequest): Promise<IpamIp[]> {
    const key = this.keyOf(req);
    const t0 = performance.now();
    try {
      const ips = await this.serial(key, () => this.addLocked(key, req));
      this.metrics?.allocationDuration.observe({ result: 'ok' }, (performance.now() - t0) / 1000);
      return ips;
    } catch (err) {
      this.metrics?.allocationDuration.observe({ result: 'error' }, (performance.now() - t0) / 1000);
      throw err;
    }
  }

  private async addLocked(key: string, req: IpamRequest): Promise<IpamIp[]> {
    const existing = this.state.allocations.get(key);
    if (existing) return existing.ips.map(toReplyIp);
    const pool = await this.poolFor(req.pool);
    const families = [...new Set(pool.ranges.map((r) => r.family))];
    const pod = podOf(req.args);
    const ips: AllocatedIp[] = [];
    /** Set when the record may hold the allocation although the append failed. */
    let maybeRecorded = false;
    this.inflight.add(key);
    try {
      for (const family of families) ips.push(await this.allocateOne(pool, family, key, pod));
      this.alive();
      const alloc: Allocation = { network: req.network, containerID: req.containerID!, ifname: req.ifname!, pool: pool.name, ips, pod, at: this.now() };
      this.state.allocations.set(key, alloc);
      try {
        await this.wal!.append([{ op: 'add', key, alloc }]);
      } catch (err) {
        // When the line may be on disk (it could not be cut back off), the addresses stay marked
        // (a restart replays the record and decides), never handed to another pod meanwhile.
        this.state.allocations.delete(key);
        maybeRecorded = !(err instanceof WalError) || err.maybeWritten;
        throw recordingFailed(err);
      }
      this.alive();
      for (const ip of ips) if (!ip.claim) this.dirtyBlocks.add(ip.block);
      this.schedulePublish();
      this.afterAllocation(pool, families);
      return ips.map(toReplyIp);
    } catch (err) {
      // Nothing was answered: give back what this attempt took (borrowed claims are deleted, or
      // left for GC if that fails).
      if (!this.state.allocations.has(key) && !this.dead && !maybeRecorded) this.giveBack(ips);
      throw err;
    } finally {
      this.inflight.delete(key);
    }
  }

  private giveBack(ips: AllocatedIp[]): void {
    for (const ip of ips) {
      if (ip.claim) {
        const claim = ip.claim;
        void this.deleteConfirmed(PLURALS.claims, claim.name, claim.uid).catch((err) => this.log.warn({ err, claim: claim.name }, 'releasing a borrowed address failed; GC will'));
      } else {
        const b = this.state.blocks.get(ip.block);
        const o = b?.ordinalOf(ip.address);
        if (b && o !== undefined) b.release(o);
      }
    }
  }

  private alive(): void {
    if (this.dead) throw new IpamError(CNI_ERR.tryAgainLater, 'the ipam agent stopped');
  }

  private async allocateOne(pool: Pool, family: IpFamily, key: string, pod: PodRef | undefined): Promise<AllocatedIp> {
    for (let attempt = 0; ; attempt++) {
      const got = this.state.takeLocal(pool.name, family);
      if (got) {
        return { family, address: got.block.address(got.ordinal), prefix: got.block.range.cidr.prefix, block: got.block.name };
      }
      this.alive();
      const claimed = await this.claimBlock(pool, family);
      this.alive();
      if (claimed) continue;
      if (await this.takeBackLent(pool, family)) continue;
      if (attempt > 2) break;
      const borrowed = await this.borrow(pool, family, key, pod);
      if (borrowed) return borrowed;
      break;
    }
    throw new IpamError(CNI_ERR.tryAgainLater, `IPPool ${pool.name}: no free ${family === 'v4' ? 'IPv4' : 'IPv6'} address (no unclaimed block and nothing to borrow)`);
  }

  /** Claims a new block ahead of need when free addresses fall under the watermark. */
  private afterAllocation(pool: Pool, families: IpFamily[]): void {
    for (const family of families) {
      const blocks = this.state.blocksOf(pool.name, family);
      if (this.state.freeIn(pool.name, family) < this.watermarkOf(blocks[0]?.size ?? 64)) {
        void this.claimBlock(pool, family).catch((err) => this.log.warn({ err, pool: pool.name, family }, 'claiming a block ahead of need failed'));
      }
    }
  }

  private async del(req: IpamRequest): Promise<void> {
    const key = this.keyOf(req);
    await this.serial(key, () => this.release(key, 'del'));
  }

  /** Releases a handle: recorded on disk first, then its addresses become free. */
  private async release(key: string, reason: string): Promise<boolean> {
    const alloc = this.state.allocations.get(key);
    if (!alloc) return false;
    this.state.allocations.delete(key);
    try {
      await this.wal!.append([{ op: 'del', key }]);
    } catch (err) {
      this.state.allocations.set(key, alloc);
      throw recordingFailed(err);
    }
    this.alive();
    this.state.releaseAllocation(alloc);
    for (const ip of alloc.ips) {
      if (ip.claim) {
        const claim = ip.claim;
        await this.deleteConfirmed(PLURALS.claims, claim.name, claim.uid).catch((err) => this.log.warn({ err, claim: claim.name }, 'deleting a borrowed address claim failed; GC will retry'));
      } else this.dirtyBlocks.add(ip.block);
    }
    if (reason !== 'del') this.metrics?.gcReleases.inc({ reason });
    this.schedulePublish();
    return true;
  }

  private check(req: IpamRequest): void {
    const key = this.keyOf(req);
    const alloc = this.state.allocations.get(key);
    if (!alloc) throw new IpamError(CNI_ERR.containerUnknown, `no addresses are allocated to ${req.containerID} ${req.ifname} on network ${req.network}`);
    if (req.expected) {
      const have = alloc.ips.map((ip) => `${ip.address}/${ip.prefix}`).sort();
      const want = [...req.expected].sort();
      if (have.join(',') !== want.join(',')) {
        throw new IpamError(CNI_ERR.addressMismatch, `${req.containerID} ${req.ifname} holds ${have.join(', ')}, the runtime expects ${want.join(', ')}`);
      }
    }
    for (const ip of alloc.ips) {
      if (!ip.claim && !this.state.blocks.has(ip.block)) throw new IpamError(CNI_ERR.addressMismatch, `${ip.address} is in block ${ip.block}, which this node no longer holds`);
    }
  }

  /** CNI GC: releases every handle of the network that the runtime no longer lists. */
  private async cniGc(req: IpamRequest): Promise<number> {
    if (!req.network) throw new IpamError(CNI_ERR.invalidConfig, 'network configuration has no name');
    if (!Array.isArray(req.validAttachments)) throw new IpamError(CNI_ERR.invalidConfig, 'cni.dev/valid-attachments is required for GC');
    const valid = new Set(req.validAttachments.map((a) => handleKey(req.network, a.containerID, a.ifname)));
    let released = 0;
    for (const [key, a] of [...this.state.allocations]) {
      if (a.network !== req.network || valid.has(key) || this.inflight.has(key)) continue;
      if (await this.serial(key, () => this.release(key, 'cni-gc'))) released++;
    }
    return released;
  }

  private status(req: IpamRequest): void {
    if (this.poolProblems.length) throw new IpamError(CNI_ERR.pluginNotAvailable, this.poolProblems.join('; '));
    const wanted = req.pool ? this.pools.get(req.pool) : this.defaultPool();
    if (!wanted) throw new IpamError(CNI_ERR.pluginNotAvailable, req.pool ? `IPPool ${req.pool} does not exist` : `no IPPool selects node ${this.nodeName}`);
  }

  // ---- pools ----

  private async refreshPools(): Promise<void> {
    const objs = await this.api.list(PLURALS.pools);
    const pools = new Map<string, Pool>();
    const problems: string[] = [];
    for (const obj of objs) {
      try {
        const p = parsePool(obj);
        pools.set(p.name, p);
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
    for (const [a, b] of overlappingPools([...pools.values()])) {
      problems.push(`IPPool ${a} and IPPool ${b} overlap; neither is used`);
      pools.delete(a);
      pools.delete(b);
    }
    if (problems.length) this.log.error({ problems }, 'invalid IPPools');
    this.pools = pools;
    this.poolProblems = problems;
    try {
      this.nodeLabels = (await this.api.getNode(this.nodeName))?.labels ?? {};
    } catch (err) {
      this.log.warn({ err }, 'reading this Node for pool node selectors failed');
    }
  }

  private defaultPool(): Pool | undefined {
    return [...this.pools.values()].sort((a, b) => (a.name < b.name ? -1 : 1)).find((p) => poolSelectsNode(p, this.nodeLabels));
  }

  private async poolFor(name: string | undefined): Promise<Pool> {
    let pool = name ? this.pools.get(name) : this.defaultPool();
    if (!pool) {
      await this.refreshPools();
      pool = name ? this.pools.get(name) : this.defaultPool();
    }
    if (!pool) {
      throw new IpamError(CNI_ERR.invalidConfig, name ? `ipam.pool: IPPool ${name} does not exist or is invalid` : `no IPPool selects node ${this.nodeName}`);
    }
    if (name && !poolSelectsNode(pool, this.nodeLabels)) throw new IpamError(CNI_ERR.invalidConfig, `ipam.pool: IPPool ${name} does not select node ${this.nodeName}`);
    return pool;
  }

  // ---- blocks ----

  private adoptBlock(obj: KObject): BlockState | undefined {
    const b = readBlock(obj);
    const pool = this.pools.get(b.pool);
    const cidr = parseCidr(b.cidr ?? '');
    const range = pool && cidr ? rangeOf(pool, cidr) : undefined;
    if (!pool || !cidr || !range || blockName(cidr) !== b.name) {
      this.log.error({ block: b.name, pool: b.pool, cidr: b.cidr }, 'IPBlock held by this node matches no range of its pool; not used');
      return undefined;
    }
    const state = new BlockState(b.name, b.uid, b.pool, range, cidr, b.lendFrom);
    this.state.blocks.set(b.name, state);
    this.adoptedSeq.set(b.name, ++this.seq);
    this.lastBlockObject.set(b.name, obj);
    this.taken.add(b.name);
    return state;
  }

  /** Borrowed addresses inside blocks this node holds are never handed out by it. */
  private markForeignClaims(claims: ReturnType<typeof readClaim>[]): void {
    for (const c of claims) {
      if (c.node === this.nodeName) continue;
      const ip = parseIp(c.address ?? '');
      if (!ip) continue;
      for (const b of this.state.blocks.values()) {
        if (!ipInCidr(ip, b.cidr)) continue;
        const o = Number(ip.value - b.cidr.first);
        if (b.used[o] === 1) this.log.error({ address: c.address, claim: c.name, borrower: c.node }, 'an address this node uses is also claimed by another node');
        else b.used[o] = 3;
      }
    }
  }

  /** Claims one more block of the pool and family; false when every block is held. One claim
   * per pool and family runs at a time; concurrent callers share it. */
  private claimBlock(pool: Pool, family: IpFamily): Promise<boolean> {
    const k = `${pool.name}/${family}`;
    let p = this.claiming.get(k);
    if (!p) {
      p = this.claimBlockNow(pool, family).finally(() => this.claiming.delete(k));
      this.claiming.set(k, p);
    }
    return p;
  }

  private async claimBlockNow(pool: Pool, family: IpFamily): Promise<boolean> {
    for (let pass = 0; pass < 2; pass++) {
      for (const range of pool.ranges.filter((r) => r.family === family)) {
        const count = blockCount(range);
        const start = startIndex(`${this.nodeName}/${range.cidr.first}`, count);
        const probes = count < BigInt(MAX_PROBES) ? Number(count) : MAX_PROBES;
        for (let i = 0; i < probes; i++) {
          const cidr = blockCidr(range, (start + BigInt(i)) % count);
          const name = blockName(cidr);
          if (this.taken.has(name)) continue;
          this.alive();
          const won = await this.tryClaim(name, pool, cidr);
          if (won) return true;
        }
      }
      // Every block we knew of was taken: refresh the list once (some may have been released).
      if (pass === 0) {
        const objs = await this.retry('list blocks', () => this.api.list(PLURALS.blocks));
        this.taken.clear();
        for (const o of objs) this.taken.add(o.metadata?.name);
      }
    }
    // No lending here: this node is short of addresses itself.
    return false;
  }

  /** Creates the block's IPBlock. Resolves true only when the API confirms this node holds it. */
  private async tryClaim(name: string, pool: Pool, cidr: ParsedCidr): Promise<boolean> {
    const manifest = blockManifest({ name, pool: pool.name, cidr: formatCidr(cidr), node: this.nodeName });
    for (let attempt = 0; ; attempt++) {
      let obj: KObject | undefined;
      try {
        obj = await this.api.create(PLURALS.blocks, manifest);
      } catch (err) {
        if (!isConflict(err) && !isUnknown(err)) throw err;
        if (isConflict(err)) this.metrics?.conflicts.inc({ kind: 'block' });
        else this.metrics?.retries.inc({ reason: 'block-create-unknown' });
        // Read back: the create may have landed (ours) or another node may hold the block.
        obj = await this.readBack(PLURALS.blocks, name);
        this.alive();
        if (!obj) {
          if (isConflict(err)) continue; // deleted in between: try again
          if (attempt >= BACKOFF_MS.length) throw err;
          await sleep(BACKOFF_MS[attempt]);
          continue;
        }
      }
      this.alive();
      this.taken.add(name);
      const b = readBlock(obj);
      if (b.node !== this.nodeName) {
        this.metrics?.blockClaims.inc({ result: 'lost' });
        return false;
      }
      this.metrics?.blockClaims.inc({ result: 'won' });
      const state = this.state.blocks.get(name) ?? this.adoptBlock(obj);
      if (!state) return false;
      // Addresses borrowed from this block while an earlier holder lent it stay theirs.
      const claims = await this.retry('list claims', () => this.api.list(PLURALS.claims));
      this.markForeignClaims(claims.map(readClaim));
      this.dirtyBlocks.add(name);
      this.schedulePublish();
      this.log.info({ block: name, pool: pool.name }, 'claimed block');
      return true;
    }
  }

  private async reclaimLost(name: string, poolName: string): Promise<void> {
    const pool = this.pools.get(poolName);
    const cidr = parseBlockName(name);
    if (!pool || !cidr) return;
    await this.tryClaim(name, pool, cidr);
    for (const a of this.state.allocations.values()) this.state.markAllocation(a);
  }

  /** GET until answered: the truth about a write whose outcome was unknown. */
  private async readBack(plural: (typeof PLURALS)[keyof typeof PLURALS], name: string): Promise<KObject | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.api.get(plural, name);
      } catch (err) {
        if (!isUnknown(err) || attempt >= READ_BACK_ATTEMPTS) throw err;
        this.metrics?.retries.inc({ reason: 'read-back' });
        await sleep(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]);
        this.alive();
      }
    }
  }

  /** Deletes an object (by uid) and makes sure it is gone. */
  private async deleteConfirmed(plural: (typeof PLURALS)[keyof typeof PLURALS], name: string, uid: string): Promise<void> {
    for (let attempt = 0; ; attempt++) {
      try {
        await this.api.remove(plural, name, uid);
        return;
      } catch (err) {
        if (isConflict(err)) return; // another object of that name now: ours is gone
        if (!isUnknown(err) || attempt >= BACKOFF_MS.length) throw err;
        this.metrics?.retries.inc({ reason: 'delete-unknown' });
        const obj = await this.readBack(plural, name);
        if (!obj || obj.metadata?.uid !== uid) return;
        await sleep(BACKOFF_MS[attempt]);
      }
    }
  }

  private async retry<T>(what: string, fn: () => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!isUnknown(err) || attempt >= BACKOFF_MS.length) throw err;
        this.metrics?.retries.inc({ reason: what });
        await sleep(BACKOFF_MS[attempt]);
        this.alive();
      }
    }
  }

  // ---- borrowing ----

  /** Takes one address from another node's lent range by creating its IPAddressClaim, then
   * checks the block is still the one it lent from and still lends that address (else the claim
   * is dropped: the owner may have taken its tail back). */
  private async borrow(pool: Pool, family: IpFamily, key: string, pod: PodRef | undefined): Promise<AllocatedIp | undefined> {
    const blocks = (await this.retry('list blocks', () => this.api.list(PLURALS.blocks))).map(readBlock);
    const claims = new Set((await this.retry('list claims', () => this.api.list(PLURALS.claims))).map((c) => c.metadata?.name as string));
    for (const b of blocks) {
      if (b.pool !== pool.name || b.node === this.nodeName || b.lendFrom === undefined) continue;
      const cidr = parseCidr(b.cidr ?? '');
      const range = cidr && rangeOf(pool, cidr);
      if (!cidr || !range || cidr.family !== family) continue;
      const size = Number(cidr.last - cidr.first + 1n);
      for (let o = Math.max(0, b.lendFrom); o < size; o++) {
        const value = cidr.first + BigInt(o);
        if (reservedInRange(range, value)) continue;
        const name = addressClaimName(family, value);
        if (claims.has(name)) continue;
        this.alive();
        const address = formatIp(family, value);
        const manifest = claimManifest({ name, pool: pool.name, address, node: this.nodeName, block: b.name, blockUID: b.uid, handle: key, pod });
        const claim = await this.createClaim(manifest, key);
        if (!claim) {
          claims.add(name);
          continue;
        }
        const current = await this.readBack(PLURALS.blocks, b.name);
        const stillLent = current ? readBlock(current).lendFrom : undefined;
        if (!current || current.metadata?.uid !== b.uid || stillLent === undefined || stillLent > o) {
          await this.deleteConfirmed(PLURALS.claims, name, claim.uid);
          continue;
        }
        this.log.info({ address, block: b.name, lender: b.node }, 'borrowed an address');
        return { family, address, prefix: range.cidr.prefix, block: b.name, claim: { name, uid: claim.uid } };
      }
    }
    return undefined;
  }

  private async createClaim(manifest: KObject, key: string): Promise<{ uid: string } | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        const obj = await this.api.create(PLURALS.claims, manifest);
        return { uid: obj.metadata.uid };
      } catch (err) {
        if (!isConflict(err) && !isUnknown(err)) throw err;
        if (isConflict(err)) this.metrics?.conflicts.inc({ kind: 'claim' });
        else this.metrics?.retries.inc({ reason: 'claim-create-unknown' });
        const obj = await this.readBack(PLURALS.claims, manifest.metadata.name);
        if (obj) {
          const c = readClaim(obj);
          return c.node === this.nodeName && c.handle === key ? { uid: c.uid } : undefined;
        }
        if (isConflict(err)) continue;
        if (attempt >= BACKOFF_MS.length) throw err;
        await sleep(BACKOFF_MS[attempt]);
      }
    }
  }

  /** When the pool has no unclaimed block left, this node lends the upper half of the unused
   * tail of each block it holds, keeping at least its watermark of free addresses below the lent
   * part: it stops using those ordinals first, then says so in the block (a conditional update).
   * It takes back what nobody borrowed when it runs short itself (takeBackLent). */
  private async lendIfExhausted(pool: Pool): Promise<void> {
    for (const b of this.state.blocks.values()) {
      if (b.pool !== pool.name) continue;
      const high = b.highWater;
      const target = Math.max(high + Math.ceil((b.limit - high) / 2), high + this.watermarkOf(b.size));
      if (target >= b.limit) continue;
      b.lendFrom = target;
      await this.updateBlock(b.name, (obj) => {
        const current = obj.spec.lendFrom;
        obj.spec.lendFrom = typeof current === 'number' ? Math.min(current, target) : target;
      });
      this.log.info({ block: b.name, lendFrom: target }, 'pool exhausted: lending the unused tail of a block');
    }
  }

  /** This node is out of addresses: the lent tails of its blocks of the pool and family are taken
   * back down to just above the highest address borrowed from each. The block says so first (a
   * conditional update); a borrower whose claim lands later finds the block no longer lends that
   * address and drops the claim; claims already made are re-read and stay theirs. True when
   * addresses came back. */
  private async takeBackLent(pool: Pool, family: IpFamily): Promise<boolean> {
    const lending = this.state.blocksOf(pool.name, family).filter((b) => b.lendFrom !== undefined);
    if (lending.length === 0) return false;
    const borrowed = (await this.retry('list claims', () => this.api.list(PLURALS.claims))).map(readClaim);
    let gained = false;
    for (const b of lending) {
      const ordinals = borrowed.filter((c) => c.block === b.name && c.blockUID === b.uid).map((c) => b.ordinalOf(c.address ?? '') ?? -1);
      const lendFrom = ordinals.length > 0 ? Math.max(...ordinals) + 1 : undefined;
      if (lendFrom !== undefined && lendFrom <= b.lendFrom!) continue;
      await this.updateBlock(b.name, (obj) => {
        if (lendFrom === undefined) delete obj.spec.lendFrom;
        else obj.spec.lendFrom = lendFrom;
      });
      this.markForeignClaims((await this.retry('list claims', () => this.api.list(PLURALS.claims))).map(readClaim));
      b.lendFrom = lendFrom;
      gained = true;
      this.log.info({ block: b.name, lendFrom }, 'out of addresses: took back the unborrowed tail of a lent block');
    }
    return gained;
  }

  private watermarkOf(blockSize: number): number {
    return this.opts.watermark ?? Math.max(1, Math.floor(blockSize / 4));
  }

  /** Read-modify-write of one of this node's blocks, conditioned on resourceVersion. */
  private async updateBlock(name: string, change: (obj: KObject) => void): Promise<void> {
    let obj = this.lastBlockObject.get(name) ?? (await this.readBack(PLURALS.blocks, name));
    for (let attempt = 0; attempt < 20; attempt++) {
      if (!obj || obj.spec?.node !== this.nodeName) {
        this.log.error({ block: name }, 'a block this node holds is gone from the API or held by another node');
        return;
      }
      const next = structuredClone(obj);
      change(next);
      try {
        const stored = await this.api.replace(PLURALS.blocks, next);
        this.lastBlockObject.set(name, stored);
        return;
      } catch (err) {
        if (isConflict(err)) this.metrics?.conflicts.inc({ kind: 'update' });
        else if (isUnknown(err)) this.metrics?.retries.inc({ reason: 'update-unknown' });
        else throw err;
        obj = await this.readBack(PLURALS.blocks, name);
        if (obj) this.lastBlockObject.set(name, obj);
      }
    }
    throw new ApiError(`update ipblocks/${name}: gave up after repeated conflicts`, 409, false);
  }

  // ---- publishing ----

  private schedulePublish(): void {
    if (this.dead || this.publishTimer || this.dirtyBlocks.size === 0) return;
    this.publishTimer = setTimeout(() => {
      this.publishTimer = undefined;
      void this.flushPublish().catch((err) => this.log.warn({ err }, 'publishing allocations failed'));
    }, this.opts.publishDelayMs);
    this.publishTimer.unref();
  }

  /** Writes each changed block's allocations into its status now. */
  async flushPublish(): Promise<void> {
    while (this.publishing) await this.publishing;
    if (this.dead) return;
    this.publishing = (async () => {
      const names = [...this.dirtyBlocks];
      this.dirtyBlocks.clear();
      const byBlock = new Map<string, Record<string, { handle: string; pod?: PodRef }>>();
      for (const n of names) byBlock.set(n, {});
      for (const [key, a] of this.state.allocations) {
        for (const ip of a.ips) {
          const rec = byBlock.get(ip.block);
          if (!rec || ip.claim) continue;
          const o = this.state.blocks.get(ip.block)?.ordinalOf(ip.address);
          if (o !== undefined) rec[String(o)] = { handle: key, ...(a.pod ? { pod: a.pod } : {}) };
        }
      }
      await Promise.all(
        names.map((n) =>
          this.state.blocks.has(n)
            ? this.updateBlock(n, (obj) => {
                obj.status = { allocations: byBlock.get(n) };
              }).catch((err) => {
                this.dirtyBlocks.add(n);
                throw err;
              })
            : Promise.resolve(),
        ),
      );
    })().finally(() => {
      this.publishing = undefined;
      this.schedulePublish();
    });
    await this.publishing;
  }

  // ---- garbage collection ----

  /** One GC pass: pods that no longer exist, claims nobody holds, blocks of deleted Nodes. */
  runGc(): Promise<GcReport> {
    if (!this.gcRunning) this.gcRunning = this.gcNow().finally(() => (this.gcRunning = undefined));
    return this.gcRunning;
  }

  private async gcNow(): Promise<GcReport> {
    const report: GcReport = { pod: 0, node: 0, orphanClaims: 0 };
    await this.refreshPools();
    // Pods: an allocation made before this list started whose pod is not in it is released.
    const listedAt = this.now();
    const pods = await this.api.listPods(this.nodeName);
    const uidOf = new Map(pods.map((p) => [`${p.namespace}/${p.name}`, p.uid]));
    for (const [key, a] of [...this.state.allocations]) {
      if (!a.pod || a.at >= listedAt || this.inflight.has(key)) continue;
      const uid = uidOf.get(`${a.pod.namespace}/${a.pod.name}`);
      const gone = uid === undefined || (a.pod.uid !== undefined && a.pod.uid !== '' && uid !== a.pod.uid);
      if (gone && (await this.serial(key, async () => (this.state.allocations.get(key)?.at ?? listedAt) < listedAt && this.release(key, 'pod')))) report.pod++;
    }
    this.alive();
    // Claims this node made that no allocation holds (a crash between create and record).
    const claims = (await this.api.list(PLURALS.claims)).map(readClaim);
    const held = new Set<string>();
    for (const a of this.state.allocations.values()) for (const ip of a.ips) if (ip.claim) held.add(ip.claim.uid);
    for (const c of claims) {
      if (c.node !== this.nodeName || held.has(c.uid) || this.inflight.has(c.handle)) continue;
      await this.deleteConfirmed(PLURALS.claims, c.name, c.uid);
      this.metrics?.gcReleases.inc({ reason: 'orphan-claim' });
      report.orphanClaims++;
    }
    const listedSeq = ++this.seq;
    const blocks = (await this.api.list(PLURALS.blocks)).map(readBlock);
    this.taken.clear();
    for (const b of blocks) this.taken.add(b.name);
    // A block of ours that the API no longer gives us (released as a deleted Node's, by hand):
    // nothing more is taken from it, and it is claimed back if addresses in it are still held.
    const current = new Map(blocks.map((b) => [b.name, b]));
    for (const [name, b] of [...this.state.blocks]) {
      const now = current.get(name);
      if ((now && now.node === this.nodeName && now.uid === b.uid) || (this.adoptedSeq.get(name) ?? 0) > listedSeq) continue;
      this.state.blocks.delete(name);
      this.lastBlockObject.delete(name);
      this.log.error({ block: name, holder: now?.node }, 'a block this node held is gone from the API; no more addresses are taken from it');
      const stillHeld = [...this.state.allocations.values()].find((a) => a.ips.some((ip) => !ip.claim && ip.block === name));
      if (stillHeld && !now) await this.reclaimLost(name, stillHeld.pool).catch((err) => this.log.error({ err, block: name }, 'reclaiming block failed'));
    }
    if (this.opts.nodeGc) report.node = await this.nodeGc(claims, blocks);
    if (this.wal?.bloated) await this.wal.compact(this.state.allocations);
    for (const pool of this.pools.values()) {
      if (poolExhausted(pool, this.taken)) await this.lendIfExhausted(pool);
    }
    return report;
  }

  /** Releases the blocks and claims of Nodes deleted for longer than the grace period, when no
   * pod is bound to them. Done by one agent: the one on the first live Node (by name) that holds
   * blocks, so a hundred agents do not race to delete the same objects. */
  private async nodeGc(claims: ReturnType<typeof readClaim>[], blocks: ReturnType<typeof readBlock>[]): Promise<number> {
    let nodes: NodeInfo[];
    try {
      nodes = await this.api.listNodes();
    } catch (err) {
      this.log.warn({ err }, 'listing Nodes failed; blocks of deleted nodes are kept for now');
      return 0;
    }
    const live = new Set(nodes.map((n) => n.name));
    const holders = [...new Set(blocks.map((b) => b.node))].filter((n) => live.has(n)).sort();
    for (const n of [...this.missingNodes.keys()]) if (live.has(n)) this.missingNodes.delete(n);
    const now = this.now();
    const dead = new Set<string>();
    for (const n of new Set([...blocks.map((b) => b.node), ...claims.map((c) => c.node)])) {
      if (live.has(n) || n === this.nodeName) continue;
      const since = this.missingNodes.get(n) ?? now;
      this.missingNodes.set(n, since);
      if (now - since >= this.opts.nodeGraceMs) dead.add(n);
    }
    if (dead.size === 0 || holders[0] !== this.nodeName) return 0;
    let pods: PodInfo[] = [];
    pods = await this.api.listPods();
    for (const p of pods) if (p.nodeName) dead.delete(p.nodeName);
    let released = 0;
    for (const c of claims) {
      if (!dead.has(c.node)) continue;
      await this.deleteConfirmed(PLURALS.claims, c.name, c.uid);
      this.metrics?.gcReleases.inc({ reason: 'node' });
      released++;
    }
    for (const b of blocks) {
      if (!dead.has(b.node)) continue;
      await this.deleteConfirmed(PLURALS.blocks, b.name, b.uid);
      this.taken.delete(b.name);
      this.metrics?.gcReleases.inc({ reason: 'node' });
      this.log.info({ block: b.name, node: b.node }, 'released the block of a deleted Node');
      released++;
    }
    return released;
  }

  // ---- introspection ----

  usage(): IpamUsage[] {
    const rows = new Map<string, IpamUsage>();
    for (const b of this.state.blocks.values()) {
      const k = `${b.pool}/${b.family}`;
      const row = rows.get(k) ?? { pool: b.pool, family: b.family, blocks: 0, inUse: 0, free: 0 };
      row.blocks++;
      row.free += b.free;
      rows.set(k, row);
    }
    for (const a of this.state.allocations.values()) {
      for (const ip of a.ips) {
        const k = `${a.pool}/${ip.family}`;
        const row = rows.get(k) ?? { pool: a.pool, family: ip.family, blocks: 0, inUse: 0, free: 0 };
        row.inUse++;
        rows.set(k, row);
      }
    }
    return [...rows.values()];
  }
}

/** A record that could not be written fails the request with an I/O error (CNI code 5). */
function recordingFailed(err: unknown): Error {
  return err instanceof WalError ? new IpamError(CNI_ERR.ioFailure, err.message) : (err as Error);
}

function toReplyIp(ip: AllocatedIp): IpamIp {
  return { address: `${ip.address}/${ip.prefix}`, family: ip.family };
}

function podOf(args: Record<string, string> | undefined): PodRef | undefined {
  const namespace = args?.K8S_POD_NAMESPACE;
  const name = args?.K8S_POD_NAME;
  if (!namespace || !name) return undefined;
  const uid = args?.K8S_POD_UID;
  return { namespace, name, ...(uid ? { uid } : {}) };
}

/** The block CIDR encoded in an IPBlock name (the inverse of blockName). */
export function parseBlockName(name: string): ParsedCidr | undefined {
  const m = /^(v4|v6)-(.+)-(\d+)$/.exec(name);
  if (!m) return undefined;
  const parts = m[2].split('-');
  const text = m[1] === 'v4' ? parts.join('.') : parts.join(':');
  return parseCidr(`${text}/${m[3]}`);
}

/** True when every block of the pool is known taken (only decidable for small ranges). */
function poolExhausted(pool: Pool, taken: Set<string>): boolean {
  for (const r of pool.ranges) {
    const count = blockCount(r);
    if (count > 65536n) return false;
    for (let i = 0n; i < count; i++) if (!taken.has(blockName(blockCidr(r, i)))) return false;
  }
  return true;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
