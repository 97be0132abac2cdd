/** Garbage collection, periodic and on demand: allocations whose pod is gone, claims this node
 * made that no allocation holds, held blocks the API no longer gives this node, and the blocks
 * and claims of Nodes deleted for longer than a grace period; then lending when a pool is full.
 *
 * Invariants: a live pod's address is never released: an allocation is judged only by a pod list
 * that began after it was made, and the release re-checks that under the handle's queue; an
 * inflight handle is never judged; a claim is deleted as an orphan only if no allocation holds it
 * and no ADD under way may, judged after every await (an ADD recording meanwhile keeps its
 * claim); a deleted Node's objects are released only after the grace period, only while no pod
 * is bound to it, and by one agent alone (the first live Node, by name, that holds blocks). One
 * pass runs at a time. */
import { Allocator } from './allocator';
import { ApiNode, ApiPod } from './api';
import { BlockClaims } from './block-claims';
import { ConfirmedApi } from './confirmed-api';
import { IpamContext } from './context';
import { HandleQueue } from './handle-queue';
import { AllocationLedger } from './ledger';
import { Lending } from './lending';
import { BlockObject, ClaimObject, PLURALS, PodRef, readBlock, readClaim } from './objects';
import { PoolCatalog } from './pool-catalog';
import { Allocation } from './state';

export interface GcReport {
  pod: number;
  node: number;
  orphanClaims: number;
}

export interface GcOptions {
  /** How long a Node must stay deleted before its blocks are released. */
  nodeGraceMs: number;
  /** Release blocks of deleted Nodes. */
  nodeGc: boolean;
}

export interface GcParts {
  confirmed: ConfirmedApi;
  pools: PoolCatalog;
  blocks: BlockClaims;
  lending: Lending;
  ledger: AllocationLedger;
  allocator: Allocator;
  queue: HandleQueue;
}

/** Whether a pod list (namespace/name -> uid) shows the pod gone: absent, or there with another
 * uid (a new pod of the same name). Pure. */
export function podGone(pod: PodRef, uidOf: ReadonlyMap<string, string>): boolean {
  const uid = uidOf.get(`${pod.namespace}/${pod.name}`);
  return uid === undefined || (pod.uid !== undefined && pod.uid !== '' && uid !== pod.uid);
}

/** The uids of the claims the node's allocations hold. Pure. */
export function heldClaimUids(allocations: Iterable<Allocation>): Set<string> {
  const held = new Set<string>();
  for (const a of allocations) for (const ip of a.ips) if (ip.claim) held.add(ip.claim.uid);
  return held;
}

/** A claim this node made that no allocation holds and no ADD under way may yet. Pure. */
export function isOrphanClaim(c: ClaimObject, nodeName: string, held: ReadonlySet<string>, inflight: ReadonlySet<string>): boolean {
  return c.node === nodeName && !held.has(c.uid) && !inflight.has(c.handle);
}

/** The agent that releases deleted Nodes' objects: the first live Node, by name, holding blocks. */
export function nodeGcLeader(blocks: BlockObject[], live: ReadonlySet<string>): string | undefined {
  return [...new Set(blocks.map((b) => b.node))].filter((n) => live.has(n)).sort()[0];
}

/** Since when each Node that holds objects has been missing from the Node list. */
export class NodeAbsence {
  private readonly since = new Map<string, number>();

  constructor(private readonly graceMs: number) {}

  /** The holders missing from `live` for at least the grace period, as of `now` (this node
   * excepted); a Node seen live again starts over. */
  overdue(live: ReadonlySet<string>, holders: Iterable<string>, self: string, now: number): Set<string> {
    for (const n of [...this.since.keys()]) if (live.has(n)) this.since.delete(n);
    const overdue = new Set<string>();
    for (const n of new Set(holders)) {
      if (live.has(n) || n === self) continue;
      const since = this.since.get(n) ?? now;
      this.since.set(n, since);
      if (now - since >= this.graceMs) overdue.add(n);
    }
    return overdue;
  }
}

export class GarbageCollector {
  private running?: Promise<GcReport>;
  private timer?: NodeJS.Timeout;
  private readonly absence: NodeAbsence;

  constructor(
    private readonly ctx: IpamContext,
    private readonly parts: GcParts,
    private readonly opts: GcOptions,
  ) {
    this.absence = new NodeAbsence(opts.nodeGraceMs);
  }

  /** Runs a pass every intervalMs (none when 0). */
  startTimer(intervalMs: number): void {
    if (intervalMs <= 0) return;
    this.timer = setInterval(() => void this.run().catch((err) => this.ctx.log.warn({ err }, 'ipam gc failed')), intervalMs);
    this.timer.unref();
  }

