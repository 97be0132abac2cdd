/** Renders services into the proxy's own table, in kube-proxy's nftables layout
 * (pkg/proxy/nftables/proxier.go), both families in one `inet` table:
 *
 *   filter-prerouting/input/forward/output  filter hooks at dstnat-10: `ct state new` jumps to
 *       firewall-check (prerouting, output) and endpoints-check (input, forward, output), which
 *       dispatch through @firewall-ips-vN and @no-endpoint-services-vN / @no-endpoint-nodeports-vN;
 *       forward and filter-output-post-dnat (dstnat+10) jump to cluster-ips-check, which rejects what
 *       is still addressed to a cluster IP (@cluster-ips-vN): a port its Service does not define
 *   nat-prerouting/output (dstnat) -> services: `ip daddr . meta l4proto . th dport vmap
 *       @service-ips-v4`, `ip daddr @nodeport-ips-v4 fib daddr type local meta l4proto . th dport
 *       vmap @service-nodeports-v4`, and the same for IPv6
 *   nat-postrouting (srcnat) -> masquerading: masquerade hairpin traffic (`ct status dnat ip saddr .
 *       ip daddr @hairpin-vN`: a pod DNATed to itself) and what mark-for-masquerade marked
 *   per service port and family: service-… (Cluster policy endpoints), local-… (Local policy),
 *       external-… (NodePort, externalIPs, load-balancer IPs), firewall-… (source ranges)
 *
 * The difference from kube-proxy is the endpoint choice, built so an endpoint change is element
 * messages only, flat in the number of services. A kernel commit that adds a rule, or a map
 * element that jumps, re-validates every chain reachable from the table's base chains
 * (nft_table_validate): O(table), ~10 ms at 1k services; and the kernel finds a set by name in a
 * list, so per-service sets make every element message O(services); and an interval set's commit
 * walks all its elements (nft_rbtree_commit), so one map for all services is O(endpoints); a
 * concatenated `id . draw` interval key would take one element per range instead of two, but
 * nft_set_pipapo re-expands its lookup tables per element: a change costs 25-200x the rbtree's
 * (bench/proxy-layout.bench.ts). So each load-balancing chain has a draw slot, a hash of its
 * name: one of 512 blocks and a 16-bit id in it. It DNATs in one fixed rule, as nft writes `dnat ip to numgen random mod 65536 offset
 * <id << 16> map @endpoint-draws-vN-B`: the draw (key = id . draw, in network order) looked up in
 * its block's interval map, whose elements give each endpoint an equal share of the chain's draws
 * and map it to `address . port`, which the lookup writes to consecutive registers for the nat
 * expression. Endpoints come and go as elements of that map and of @hairpin-vN, neither of which
 * jumps. A chain without a draw slot (sessionAffinity ClientIP, or a slot another chain also hashes to: rare,
 * and decided by the set of chains alone, so a full render equals the incremental one) keeps
 * kube-proxy's layout (numgen vmap to endpoint-…__ip/port chains that record and honour the
 * client's affinity set). Every object a service port renders belongs to it alone (a
 * Contribution), except elements of the shared maps, which the caller arbitrates. One cost of an
 * endpoint change still grows with the services: every commit walks every chain of the namespace
 * (nf_tables_commit, step 2), and a verdict map needs a chain per service port to go to
 * (bench/proxy-layout.bench.ts: ~10 ns a chain up to 10k chains, far more beyond). */
import * as b from '../nft/build';
import * as C from '../nft/constants';
import { Chain, Expr, NftSet, Rule, SetElement, Verdict } from '../nft/types';
import { ipv4, ipv4Number, ipv6 } from '../net/ip-bytes';
import { K8S_IPPROTO, NFPROTO_IPV4, NFPROTO_IPV6 } from '../net/protocols';
import { be16, concatKey, hostU32 } from '../nft/values';
import { RTN_LOCAL } from '../rtnl/constants';
import { formatIp, parseCidr, parseIp, ipInCidr, subtractRanges, type IpFamily } from '../net/ip';
import { ChainModel, elementKey, SetModel } from '../ruleset/model';
import { categorizeEndpoints, ProxyEndpoint, TrafficPolicies } from './endpoints';
import type { ServicePortView } from './service-ports';
import { CLAIMED_BY, type Claimants } from '../pipeline/desired-model';

export const DEFAULT_PROXY_TABLE = 'nfkube-proxy';
/** kube-proxy's --masquerade-bit default. */
export const DEFAULT_MASQUERADE_BIT = 14;

export const FAMS: readonly IpFamily[] = ['v4', 'v6'];

