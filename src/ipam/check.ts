/** Cluster-wide IPAM audit from the API alone: pools, blocks (with the allocations their owners
 * publish), address claims, pods and nodes. Pure: the caller fetches, this judges.
 * - duplicate: one address held twice (two allocations, an allocation and a claim, overlapping
 *   blocks or pools, two live pods whose status.podIPs share a pool address, a pod using an
 *   address published for another pod);
 * - leak: an address held for a pod that no longer exists (or exists with another uid);
 * - orphan: a block or claim of a Node that no longer exists, or a block outside every pool. */
import { formatIp, ipInCidr, parseCidr, parseIp } from '../net/ip';
import { ApiNode, ApiPod } from './api';
import { BlockObject, ClaimObject, KObject, PodRef, readBlock, readClaim } from './objects';
import { overlappingPools, overlaps, parsePool, Pool, rangeOf } from './pool';

export interface Finding {
  kind: 'duplicate' | 'leak' | 'orphan' | 'invalid';
  message: string;
}

export interface ClusterView {
  pools: KObject[];
  blocks: KObject[];
  claims: KObject[];
  pods: ApiPod[];
  /** Undefined when Nodes could not be read: orphan checks are skipped, not guessed. */
  nodes?: ApiNode[];
}

export interface HeldAddress {
  address: string;
  holder: string;
  pod?: PodRef;
  via: string;
}

/** Every address the API says is held, with who holds it. */
export function heldAddresses(blocks: BlockObject[], claims: ClaimObject[]): HeldAddress[] {
  const out: HeldAddress[] = [];
  for (const b of blocks) {
    const cidr = parseCidr(b.cidr ?? '');
    if (!cidr) continue;
    for (const [ordinal, a] of Object.entries(b.allocations)) {
      out.push({ address: formatIp(cidr.family, cidr.first + BigInt(ordinal)), holder: `${b.node} ${a.handle}`, pod: a.pod, via: `IPBlock ${b.name}` });
    }
  }
  for (const c of claims) out.push({ address: c.address, holder: `${c.node} ${c.handle}`, pod: c.pod, via: `IPAddressClaim ${c.name}` });
  return out;
}

/** What the published allocations cannot show once an owner has overwritten them (a lost local
 * record): two live pods using one pool address, or a pod using an address published for
 * another live pod. Addresses outside every pool (other networks) are not judged. */
function podAddressDuplicates(pods: ApiPod[], pools: Pool[], byAddress: Map<string, HeldAddress[]>): Finding[] {
  const findings: Finding[] = [];
  const users = new Map<string, { text: string; pods: string[] }>();
  const live = new Set(pods.map((p) => `${p.namespace}/${p.name}`));
  for (const p of pods) {
    for (const text of p.ips ?? []) {
      const ip = parseIp(text);
      if (!ip || !pools.some((pool) => pool.ranges.some((r) => ipInCidr(ip, r.cidr)))) continue;
      const key = `${ip.family}/${ip.value}`;
      const u = users.get(key) ?? { text, pods: [] };
      u.pods.push(`${p.namespace}/${p.name}`);
      users.set(key, u);
    }
  }
  for (const [key, u] of users) {
    if (u.pods.length > 1) findings.push({ kind: 'duplicate', message: `${u.text} is the address of ${u.pods.length} pods: ${u.pods.join(', ')}` });
    for (const h of byAddress.get(key) ?? []) {
      // A pod that is gone is a leak (reported below), not a second user.
      const other = h.pod && live.has(`${h.pod.namespace}/${h.pod.name}`) && !u.pods.includes(`${h.pod.namespace}/${h.pod.name}`);
      if (other) findings.push({ kind: 'duplicate', message: `${u.text} is held for pod ${h.pod!.namespace}/${h.pod!.name} (${h.via}, ${h.holder}) but pod ${u.pods.join(', ')} uses it` });
    }
  }
  return findings;
}

export function auditCluster(view: ClusterView): Finding[] {
  const findings: Finding[] = [];
  const pools: Pool[] = [];
  for (const p of view.pools) {
    try {
      pools.push(parsePool(p));
    } catch (err) {
      findings.push({ kind: 'invalid', message: (err as Error).message });
    }
  }
  for (const [a, b] of overlappingPools(pools)) findings.push({ kind: 'duplicate', message: `IPPool ${a} and IPPool ${b} overlap: the same address can be handed out twice` });
  const blocks = view.blocks.map(readBlock);
  const claims = view.claims.map(readClaim);
  const parsed = blocks.map((b) => ({ b, cidr: parseCidr(b.cidr ?? '') }));
  for (let i = 0; i < parsed.length; i++) {
    const { b, cidr } = parsed[i];
    if (!cidr) {
      findings.push({ kind: 'invalid', message: `IPBlock ${b.name}: spec.cidr ${JSON.stringify(b.cidr)} is not a CIDR` });
      continue;
    }
    const pool = pools.find((p) => p.name === b.pool);
    if (!pool || !rangeOf(pool, cidr)) findings.push({ kind: 'orphan', message: `IPBlock ${b.name} (${b.cidr}) is in no range of IPPool ${b.pool}` });
    for (let j = i + 1; j < parsed.length; j++) {
      const other = parsed[j];
      if (other.cidr && overlaps(cidr, other.cidr)) findings.push({ kind: 'duplicate', message: `IPBlock ${b.name} (${b.node}) overlaps IPBlock ${other.b.name} (${other.b.node})` });
    }
  }
  const byAddress = new Map<string, HeldAddress[]>();
  for (const h of heldAddresses(blocks, claims)) {
    const ip = parseIp(h.address);
    const key = ip ? `${ip.family}/${ip.value}` : h.address;
    byAddress.set(key, [...(byAddress.get(key) ?? []), h]);
  }
  for (const holders of byAddress.values()) {
    if (holders.length > 1) findings.push({ kind: 'duplicate', message: `${holders[0].address} is held ${holders.length} times: ${holders.map((h) => `${h.holder} (${h.via})`).join('; ')}` });
  }
  findings.push(...podAddressDuplicates(view.pods, pools, byAddress));
  const pods = new Map(view.pods.map((p) => [`${p.namespace}/${p.name}`, p.uid]));
  for (const holders of byAddress.values()) {
    for (const h of holders) {
      if (!h.pod) continue;
      const uid = pods.get(`${h.pod.namespace}/${h.pod.name}`);
      if (uid === undefined || (h.pod.uid && uid !== h.pod.uid)) {
        findings.push({ kind: 'leak', message: `${h.address} is held for pod ${h.pod.namespace}/${h.pod.name}, which no longer exists (${h.via}, ${h.holder})` });
      }
    }
  }
  if (view.nodes) {
    const nodes = new Set(view.nodes.map((n) => n.name));
    for (const b of blocks) if (!nodes.has(b.node)) findings.push({ kind: 'orphan', message: `IPBlock ${b.name} (${b.cidr}) is held by node ${b.node}, which does not exist` });
    for (const c of claims) if (!nodes.has(c.node)) findings.push({ kind: 'orphan', message: `IPAddressClaim ${c.name} (${c.address}) is held by node ${c.node}, which does not exist` });
  }
  return findings;
}