  stopTimer(): void {
    clearInterval(this.timer);
  }

  /** The pass under way, if any. */
  get current(): Promise<GcReport> | undefined {
    return this.running;
  }

  /** One GC pass: pods that no longer exist, claims nobody holds, blocks of deleted Nodes. */
  run(): Promise<GcReport> {
    if (!this.running) this.running = this.pass().finally(() => (this.running = undefined));
    return this.running;
  }

  private async pass(): Promise<GcReport> {
    const { api, nodeName, state } = this.ctx;
    const report: GcReport = { pod: 0, node: 0, orphanClaims: 0 };
    await this.parts.pools.refresh();
    report.pod = await this.releaseGonePods();
    this.ctx.life.alive();
    // Claims this node made that no allocation holds (a crash between create and record).
    const claims = (await api.list(PLURALS.claims)).map(readClaim);
    let held = heldClaimUids(state.allocations.values());
    for (const c of claims) {
      if (!isOrphanClaim(c, nodeName, held, this.parts.allocator.inflight)) continue;
      await this.parts.confirmed.deleteConfirmed(PLURALS.claims, c.name, c.uid);
      this.ctx.metrics?.gcReleases.inc({ reason: 'orphan-claim' });
      report.orphanClaims++;
      // An ADD in flight at the list may have recorded its claim (and left inflight) meanwhile.
      held = heldClaimUids(state.allocations.values());
    }
    const listSeq = this.parts.blocks.beginList();
    const blocks = (await api.list(PLURALS.blocks)).map(readBlock);
    await this.parts.blocks.judgeListed(blocks, listSeq);
    if (this.opts.nodeGc) report.node = await this.releaseDeletedNodes(claims, blocks);
    await this.parts.ledger.compactIfBloated();
    for (const pool of this.parts.pools.all()) {
      if (this.parts.blocks.exhausted(pool)) await this.parts.lending.lendIfExhausted(pool);
    }
    return report;
  }

  /** Pods: an allocation made before this list started whose pod is not in it is released. */
  private async releaseGonePods(): Promise<number> {
    const { allocations } = this.ctx.state;
    const listedAt = this.ctx.now();
    const pods = await this.ctx.api.listPods(this.ctx.nodeName);
    const uidOf = new Map(pods.map((p) => [`${p.namespace}/${p.name}`, p.uid]));
    let released = 0;
    for (const [key, a] of [...allocations]) {
      if (!a.pod || a.at >= listedAt || this.parts.allocator.inflight.has(key)) continue;
      const stillOlder = async () => (allocations.get(key)?.at ?? listedAt) < listedAt && this.parts.allocator.release(key, 'pod');
      if (podGone(a.pod, uidOf) && (await this.parts.queue.run(key, stillOlder))) released++;
    }
    return released;
  }

  /** Releases the blocks and claims of Nodes deleted for longer than the grace period, when no
   * pod is bound to them. Done by one agent: the one on the first live Node (by name) that holds
   * blocks, so a hundred agents do not race to delete the same objects. */
  private async releaseDeletedNodes(claims: ClaimObject[], blocks: BlockObject[]): Promise<number> {
    let nodes: ApiNode[];
    try {
      nodes = await this.ctx.api.listNodes();
    } catch (err) {
      this.ctx.log.warn({ err }, 'listing Nodes failed; blocks of deleted nodes are kept for now');
      return 0;
    }
    const live = new Set(nodes.map((n) => n.name));
    const leader = nodeGcLeader(blocks, live);
    const dead = this.absence.overdue(live, [...blocks.map((b) => b.node), ...claims.map((c) => c.node)], this.ctx.nodeName, this.ctx.now());
    if (dead.size === 0 || leader !== this.ctx.nodeName) return 0;
    const pods: ApiPod[] = await this.ctx.api.listPods();
    for (const p of pods) if (p.nodeName) dead.delete(p.nodeName);
    let released = 0;
    for (const c of claims) {
      if (!dead.has(c.node)) continue;
      await this.parts.confirmed.deleteConfirmed(PLURALS.claims, c.name, c.uid);
      this.ctx.metrics?.gcReleases.inc({ reason: 'node' });
      released++;
    }
    for (const b of blocks) {
      if (!dead.has(b.node)) continue;
      await this.parts.confirmed.deleteConfirmed(PLURALS.blocks, b.name, b.uid);
      this.parts.blocks.noteReleased(b.name);
      this.ctx.metrics?.gcReleases.inc({ reason: 'node' });
      this.ctx.log.info({ block: b.name, node: b.node }, 'released the block of a deleted Node');
      released++;
    }
    return released;
  }
}