/** Names of the table's fixed parts. */
export const N = {
  services: 'services',
  masquerading: 'masquerading',
  markMasq: 'mark-for-masquerade',
  endpointsCheck: 'endpoints-check',
  firewallCheck: 'firewall-check',
  reject: 'reject-chain',
  noLocalEndpoints: 'no-local-endpoints',
  clusterIPsCheck: 'cluster-ips-check',
  clusterIPs: (f: IpFamily) => `cluster-ips-${f}`,
  serviceIPs: (f: IpFamily) => `service-ips-${f}`,
  serviceNodePorts: (f: IpFamily) => `service-nodeports-${f}`,
  noEndpointServices: (f: IpFamily) => `no-endpoint-services-${f}`,
  noEndpointNodePorts: (f: IpFamily) => `no-endpoint-nodeports-${f}`,
  firewallIPs: (f: IpFamily) => `firewall-ips-${f}`,
  nodePortIPs: (f: IpFamily) => `nodeport-ips-${f}`,
  clusterCIDRs: (f: IpFamily) => `cluster-cidrs-${f}`,
  hairpin: (f: IpFamily) => `hairpin-${f}`,
  endpointDraws: (f: IpFamily, block: number) => `endpoint-draws-${f}-${block}`,
} as const;

/** Names of one service port's objects (kube-proxy's prefixes, with the family). */
export const servicePortNames = (v: Pick<ServicePortView, 'name' | 'fam'>) => ({
  cluster: `service-${v.fam}-${v.name}`,
  local: `local-${v.fam}-${v.name}`,
  external: `external-${v.fam}-${v.name}`,
  firewall: `firewall-${v.fam}-${v.name}`,
  clusterMap: `endpoints-service-${v.fam}-${v.name}`,
  localMap: `endpoints-local-${v.fam}-${v.name}`,
  sources: `sources-${v.fam}-${v.name}`,
});

/** IPv6 colons are not allowed in chain names: kube-proxy writes them as dots. */
export function endpointChainName(v: Pick<ServicePortView, 'name' | 'fam'>, ep: Pick<ProxyEndpoint, 'ip' | 'port'>): string {
  return `endpoint-${v.fam}-${v.name}__${ep.ip.replace(/:/g, '.')}/${ep.port}`;
}

export function affinitySetName(v: Pick<ServicePortView, 'name' | 'fam'>, ep: Pick<ProxyEndpoint, 'ip' | 'port'>): string {
  return `affinity-${v.fam}-${v.name}__${ep.ip.replace(/:/g, '.')}/${ep.port}`;
}

/** What the rendering of every service depends on besides the service itself. */
export interface ProxyEnv {
  nodeName: string;
  zone?: string;
  masqueradeAll: boolean;
  /** Per family: pod CIDRs known (so off-cluster sources can be told apart). */
  localDetector: Record<IpFamily, boolean>;
  /** Per family: this node's primary address, for loadBalancerSourceRanges that include it. */
  nodeIPs: Partial<Record<IpFamily, string>>;
}

/** The base sets' contents: what node events change without touching any service. */
export interface BaseContents {
  clusterCIDRs: Record<IpFamily, string[]>;
  /** Inclusive address ranges that accept NodePorts. */
  nodePortRanges: Record<IpFamily, [bigint, bigint][]>;
}

/** One service port's part of the table. */
export interface Contribution {
  chains: ChainModel[];
  /** Sets owned by this service port alone. */
  sets: SetModel[];
  /** Elements of the shared maps, by map name. */
  elements: [string, SetElement][];
  /** Elements of the endpoint maps under this port's draw slots, by map, with their keys
   * (elementKey) at the same index: no one else writes those keys. */
  owned: { set: string; elements: SetElement[]; keys: string[] }[];
  /** Every endpoint this node may DNAT to for this port. */
  reachable: ProxyEndpoint[];
}

const IPPROTO: Record<string, number> = K8S_IPPROTO;
const L4: Record<string, b.L4Proto> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };
const ADDR = { v4: { saddr: 'ip saddr', daddr: 'ip daddr', key: 'ipv4_addr', nfproto: NFPROTO_IPV4 }, v6: { saddr: 'ip6 saddr', daddr: 'ip6 daddr', key: 'ipv6_addr', nfproto: NFPROTO_IPV6 } } as const;

export const addrBuf = (ip: string): Buffer => (ip.includes(':') ? ipv6(ip) : ipv4(ip));

/** The key `address . protocol . port` of the address-keyed maps. */
export function tripleKey(ip: string, protocol: string, port: number): Buffer {
  return concatKey([addrBuf(ip), Buffer.from([IPPROTO[protocol]]), be16(port)]);
}

export function protoPortKey(protocol: string, port: number): Buffer {
  return concatKey([Buffer.from([IPPROTO[protocol]]), be16(port)]);
}

/** The endpoint choice draws `numgen random mod DRAWS`; draw ids are 16 bits. */
export const DRAWS = 65536;
/** Blocks of draw slots, each an endpoint map: enough that a map's commit (which walks
 * it) stays small, few enough that finding a map by name (a list walk) stays cheap. */
export const DRAW_BLOCKS = 512;

export interface DrawSlot {
  block: number;
  id: number;
}

