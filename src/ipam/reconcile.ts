/** Start-up reconciliation of the local record with what the API publishes: an address a block's
 * status.allocations (or an IPAddressClaim of this node) gives to a handle the local record lacks
 * (the record was lost, moved or restored from an old copy) is held for that handle, as an
 * allocation GC can judge (by its pod, or by the runtime's CNI GC list), never handed to another
 * pod. Pure: IpamService reads the API and records the result. */
import { IpFamily, ipInCidr, parseIp } from '../net/ip';
import { ClaimObject, PodRef } from './objects';
import { Pool } from './pool';
import { AllocatedIp, Allocation, BlockState } from './state';

/** A published block: the node's state of it and its status.allocations as the API holds them. */
export interface PublishedBlock {
  block: BlockState;
  allocations: unknown;
}

/** network/containerID/ifname back from a handle key (the network name may hold "/"). */
export function parseHandleKey(key: string): { network: string; containerID: string; ifname: string } | undefined {
  const parts = key.split('/');
  if (parts.length < 3) return undefined;
  const ifname = parts.pop()!;
  const containerID = parts.pop()!;
  const network = parts.join('/');
  return network && containerID && ifname ? { network, containerID, ifname } : undefined;
}

function podRef(v: unknown): PodRef | undefined {
  if (typeof v !== 'object' || v === null) return undefined;
  const p = v as Record<string, unknown>;
  if (typeof p.namespace !== 'string' || typeof p.name !== 'string') return undefined;
  return { namespace: p.namespace, name: p.name, ...(typeof p.uid === 'string' && p.uid ? { uid: p.uid } : {}) };
}

export interface Reconciled {
  /** Allocations for handles only the API knows, keyed by handle. */
  adopted: Map<string, Allocation>;
  /** Published entries that cannot be adopted (malformed, or naming an address the record gives
   * to another handle), for the log. */
  problems: string[];
}

export function reconcilePublished(blocks: PublishedBlock[], claims: ClaimObject[], pools: Pick<ReadonlyMap<string, Pool>, 'get'>, local: Map<string, Allocation>, nodeName: string): Reconciled {
  const adopted = new Map<string, Allocation>();
  const problems: string[] = [];
  const held = new Set<string>();
  for (const a of local.values()) for (const ip of a.ips) held.add(ip.address);
  const hold = (key: string, pool: string, pod: PodRef | undefined, ip: AllocatedIp, where: string) => {
    if (local.has(key)) return; // the record is the truth for its own handles
    const handle = parseHandleKey(key);
    if (!handle) return void problems.push(`${where}: handle ${JSON.stringify(key)} is not network/containerID/ifname`);
    if (held.has(ip.address)) return void problems.push(`${where}: ${ip.address} is published for ${key} but recorded for another handle`);
    held.add(ip.address);
    const a = adopted.get(key) ?? { ...handle, pool, ips: [], ...(pod ? { pod } : {}), at: 0 };
    a.ips.push(ip);
    adopted.set(key, a);
  };
  for (const { block, allocations } of blocks) {
    if (typeof allocations !== 'object' || allocations === null) continue;
    for (const [ordinalText, entry] of Object.entries(allocations as Record<string, unknown>)) {
      const where = `IPBlock ${block.name} status.allocations[${JSON.stringify(ordinalText)}]`;
      const ordinal = Number(ordinalText);
      const e = entry as Record<string, unknown> | null;
      if (!/^\d+$/.test(ordinalText) || ordinal >= block.size || typeof e?.handle !== 'string') {
        problems.push(`${where} is not an ordinal of the block with a handle`);
        continue;
      }
      hold(e.handle, block.pool, podRef(e.pod), { family: block.family, address: block.address(ordinal), prefix: block.range.cidr.prefix, block: block.name }, where);
    }
  }
  for (const c of claims) {
    if (c.node !== nodeName || typeof c.handle !== 'string') continue;
    const ip = parseIp(c.address ?? '');
    const range = ip && pools.get(c.pool)?.ranges.find((r) => r.family === ip.family && ipInCidr(ip, r.cidr));
    if (!ip || !range) {
      problems.push(`IPAddressClaim ${c.name}: ${JSON.stringify(c.address)} is in no range of IPPool ${c.pool}`);
      continue;
    }
    const family: IpFamily = ip.family;
    hold(c.handle, c.pool, podRef(c.pod), { family, address: c.address, prefix: range.cidr.prefix, block: c.block, claim: { name: c.name, uid: c.uid } }, `IPAddressClaim ${c.name}`);
  }
  return { adopted, problems };
}
