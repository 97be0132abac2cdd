/** The CNI plugin's requests as they come off the socket (ADD, DEL, CHECK, GC, STATUS): checked,
 * serialised per handle, answered with a CNI result or error code.
 *
 * Invariants: every field of a request is checked before any is used (the socket's bytes are
 * untrusted); a request never throws to the socket, it is answered (an unexpected failure is
 * logged and answered "try again later"); nothing is answered once the service stopped; work on
 * one handle runs one request at a time. */
import { CNI_ERR, IpamIp, IpamReply, IpamRequest } from '../cni/protocol';
import { Allocator } from './allocator';
import { IpamContext, IpamError } from './context';
import { HandleQueue } from './handle-queue';
import { PoolError } from './pool';
import { PoolCatalog } from './pool-catalog';
import { RequestProblem, requestProblem } from './request';
import { AllocatedIp, Allocation, BlockState, handleKey } from './state';

export interface RequestParts {
  allocator: Allocator;
  pools: PoolCatalog;
  queue: HandleQueue;
}

function toReplyIp(ip: AllocatedIp): IpamIp {
  return { address: `${ip.address}/${ip.prefix}`, family: ip.family };
}

/** CNI CHECK of one attachment against what this node holds for it: its allocation exists, holds
 * the addresses the runtime expects (when it says), and each is still in a block this node
 * holds. The problem, or undefined. Pure. */
export function checkProblem(req: IpamRequest, alloc: Allocation | undefined, blocks: ReadonlyMap<string, BlockState>): RequestProblem | undefined {
  if (!alloc) return { code: CNI_ERR.containerUnknown, msg: `no addresses are allocated to ${req.containerID} ${req.ifname} on network ${req.network}` };
  if (req.expected) {
    const have = alloc.ips.map((ip) => `${ip.address}/${ip.prefix}`).sort();
    const want = [...req.expected].sort();
    if (have.join(',') !== want.join(',')) {
      return { code: CNI_ERR.addressMismatch, msg: `${req.containerID} ${req.ifname} holds ${have.join(', ')}, the runtime expects ${want.join(', ')}` };
    }
  }
  for (const ip of alloc.ips) {
    if (!ip.claim && !blocks.has(ip.block)) return { code: CNI_ERR.addressMismatch, msg: `${ip.address} is in block ${ip.block}, which this node no longer holds` };
  }
  return undefined;
}

export class CniRequests {
  constructor(
    private readonly ctx: IpamContext,
    private readonly parts: RequestParts,
  ) {}

  async handle(req: IpamRequest): Promise<IpamReply> {
    // The socket's bytes are untrusted: every field is checked before any is used.
    const bad = requestProblem(req);
    if (bad) return { ok: false, ...bad };
    try {
      if (this.ctx.life.stopped) throw new IpamError(CNI_ERR.tryAgainLater, 'the ipam agent is stopping');
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
          return { ok: true, released: await this.gc(req) };
        case 'STATUS':
          this.parts.pools.checkAvailable(req.pool);
          return { ok: true };
        default:
          throw new IpamError(CNI_ERR.invalidEnv, `unknown command ${JSON.stringify((req as { command?: unknown }).command)}`);
      }
    } catch (err) {
      if (err instanceof IpamError) return { ok: false, code: err.code, msg: err.message };
      if (err instanceof PoolError) return { ok: false, code: CNI_ERR.invalidConfig, msg: err.message };
      this.ctx.log.error({ err, command: req.command, containerID: req.containerID }, 'ipam request failed');
      return { ok: false, code: CNI_ERR.tryAgainLater, msg: `ipam: ${(err as Error).message}` };
    }
  }

  private keyOf(req: IpamRequest): string {
    if (!req.network) throw new IpamError(CNI_ERR.invalidConfig, 'network configuration has no name');
    if (!req.containerID) throw new IpamError(CNI_ERR.invalidEnv, 'CNI_CONTAINERID is required');
    if (!req.ifname) throw new IpamError(CNI_ERR.invalidEnv, 'CNI_IFNAME is required');
    return handleKey(req.network, req.containerID, req.ifname);
  }

  private async add(req: IpamRequest): Promise<IpamIp[]> {
    const key = this.keyOf(req);
    const t0 = performance.now();
    try {
      const ips = await this.parts.queue.run(key, () => this.parts.allocator.add(key, req));
      this.ctx.metrics?.allocationDuration.observe({ result: 'ok' }, (performance.now() - t0) / 1000);
      return ips.map(toReplyIp);
    } catch (err) {
      this.ctx.metrics?.allocationDuration.observe({ result: 'error' }, (performance.now() - t0) / 1000);
      throw err;
    }
  }

  private async del(req: IpamRequest): Promise<void> {
    const key = this.keyOf(req);
    await this.parts.queue.run(key, () => this.parts.allocator.release(key, 'del'));
  }

  private check(req: IpamRequest): void {
    const key = this.keyOf(req);
    const problem = checkProblem(req, this.ctx.state.allocations.get(key), this.ctx.state.blocks);
    if (problem) throw new IpamError(problem.code, problem.msg);
  }

  /** CNI GC: releases every handle of the network that the runtime no longer lists. */
  private async gc(req: IpamRequest): Promise<number> {
    if (!req.network) throw new IpamError(CNI_ERR.invalidConfig, 'network configuration has no name');
    if (!Array.isArray(req.validAttachments)) throw new IpamError(CNI_ERR.invalidConfig, 'cni.dev/valid-attachments is required for GC');
    const valid = new Set(req.validAttachments.map((a) => handleKey(req.network, a.containerID, a.ifname)));
    let released = 0;
    for (const [key, a] of [...this.ctx.state.allocations]) {
      if (a.network !== req.network || valid.has(key) || this.parts.allocator.inflight.has(key)) continue;
      if (await this.parts.queue.run(key, () => this.parts.allocator.release(key, 'cni-gc'))) released++;
    }
    return released;
  }
}