/** A load-balancing chain's draw slot: FNV-1a of its name. */
export function drawSlot(chain: string): DrawSlot {
  let h = 0x811c9dc5;
  for (let i = 0; i < chain.length; i++) h = Math.imul(h ^ chain.charCodeAt(i), 0x01000193) >>> 0;
  return { block: (h >>> 16) % DRAW_BLOCKS, id: h & 0xffff };
}

/** The key `id . rank` of the endpoint maps: numgen's offset adds the id above the draw, and a
 * byteorder puts the host-order u32 in network order (as nft does before an interval lookup),
 * so the id is bytes 0 and 1 and the draw (the rank) bytes 2 and 3, big-endian. */
export function drawKey(id: number, rank: number): Buffer {
  const key = Buffer.allocUnsafe(4);
  key.writeUInt32BE(((id << 16) | rank) >>> 0);
  return key;
}

/** The first rank of endpoint i of n: it gets [shareStart(i, n), shareStart(i + 1, n)). */
export const shareStart = (i: number, n: number): number => Math.floor((i * DRAWS) / n);

/** Each endpoint's share of chain `id`'s draws, as first and last keys. */
export function drawShares(id: number, n: number): [Buffer, Buffer][] {
  const out: [Buffer, Buffer][] = [];
  for (let i = 0; i < n; i++) out.push([drawKey(id, shareStart(i, n)), drawKey(id, shareStart(i + 1, n) - 1)]);
  return out;
}

const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
/** Where share keys are spelled: one flat string per key from a single native call, rather than
 * a string built of pieces that each map lookup would first have to flatten. */
const shareKeyText = Buffer.alloc(17, '-');

function writeHex4(at: number, n: number): void {
  shareKeyText[at] = HEX_DIGITS[(n >>> 12) & 15];
  shareKeyText[at + 1] = HEX_DIGITS[(n >>> 8) & 15];
  shareKeyText[at + 2] = HEX_DIGITS[(n >>> 4) & 15];
  shareKeyText[at + 3] = HEX_DIGITS[n & 15];
}

/** elementKey of the share [first, last] of chain `id`, from the numbers (no bytes to hex). */
export function drawShareKey(id: number, first: number, last: number): string {
  writeHex4(0, id);
  writeHex4(4, first);
  if (first === last) return shareKeyText.toString('latin1', 0, 8);
  writeHex4(9, id);
  writeHex4(13, last);
  return shareKeyText.toString('latin1', 0, 17);
}

/** The IPv4 address as a number, or undefined for IPv6 text. A full sync writes every endpoint's
 * address into two elements: parsed straight into them, not through a buffer of its own. */
function ipv4OrUndefined(ip: string): number | undefined {
  return ip.includes(':') ? undefined : ipv4Number(ip);
}

/** `address . port` of an endpoint map's data, the port padded to its 4-byte register. */
export function endpointData(ip: string, port: number): Buffer {
  const v4 = ipv4OrUndefined(ip);
  const len = v4 === undefined ? 16 : 4;
  const out = Buffer.allocUnsafe(len + 4);
  if (v4 === undefined) ipv6(ip).copy(out);
  else out.writeUInt32BE(v4);
  out.writeUInt16BE(port, len);
  out.writeUInt16BE(0, len + 2);
  return out;
}

/** An endpoint's share [first, last] of chain `id`'s draws, as its endpoint-map element. The
 * bytes are spelt when read (encoded, compared) rather than kept: three buffers are ~300 bytes of
 * heap, most of what an endpoint costs, and a full sync holds one element per endpoint (250k at
 * 5k Services x 50). */
export class DrawShare implements SetElement {
  constructor(
    private readonly id: number,
    private readonly first: number,
    private readonly last: number,
    private readonly ip: string,
    private readonly port: number,
  ) {}

  get key(): Buffer {
    return drawKey(this.id, this.first);
  }

  get keyEnd(): Buffer {
    return drawKey(this.id, this.last);
  }

  get data(): Buffer {
    return endpointData(this.ip, this.port);
  }
}

/** The key `address . address` of the hairpin set. Addresses are 4 or 16 bytes: the two fields
 * need no padding. */
export function hairpinKey(ip: string): Buffer {
  const v4 = ipv4OrUndefined(ip);
  if (v4 === undefined) {
    const a = ipv6(ip);
    return Buffer.concat([a, a], 32);
  }
  const out = Buffer.allocUnsafe(8);
  out.writeUInt32BE(v4);
  out.writeUInt32BE(v4, 4);
  return out;
}

/** An endpoint's hairpin element, `address . address`: the key is spelt when read, as a
 * DrawShare's bytes are (a buffer is ~100 bytes of heap, one element per endpoint). Its claim has
 * a slot of its own: set later, it took a property array (~40 bytes) per endpoint. */
export class HairpinElement implements SetElement {
  [CLAIMED_BY]?: Claimants = undefined;

  constructor(private readonly ip: string) {}

  get key(): Buffer {
    return hairpinKey(this.ip);
  }
}

/** The draw rule's body after its protocol match: `id . draw` into NFT_REG_1, in network order,
 * looked up in the block's map, which writes the address to NFT_REG_1 and the port right after it
 * (the next 32-bit register for IPv4, NFT_REG_2 for IPv6: the registers nft picks, so nft's
 * listing of it parses back into the same expressions). */
function drawDnat(f: IpFamily, slot: DrawSlot): Expr[] {
  return [
    { type: 'numgen', dreg: C.NFT_REG_1, modulus: DRAWS, ngType: 'random', offset: (slot.id << 16) >>> 0 },
    { type: 'byteorder', sreg: C.NFT_REG_1, dreg: C.NFT_REG_1, op: 'hton', len: 4, size: 4 },
    { type: 'lookup', set: N.endpointDraws(f, slot.block), sreg: C.NFT_REG_1, dreg: C.NFT_REG_1 },
    dnat(f, C.NFT_REG_1, f === 'v4' ? C.NFT_REG32_01 : C.NFT_REG_2),
  ];
}

/** DNAT to the address and port in these registers, as the kernel dumps it: the max registers
 * repeat the min ones, MAP_IPS is implied. */
function dnat(f: IpFamily, regAddr: number, regProto: number): Expr {
  return {
    type: 'nat',
    natType: 'dnat',
    family: ADDR[f].nfproto,
    regAddrMin: regAddr,
    regAddrMax: regAddr,
    regProtoMin: regProto,
    regProtoMax: regProto,
    flags: C.NF_NAT_RANGE_MAP_IPS | C.NF_NAT_RANGE_PROTO_SPECIFIED,
  };
}

/** Sorted, merged inclusive ranges of CIDRs (an interval set refuses overlaps). */
export function mergeRanges(ranges: [bigint, bigint][]): [bigint, bigint][] {
  const sorted = [...ranges].sort((x, y) => (x[0] < y[0] ? -1 : x[0] > y[0] ? 1 : 0));
  const out: [bigint, bigint][] = [];
  for (const [first, last] of sorted) {
    const prev = out[out.length - 1];
    if (prev && first <= prev[1] + 1n) {
      if (last > prev[1]) prev[1] = last;
    } else out.push([first, last]);
  }
  return out;
}

export function cidrRanges(cidrs: readonly string[]): [bigint, bigint][] {
  return mergeRanges(cidrs.map((c) => parseCidr(c)).filter((c) => c !== undefined).map((c) => [c.first, c.last]));
}

/** NodePort ranges of one family for CIDRs, without loopback (kube-proxy has no localhost
 * NodePorts). */
export function nodePortRanges(cidrs: readonly string[], fam: IpFamily): [bigint, bigint][] {
  const loopback = parseCidr(fam === 'v4' ? '127.0.0.0/8' : '::1/128')!;
  const out: [bigint, bigint][] = [];
  for (const text of cidrs) {
    const c = parseCidr(text);
    if (c && c.family === fam) out.push(...subtractRanges(c, [loopback]));
  }
  return mergeRanges(out);
}

function rangeElements(fam: IpFamily, ranges: readonly [bigint, bigint][]): Map<string, SetElement> {
  const out = new Map<string, SetElement>();
  for (const [first, last] of ranges) {
    const a = addrBuf(formatIp(fam, first));
    const e: SetElement = first === last ? { key: a } : { key: a, keyEnd: addrBuf(formatIp(fam, last)) };
    out.set(elementKey(e), e);
  }
  return out;
}

export class ProxyRenderer {
  private readonly markMask: Buffer;

  constructor(
    readonly table: string,
    masqueradeBit = DEFAULT_MASQUERADE_BIT,
  ) {
    this.markMask = hostU32(2 ** masqueradeBit);
  }

  chain(name: string, base?: Chain['base']): Chain {
    const c: Chain = { family: 'inet', table: this.table, name };
    if (base) c.base = base;
    return c;
  }

  set(name: string, def: Pick<NftSet, 'key' | 'flags'> & { data?: NftSet['data']; timeout?: bigint }): NftSet {
    const s: NftSet = { family: 'inet', table: this.table, name, key: def.key, flags: def.flags };
    if (def.data) s.data = def.data;
    if (def.timeout !== undefined) s.timeout = def.timeout;
    return s;
  }

  rule(chain: string, exprs: Expr[], comment?: string): Rule {
    const r: Rule = { family: 'inet', table: this.table, chain, exprs };
    if (comment !== undefined) r.comment = comment.length > 200 ? `${comment.slice(0, 197)}...` : comment;
    return r;
  }

  private markOp(mask: Buffer, xor: Buffer): Expr[] {
    return [
      { type: 'meta', key: C.NFT_META_MARK, dreg: C.NFT_REG_1 },
      { type: 'bitwise', sreg: C.NFT_REG_1, dreg: C.NFT_REG_1, len: 4, op: 'bool', mask, xor },
      { type: 'meta', key: C.NFT_META_MARK, sreg: C.NFT_REG_1 },
    ];
  }

  /** The chains and sets that do not depend on any service; base set contents from `contents`. */
  base(contents: BaseContents): { chains: ChainModel[]; sets: SetModel[] } {
    const r = (chain: string, exprs: Expr[]) => this.rule(chain, exprs);
    const ctNew = b.ctState(['new']);
    const filter = (hook: 'prerouting' | 'input' | 'forward' | 'output') => ({ hook, priority: -110, type: 'filter' as const, policy: 'accept' as const });
    const tripleVmap = (fam: IpFamily, map: string) => {
      const loads = b.concatLoads([ADDR[fam].daddr, 'meta l4proto', 'th dport']);
      return [...loads.exprs, b.vmap(map, loads.sreg)];
    };
    const nodePortVmap = (fam: IpFamily, map: string) => {
      const loads = b.concatLoads(['meta l4proto', 'th dport']);
      return [
        ...b.matchAddrInSet(ADDR[fam].daddr, N.nodePortIPs(fam)),
        { type: 'fib', dreg: C.NFT_REG_1, result: C.NFT_FIB_RESULT_ADDRTYPE, flags: C.NFTA_FIB_F_DADDR } as Expr,
        { type: 'cmp', sreg: C.NFT_REG_1, op: 'eq', data: hostU32(RTN_LOCAL) } as Expr,
        ...loads.exprs,
        b.vmap(map, loads.sreg),
      ];
    };
    const markMask = this.markMask;
    const inverse = Buffer.from(markMask.map((x) => ~x & 0xff));
    const chains: ChainModel[] = [
      { chain: this.chain('filter-prerouting', filter('prerouting')), rules: [r('filter-prerouting', [...ctNew, b.jump(N.firewallCheck)])] },
      { chain: this.chain('filter-input', filter('input')), rules: [r('filter-input', [...ctNew, b.jump(N.endpointsCheck)])] },
      {
        chain: this.chain('filter-forward', filter('forward')),
        rules: [r('filter-forward', [...ctNew, b.jump(N.endpointsCheck)]), r('filter-forward', [...ctNew, b.jump(N.clusterIPsCheck)])],
      },
      {
        chain: this.chain('filter-output', filter('output')),
        rules: [r('filter-output', [...ctNew, b.jump(N.endpointsCheck)]), r('filter-output', [...ctNew, b.jump(N.firewallCheck)])],
      },
      // After DNAT: what is still addressed to a cluster IP matched no port of its Service.
      { chain: this.chain('filter-output-post-dnat', { hook: 'output', priority: -90, type: 'filter', policy: 'accept' }), rules: [r('filter-output-post-dnat', [...ctNew, b.jump(N.clusterIPsCheck)])] },
      { chain: this.chain('nat-prerouting', { hook: 'prerouting', priority: -100, type: 'nat', policy: 'accept' }), rules: [r('nat-prerouting', [b.jump(N.services)])] },
      { chain: this.chain('nat-output', { hook: 'output', priority: -100, type: 'nat', policy: 'accept' }), rules: [r('nat-output', [b.jump(N.services)])] },
      { chain: this.chain('nat-postrouting', { hook: 'postrouting', priority: 100, type: 'nat', policy: 'accept' }), rules: [r('nat-postrouting', [b.jump(N.masquerading)])] },
      {
        chain: this.chain(N.services),
        rules: FAMS.flatMap((f) => [r(N.services, tripleVmap(f, N.serviceIPs(f))), r(N.services, nodePortVmap(f, N.serviceNodePorts(f)))]),
      },
      {
        chain: this.chain(N.endpointsCheck),
        rules: FAMS.flatMap((f) => [r(N.endpointsCheck, tripleVmap(f, N.noEndpointServices(f))), r(N.endpointsCheck, nodePortVmap(f, N.noEndpointNodePorts(f)))]),
      },
      { chain: this.chain(N.firewallCheck), rules: FAMS.map((f) => r(N.firewallCheck, tripleVmap(f, N.firewallIPs(f)))) },
      // A port no Service defines on a cluster IP: refused at once rather than left to time out.
      { chain: this.chain(N.clusterIPsCheck), rules: FAMS.map((f) => r(N.clusterIPsCheck, [...b.matchAddrInSet(ADDR[f].daddr, N.clusterIPs(f)), b.goto(N.reject)])) },
      {
        chain: this.chain(N.masquerading),
        rules: [
          ...FAMS.map((f) => {
            const loads = b.concatLoads([ADDR[f].saddr, ADDR[f].daddr]);
            // Only connections the proxy translated: an endpoint's own address to itself is
            // otherwise any local flow of a host-network endpoint.
            return r(N.masquerading, [...b.ctStatus(['dnat']), ...loads.exprs, b.lookup(N.hairpin(f), loads.sreg), b.jump(N.markMasq)]);
          }),
          r(N.masquerading, [
            { type: 'meta', key: C.NFT_META_MARK, dreg: C.NFT_REG_1 },
            { type: 'bitwise', sreg: C.NFT_REG_1, dreg: C.NFT_REG_1, len: 4, op: 'bool', mask: markMask, xor: Buffer.alloc(4) },
            { type: 'cmp', sreg: C.NFT_REG_1, op: 'eq', data: Buffer.alloc(4) },
            b.verdict({ kind: 'return' }),
          ]),
          r(N.masquerading, this.markOp(Buffer.alloc(4, 0xff), markMask)),
          r(N.masquerading, [{ type: 'masq', flags: C.NF_NAT_RANGE_PROTO_RANDOM_FULLY }]),
        ],
      },
      { chain: this.chain(N.markMasq), rules: [r(N.markMasq, this.markOp(inverse, markMask))] },
      {
        chain: this.chain(N.noLocalEndpoints),
        rules: [
          r(N.noLocalEndpoints, [
            { type: 'fib', dreg: C.NFT_REG_1, result: C.NFT_FIB_RESULT_ADDRTYPE, flags: C.NFTA_FIB_F_SADDR },
            { type: 'cmp', sreg: C.NFT_REG_1, op: 'eq', data: hostU32(RTN_LOCAL) },
            b.verdict({ kind: 'return' }),
          ]),
          r(N.noLocalEndpoints, [b.drop()]),
        ],
      },
      {
        chain: this.chain(N.reject),
        // A TCP client learns of a reset at once; an IPv6 one may sit out a SYN retransmission
        // before it acts on an ICMPv6 error. Everything else: port unreachable, as kube-proxy.
        rules: [
          r(N.reject, [...b.l4proto('tcp'), { type: 'reject', rejectType: C.NFT_REJECT_TCP_RST, icmpCode: 0 }]),
          r(N.reject, [{ type: 'reject', rejectType: C.NFT_REJECT_ICMPX_UNREACH, icmpCode: C.NFT_REJECT_ICMPX_PORT_UNREACH }]),
        ],
      },
    ];
    const sets: SetModel[] = [];
    for (const f of FAMS) {
      const triple: NftSet['key'] = [ADDR[f].key, 'inet_proto', 'inet_service'];
      for (const name of [N.serviceIPs(f), N.noEndpointServices(f), N.firewallIPs(f)]) sets.push({ set: this.set(name, { key: triple, flags: 0, data: 'verdict' }), elements: new Map() });
      for (const name of [N.serviceNodePorts(f), N.noEndpointNodePorts(f)]) sets.push({ set: this.set(name, { key: ['inet_proto', 'inet_service'], flags: 0, data: 'verdict' }), elements: new Map() });
      sets.push({ set: this.set(N.hairpin(f), { key: [ADDR[f].key, ADDR[f].key], flags: 0 }), elements: new Map() });
      sets.push({ set: this.set(N.clusterIPs(f), { key: [ADDR[f].key], flags: 0 }), elements: new Map() });
      sets.push({ set: this.set(N.nodePortIPs(f), { key: [ADDR[f].key], flags: C.NFT_SET_INTERVAL }), elements: rangeElements(f, contents.nodePortRanges[f]) });
      sets.push({ set: this.set(N.clusterCIDRs(f), { key: [ADDR[f].key], flags: C.NFT_SET_INTERVAL }), elements: rangeElements(f, cidrRanges(contents.clusterCIDRs[f])) });
    }
    return { chains, sets };
  }

  /** The endpoint map of one block of draw ids. */
  endpointMap(f: IpFamily, block: number): NftSet {
    return {
      ...this.set(N.endpointDraws(f, block), { key: ['integer'], flags: C.NFT_SET_INTERVAL, data: [ADDR[f].key, 'inet_service'] }),
      typeof: { key: `numgen random mod ${DRAWS}`, data: `${ADDR[f].daddr} . th dport` },
    };
  }

  /** One service port of one family: kube-proxy's syncProxyRules loop body. `drawId` gives a
   * load-balancing chain its draw slot, or none (then it dispatches through endpoint chains). */
  servicePort(v: ServicePortView, env: ProxyEnv, drawId: (chain: string, fam: IpFamily) => DrawSlot | undefined = () => undefined): Contribution {
    const out: Contribution = { chains: [], sets: [], elements: [], owned: [], reachable: [] };
    const svc = v.service;
    const names = servicePortNames(v);
    const externallyAccessible = v.port.nodePort !== undefined || v.externalIPs.length > 0 || v.loadBalancerIPs.length > 0;
    const policies: TrafficPolicies = {
      internalLocal: svc.internalTrafficPolicy === 'Local',
      externalLocal: svc.externalTrafficPolicy === 'Local',
      externallyAccessible,
    };
    const cat = categorizeEndpoints(v.endpoints, policies, env.nodeName, env.zone);
    out.reachable = cat.reachable;
    const usesCluster = cat.cluster.length > 0 && (!policies.internalLocal || externallyAccessible);
    const usesLocal = cat.local.length > 0 && (policies.internalLocal || (policies.externalLocal && externallyAccessible));
    const hasEndpoints = cat.hasAny;
    let hasInternal = hasEndpoints;
    let internalChain = names.cluster;
    if (policies.internalLocal) {
      internalChain = names.local;
      if (cat.local.length === 0) hasInternal = false;
    }
    let hasExternal = hasEndpoints;
    let externalPolicyChain = names.cluster;
    if (policies.externalLocal) {
      externalPolicyChain = names.local;
      if (cat.local.length === 0) hasExternal = false;
    }
    const usesExternalChain = hasEndpoints && externallyAccessible;
    const filterVerdict = (has: boolean, otherwise: Verdict): Verdict => (!hasEndpoints ? { kind: 'goto', chain: N.reject } : has ? { kind: 'continue' } : otherwise);
    const internalFilter = filterVerdict(hasInternal, { kind: 'drop' });
    // The node's own traffic to an external address is short-circuited to all endpoints (the
    // external chain), so only other traffic is dropped when no endpoint is local.
    const externalFilter = filterVerdict(hasExternal, { kind: 'goto', chain: N.noLocalEndpoints });
    const proto = v.port.protocol;
    const f = v.fam;
    const el = (map: string, key: Buffer, verdict: Verdict | undefined) => out.elements.push([map, verdict ? { key, verdict } : { key }]);

    // The cluster IP.
    el(N.clusterIPs(f), addrBuf(v.clusterIP), undefined);
    if (hasInternal) el(N.serviceIPs(f), tripleKey(v.clusterIP, proto, v.port.port), { kind: 'goto', chain: internalChain });
    else el(N.noEndpointServices(f), tripleKey(v.clusterIP, proto, v.port.port), internalFilter);
    // External IPs.
    for (const ip of v.externalIPs) {
      if (hasEndpoints) el(N.serviceIPs(f), tripleKey(ip, proto, v.port.port), { kind: 'goto', chain: names.external });
      if (!hasExternal) el(N.noEndpointServices(f), tripleKey(ip, proto, v.port.port), externalFilter);
    }
    // Load-balancer IPs, behind the source-range firewall.
    const usesFirewall = v.loadBalancerIPs.length > 0 && v.sourceRanges.length > 0;
    if (usesFirewall) {
      const ranges = cidrRanges(v.sourceRanges);
      const nodeIP = env.nodeIPs[f] !== undefined ? parseIp(env.nodeIPs[f]!) : undefined;
      // A VIP the node holds locally loops back with itself as source: allowed when the node is.
      const allowFromNode = nodeIP !== undefined && v.sourceRanges.some((c) => ipInCidr(nodeIP, parseCidr(c)!));
      if (allowFromNode) for (const ip of v.loadBalancerIPs) ranges.push([parseIp(ip)!.value, parseIp(ip)!.value]);
      out.sets.push({ set: this.set(names.sources, { key: [ADDR[f].key], flags: C.NFT_SET_INTERVAL }), elements: rangeElements(f, mergeRanges(ranges)) });
      out.chains.push({
        chain: this.chain(names.firewall),
        rules: [this.rule(names.firewall, [...b.matchAddrInSet(ADDR[f].saddr, names.sources, true), b.drop()], v.name)],
      });
    }
    for (const ip of v.loadBalancerIPs) {
      if (hasEndpoints) el(N.serviceIPs(f), tripleKey(ip, proto, v.port.port), { kind: 'goto', chain: names.external });
      if (usesFirewall) el(N.firewallIPs(f), tripleKey(ip, proto, v.port.port), { kind: 'goto', chain: names.firewall });
      if (!hasExternal) el(N.noEndpointServices(f), tripleKey(ip, proto, v.port.port), externalFilter);
    }
    // The node port.
    if (v.port.nodePort !== undefined) {
      if (hasEndpoints) el(N.serviceNodePorts(f), protoPortKey(proto, v.port.nodePort), { kind: 'goto', chain: names.external });
      if (!hasExternal) el(N.noEndpointNodePorts(f), protoPortKey(proto, v.port.nodePort), externalFilter);
    }

    const chainRules = new Map<string, Rule[]>();
    const rules = (chain: string) => {
      let list = chainRules.get(chain);
      if (!list) chainRules.set(chain, (list = []));
      return list;
    };
    // Internal traffic: masquerade what comes from outside the cluster (or everything).
    if (hasInternal && (env.masqueradeAll || env.localDetector[f])) {
      const match = [...b.matchAddr(ADDR[f].daddr, v.clusterIP), ...b.matchPort(L4[proto], 'th dport', v.port.port)];
      // The family is pinned already: no second nfproto check (nft compiles none).
      const source = env.masqueradeAll ? [] : [b.load(ADDR[f].saddr), b.lookup(N.clusterCIDRs(f), C.NFT_REG_1, true)];
      rules(internalChain).push(this.rule(internalChain, [...match, ...source, b.jump(N.markMasq)]));
    }
    // External traffic.
    if (usesExternalChain) {
      const ext = rules(names.external);
      if (!policies.externalLocal) ext.push(this.rule(names.external, [b.jump(N.markMasq)]));
      else {
        if (env.localDetector[f] && usesCluster) {
          ext.push(this.rule(names.external, [...b.matchAddrInSet(ADDR[f].saddr, N.clusterCIDRs(f)), b.goto(names.cluster)], 'short-circuit pod traffic'));
        }
        const fibLocal: Expr[] = [
          { type: 'fib', dreg: C.NFT_REG_1, result: C.NFT_FIB_RESULT_ADDRTYPE, flags: C.NFTA_FIB_F_SADDR },
          { type: 'cmp', sreg: C.NFT_REG_1, op: 'eq', data: hostU32(RTN_LOCAL) },
        ];
        ext.push(this.rule(names.external, [...fibLocal, b.jump(N.markMasq)], 'masquerade local traffic'));
        if (usesCluster) ext.push(this.rule(names.external, [...fibLocal, b.goto(names.cluster)], 'short-circuit local traffic'));
      }
      if (hasExternal) ext.push(this.rule(names.external, [b.goto(externalPolicyChain)]));
    }
    const affinity = svc.sessionAffinity === 'ClientIP';
    const timeout = BigInt(svc.affinityTimeoutSeconds ?? 10800) * 1000n;
    if (affinity) {
      for (const ep of cat.reachable) {
        out.sets.push({ set: this.set(affinitySetName(v, ep), { key: [ADDR[f].key], flags: C.NFT_SET_TIMEOUT | C.NFT_SET_EVAL, timeout }), elements: new Map() });
      }
    }
    // A pod reaching itself through the service is masqueraded (in nat-postrouting).
    const hairpin = N.hairpin(f);
    for (const ep of cat.reachable) out.elements.push([hairpin, new HairpinElement(ep.ip)]);
    let viaChains = false;
    const loadBalance = (chain: string, map: string, endpoints: ProxyEndpoint[]) => {
      const list = rules(chain);
      const slot = affinity ? undefined : drawId(chain, f);
      if (slot === undefined) {
        viaChains = true;
        for (const ep of endpoints) list.push(this.rule(chain, [...b.matchAddrInSet(ADDR[f].saddr, affinitySetName(v, ep)), b.goto(endpointChainName(v, ep))]));
        list.push(this.rule(chain, [{ type: 'numgen', dreg: C.NFT_REG_1, modulus: endpoints.length, ngType: 'random', offset: 0 }, b.vmap(map)]));
        const elements = new Map<string, SetElement>();
        endpoints.forEach((ep, i) => {
          const e: SetElement = { key: hostU32(i), verdict: { kind: 'goto', chain: endpointChainName(v, ep) } };
          elements.set(elementKey(e), e);
        });
        out.sets.push({ set: { ...this.set(map, { key: ['integer'], flags: 0, data: 'verdict' }), typeof: { key: `numgen random mod ${DRAWS}`, data: 'verdict' } }, elements });
        return;
      }
      list.push(this.rule(chain, [...b.l4proto(L4[proto]), ...drawDnat(f, slot)]));
      const n = endpoints.length;
      const elements: SetElement[] = new Array(n);
      const keys: string[] = new Array(n);
      for (let i = 0; i < n; i++) {
        const first = shareStart(i, n);
        const last = shareStart(i + 1, n) - 1;
        elements[i] = new DrawShare(slot.id, first, last, endpoints[i].ip, endpoints[i].port);
        keys[i] = drawShareKey(slot.id, first, last);
      }
      out.owned.push({ set: N.endpointDraws(f, slot.block), elements, keys });
    };
    if (usesCluster) loadBalance(names.cluster, names.clusterMap, cat.cluster);
    if (usesLocal) loadBalance(names.local, names.localMap, cat.local);
    if (!viaChains) {
      for (const [name, list] of chainRules) out.chains.push({ chain: this.chain(name), rules: list });
      return out;
    }
    for (const ep of cat.reachable) {
      const name = endpointChainName(v, ep);
      const list = rules(name);
      list.push(this.rule(name, [...b.matchAddr(ADDR[f].saddr, ep.ip), b.jump(N.markMasq)]));
      if (affinity) list.push(this.rule(name, [...b.loadAddr(ADDR[f].saddr), { type: 'dynset', set: affinitySetName(v, ep), op: 'update', sregKey: C.NFT_REG_1, timeoutMs: 0n, flags: 0 }]));
      list.push(
        this.rule(name, [
          ...b.l4proto(L4[proto]),
          { type: 'immediate', dreg: C.NFT_REG_1, data: addrBuf(ep.ip) },
          { type: 'immediate', dreg: C.NFT_REG_2, data: be16(ep.port) },
          dnat(f, C.NFT_REG_1, C.NFT_REG_2),
        ]),
      );
    }
    for (const [name, list] of chainRules) out.chains.push({ chain: this.chain(name), rules: list });
    // Chains a map points at but that have no rules of their own still exist (kube-proxy's
    // ensureChain): a local chain with no local endpoints is never pointed at, so none is needed.
    return out;
  }
}
