/** Renders the compiled policy intent (src/policy/engine/ir.ts) into nftables objects, part by part, so
 * an event re-renders only what it touched.
 *
 * Layout of the table (default `inet nfkube`):
 *   forward_egress  hook forward prio 0: ct established,related accept; IPv6 neighbor discovery
 *                   accept; ip saddr vmap @egress_v4 ...
 *   forward_ingress hook forward prio 1: the same, with ip daddr vmap @ingress_v4 ...
 *   input_egress    hook input   prio 0: as forward_egress, for pod -> node traffic
 * Two base chains on one hook make ingress and egress independent: an `accept` ends only its own
 * base chain, so a packet between two local pods must pass both. Traffic the node itself sends to
 * its pods (kubelet probes) is never matched: nfkube has no output-hook chain.
 *   vmaps: local pod address -> goto combo_<combination>_in|out
 *   combination chain: jump pol_<policy>_<dir> for each policy of one combination (the sorted
 *                   policy ids isolating a pod in one direction), then the drop log and goto
 *                   default_deny_in|out (src/policy/render/tail.ts). Pods isolated by the same policies
 *                   share it: it exists while one of them does, and a pod changing combination
 *                   is a vmap element change.
 *   default_deny_in|out: audit accepts, the per-address deny counts, the deny.
 *   policy chain: one rule per (rule entry x peer x port match) that accepts; a rule entry of
 *                   several port matches has them in one set, ports_<hash of its content>
 *                   (meta l4proto . th dport ranges, shared by the entries of the same ports),
 *                   and one rule per peer. Only for the directions in which the policy isolates
 *                   a pod of this node: it exists while a combination chain jumps to it.
 *   prerouting_source hook prerouting prio -150, and spoofed_source: a local pod's source
 *                   address coming in by another interface than its route's, or from another
 *                   MAC than the one it is bound to, is dropped (src/policy/render/source-check.ts); sets
 *                   local_src_v4/_v6: every local pod's addresses; bound_src_v4/_v6 and
 *                   local_mac_v4/_v6: the bound ones and their address . MAC bindings.
 *   sets: <peerSet>_v4/_v6 (pod addresses), <ipBlock> (interval), <namedPorts>_v4/_v6
 *         (address . l4proto . port); deny_in|out_v4|v6 (and audited_..., with audit support):
 *         the vmaps' addresses, each with a counter the default deny updates (per pod counts).
 */
import { hash } from 'node:crypto';
import * as b from '../../nft/build';
import * as C from '../../nft/constants';
import { Chain, Expr, NftSet, Rule, SetElement } from '../../nft/types';
import { ipv4, ipv6 } from '../../net/ip-bytes';
import { be16, concatKey } from '../../nft/values';
import { CompiledPolicy, CompiledRule, Direction, IpBlockSet, NamedPortSet, PeerSet, PolicyIR, PortMatch, PortTriple, Target } from '../engine/ir';
import { ChainModel, elementKey, emptyModel, RulesetModel, SetModel } from '../../ruleset/model';
import { formatLabel } from './labels';
import { PodInfo } from '../../k8s/model';
import { PolicyModes, type DenyAction } from '../modes';
import { AuditEntries } from './audit-entries';
import { DesiredModel } from '../../pipeline/desired-model';
import { BOUND_SETS, LocalSources, MAC_SETS, SOURCE_CHAIN, SOURCE_SETS, sourceCheckRules, SPOOFED_CHAIN, spoofedRules } from './source-check';
import { tierHook } from '../cluster/hooks';
import { AUDIT_SETS, counterSets, DENY_CHAINS, denyChainRules, DropLogOptions, logRule } from './tail';
import type { IpFamily } from '../../net/ip';

export interface RenderOptions {
  table: string;
  denyAction: DenyAction;
  /** Deny rules log to nfnetlink_log (src/policy/render/tail.ts). */
  log?: DropLogOptions;
  /** Audit mode support: the audit sets, and an audit accept before each deny; a target's
   * addresses are in the sets while its namespace's mode is audit. */
  modes?: PolicyModes;
  /** Told of each object that could not be rendered and was rendered failing closed instead. */
  onFailClosed?: (err: RenderError) => void;
}

/** An object that cannot be rendered (or encoded). It is rendered failing closed instead, on
 * its own: a policy's chains allow nothing, so the pods it selects stay isolated, and nothing
 * else is held back by it. */
export class RenderError extends Error {
  constructor(
    /** e.g. `NetworkPolicy x/allow-web`. */
    readonly object: string,
    override readonly cause: unknown,
  ) {
    super(`${object}: cannot be rendered (${cause instanceof Error ? cause.message : String(cause)}); failing closed: the pods it selects are isolated and it allows nothing`);
    this.name = 'RenderError';
  }
}

const DIRECTIONS: readonly Direction[] = ['ingress', 'egress'];
const DIR_SUFFIX: Record<Direction, string> = { ingress: 'in', egress: 'out' };
const PROTO: Record<string, b.L4Proto> = { TCP: 'tcp', UDP: 'udp', SCTP: 'sctp' };

// Rules share expression objects, data Buffers included (a rendered expression is never mutated):
// every policy rule ends in the same counted accept and starts with one of four address loads.
// Shared expressions are frozen: a batch encodes each once and copies its bytes after (encodeExpr).
const COUNTED_ACCEPT: Expr[] = frozen([b.counter(), b.accept()]);
const ADDR_LOADS: Record<b.AddrField, Expr[]> = {
  'ip saddr': frozen(b.loadAddr('ip saddr')),
  'ip daddr': frozen(b.loadAddr('ip daddr')),
  'ip6 saddr': frozen(b.loadAddr('ip6 saddr')),
  'ip6 daddr': frozen(b.loadAddr('ip6 daddr')),
};

/** Freezes each expression (not its data Buffers, which cannot be; they are never written). */
function frozen(exprs: Expr[]): Expr[] {
  for (const e of exprs) Object.freeze(e);
  return exprs;
}

const ELEMENT_COUNTER: Expr[] = [b.counter()];

// Distinct port matches are few; a policy edit could still bring new ones indefinitely.
const PORT_MATCH_CACHE_MAX = 1024;
// Lookups and jumps name sets and chains that come and go with policies.
const REFERENCE_CACHE_MAX = 8192;

/** The loads of a named-port lookup, `ip daddr . meta l4proto . th dport`, for one family. */
function namedPortLoads(field: 'ip daddr' | 'ip6 daddr') {
  const loads = b.concatLoads([field, 'meta l4proto', 'th dport']);
  frozen(loads.exprs);
  // Behind a peer match that pinned the family, the loads' own nfproto dependency repeats it.
  return { exprs: loads.exprs, pinned: loads.exprs.slice(2), sreg: loads.sreg };
}
const NAMED_PORT_LOADS = { v4: namedPortLoads('ip daddr'), v6: namedPortLoads('ip6 daddr') };
/** The loads of a port set lookup, `meta l4proto . th dport`. */
const PORT_SET_LOADS = b.concatLoads(['meta l4proto', 'th dport']);
frozen(PORT_SET_LOADS.exprs);

export const VMAPS = { ingress: { v4: 'ingress_v4', v6: 'ingress_v6' }, egress: { v4: 'egress_v4', v6: 'egress_v6' } } as const;

export const policyChainName = (policyId: string, dir: Direction) => `pol_${policyId}_${DIR_SUFFIX[dir]}`;
/** comboId by policy list: a target's lists are never changed once compiled, and each is named
 * several times per render (its chain, its vmap entries, the desired table's bookkeeping). */
const comboIds = new WeakMap<readonly string[], string>();
/** A combination's id: a stable hash of its sorted policy ids (the same in both directions). */
export function comboId(policies: readonly string[]): string {
  let id = comboIds.get(policies);
  if (id === undefined) comboIds.set(policies, (id = hash('sha1', policies.join(' '), 'hex').slice(0, 12)));
  return id;
}
export const comboChainName = (policies: readonly string[], dir: Direction) => `combo_${comboId(policies)}_${DIR_SUFFIX[dir]}`;
export const peerSetName = (id: string, fam: IpFamily) => `${id}_${fam}`;
export const namedPortSetName = (id: string, fam: IpFamily) => `${id}_${fam}`;
/** A set of port matches, named by its content: rule entries of the same ports share it. */
export const portSetName = (elements: Iterable<string>) => `ports_${hash('sha1', [...elements].sort().join(' '), 'hex').slice(0, 12)}`;

export class Renderer {
  /** Port match expressions by protocol and range, shared by every rule that has them. */
  private readonly portMatches = new Map<string, Expr[]>();
  /** Port sets' names and elements by the port list they were made of. */
  private readonly portSets = new Map<string, { name: string; elements: Map<string, SetElement> }>();
  /** Lookups (by set and register) and jumps (by verdict and chain), shared by every rule that
   * has them; frozen. */
  private readonly references = new Map<string, Expr>();
  /** Policies rendered failing closed, by id: what could not be rendered. */
  readonly failedClosed = new Map<string, RenderError>();

  /** vmap name -> the counter sets keyed alike. */
  private readonly counterSetsByVmap = new Map<string, string[]>();

  constructor(readonly opts: RenderOptions) {
    for (const c of counterSets(!!opts.modes)) {
      const vmap = VMAPS[c.direction][c.fam];
      this.counterSetsByVmap.set(vmap, [...(this.counterSetsByVmap.get(vmap) ?? []), c.name]);
    }
  }

  private chain(name: string, base?: Chain['base']): Chain {
    const c: Chain = { family: 'inet', table: this.opts.table, name };
    if (base) c.base = base;
    return c;
  }

  private set(name: string, def: Pick<NftSet, 'key' | 'flags'> & { data?: NftSet['data'] }): NftSet {
    const s: NftSet = { family: 'inet', table: this.opts.table, name, key: def.key, flags: def.flags };
    if (def.data) s.data = def.data;
    return s;
  }

  /** `lookup @set` from register `sreg`, shared and frozen. */
  private lookup(set: string, sreg?: number): Expr {
    return this.reference(`lookup ${set} ${sreg}`, () => b.lookup(set, sreg));
  }

  /** `jump chain` or `goto chain`, shared and frozen. */
  private verdict(kind: 'jump' | 'goto', chain: string): Expr {
    return this.reference(`${kind} ${chain}`, () => (kind === 'jump' ? b.jump(chain) : b.goto(chain)));
  }

  private reference(key: string, make: () => Expr): Expr {
    let e = this.references.get(key);
    if (!e) {
      e = Object.freeze(make());
      if (this.references.size >= REFERENCE_CACHE_MAX) this.references.clear();
      this.references.set(key, e);
    }
    return e;
  }

  /** A rule; `comment` comes from formatLabel, so it is sanitised and fits the kernel. */
  private rule(chain: string, exprs: Expr[], comment?: string): Rule {
    const r: Rule = { family: 'inet', table: this.opts.table, chain, exprs };
    if (comment !== undefined) r.comment = comment;
    return r;
  }

  /** Base chains, the default deny chains, the four vmaps and the counter sets (empty): the part
   * that never depends on the cluster. */
  /** The base chains: each dispatches by the pod's address to its combination chain; with
   * `clusterTiers` (while ClusterNetworkPolicies exist), around that dispatch, the jumps to the
   * Admin and Baseline tiers (src/policy/cluster/hooks.ts). */
  dispatchChains(clusterTiers = false): ChainModel[] {
    const established = [...b.ctState(['established', 'related']), b.accept()];
    // Neighbor discovery is how an IPv6 pod reaches its gateway at all (it may come from the
    // pod's own address); NetworkPolicy governs connections, not the link.
    const discovery = [...b.icmpv6NeighborDiscovery(), b.accept()];
    const dispatch = (chain: string, dir: Direction, field: 'saddr' | 'daddr') => [
      this.rule(chain, established),
      this.rule(chain, discovery),
      ...(clusterTiers ? [this.rule(chain, tierHook('admin', dir))] : []),
      this.rule(chain, [...b.nfproto('ipv4'), b.load(`ip ${field}`), b.vmap(VMAPS[dir].v4)]),
      this.rule(chain, [...b.nfproto('ipv6'), b.load(`ip6 ${field}`), b.vmap(VMAPS[dir].v6)]),
      ...(clusterTiers ? [this.rule(chain, tierHook('baseline', dir))] : []),
    ];
    return [
      { chain: this.chain('forward_egress', { hook: 'forward', priority: 0, type: 'filter', policy: 'accept' }), rules: dispatch('forward_egress', 'egress', 'saddr') },
      { chain: this.chain('forward_ingress', { hook: 'forward', priority: 1, type: 'filter', policy: 'accept' }), rules: dispatch('forward_ingress', 'ingress', 'daddr') },
      { chain: this.chain('input_egress', { hook: 'input', priority: 0, type: 'filter', policy: 'accept' }), rules: dispatch('input_egress', 'egress', 'saddr') },
    ];
  }

  base(): { chains: ChainModel[]; sets: SetModel[] } {
    const chains = this.dispatchChains();
    for (const dir of ['ingress', 'egress'] as const) {
      const name = DENY_CHAINS[dir];
      const rules = denyChainRules(dir, !!this.opts.modes).map((r) => this.rule(name, r.exprs, r.comment));
      const deny = this.opts.denyAction === 'reject' ? b.rejectAdminProhibited() : b.drop();
      rules.push(this.rule(name, [deny], formatLabel({ kind: 'deny', direction: dir })));
      chains.push({ chain: this.chain(name), rules });
    }
    chains.push({ chain: this.chain(SOURCE_CHAIN, { hook: 'prerouting', priority: -150, type: 'filter', policy: 'accept' }), rules: sourceCheckRules().map((r) => this.rule(SOURCE_CHAIN, r)) });
    chains.push({ chain: this.chain(SPOOFED_CHAIN), rules: spoofedRules(this.opts.log).map((r) => this.rule(SPOOFED_CHAIN, r)) });
    const sets: SetModel[] = [];
    for (const fam of ['v4', 'v6'] as const) {
      const addr = fam === 'v4' ? 'ipv4_addr' : 'ipv6_addr';
      sets.push({ set: this.set(SOURCE_SETS[fam], { key: [addr], flags: 0 }), elements: new Map() });
      sets.push({ set: this.set(BOUND_SETS[fam], { key: [addr], flags: 0 }), elements: new Map() });
      sets.push({ set: this.set(MAC_SETS[fam], { key: [addr, 'ether_addr'], flags: 0 }), elements: new Map() });
    }
    for (const dir of ['ingress', 'egress'] as const) {
      sets.push({ set: this.set(VMAPS[dir].v4, { key: ['ipv4_addr'], flags: 0, data: 'verdict' }), elements: new Map() });
      sets.push({ set: this.set(VMAPS[dir].v6, { key: ['ipv6_addr'], flags: 0, data: 'verdict' }), elements: new Map() });
    }
    if (this.opts.modes) {
      sets.push({ set: this.set(AUDIT_SETS.v4, { key: ['ipv4_addr'], flags: 0 }), elements: new Map() });
      sets.push({ set: this.set(AUDIT_SETS.v6, { key: ['ipv6_addr'], flags: 0 }), elements: new Map() });
    }
    // Dynamic: the default deny's dynset updates their elements' counters.
    for (const c of counterSets(!!this.opts.modes)) {
      const set = this.set(c.name, { key: [c.fam === 'v4' ? 'ipv4_addr' : 'ipv6_addr'], flags: C.NFT_SET_EVAL });
      set.exprs = ELEMENT_COUNTER;
      sets.push({ set, elements: new Map() });
    }
    return { chains, sets };
  }

  peerSet(ps: PeerSet): SetModel[] {
    return [
      { set: this.set(peerSetName(ps.id, 'v4'), { key: ['ipv4_addr'], flags: 0 }), elements: elementsOf(ps.v4, peerElement) },
      { set: this.set(peerSetName(ps.id, 'v6'), { key: ['ipv6_addr'], flags: 0 }), elements: elementsOf(ps.v6, peerElement) },
    ];
  }

  ipBlockSet(ib: IpBlockSet): SetModel {
    const toBuf = ib.family === 'v4' ? ipv4 : ipv6;
    const elements = elementsOf(ib.ranges, ([first, last]): SetElement => (first === last ? { key: toBuf(first) } : { key: toBuf(first), keyEnd: toBuf(last) }));
    return { set: this.set(ib.id, { key: [ib.family === 'v4' ? 'ipv4_addr' : 'ipv6_addr'], flags: C.NFT_SET_INTERVAL }), elements };
  }

  namedPortSet(np: NamedPortSet): SetModel[] {
    return [
      { set: this.set(namedPortSetName(np.id, 'v4'), { key: ['ipv4_addr', 'inet_proto', 'inet_service'], flags: 0 }), elements: elementsOf(np.v4, tripleElement) },
      { set: this.set(namedPortSetName(np.id, 'v6'), { key: ['ipv6_addr', 'inet_proto', 'inet_service'], flags: 0 }), elements: elementsOf(np.v6, tripleElement) },
    ];
  }

  /** The policy's chains (one per direction it isolates) and port sets (one per rule entry of
   * several port matches). ipBlocks tells each block's family. A policy whose rules cannot be
   * rendered gets empty chains and no sets: it isolates what it selects and allows nothing (see
   * RenderError). What a rule carries from the cluster is checked here, so nothing unencodable
   * reaches a batch: comments come from formatLabel (bounded, sanitised), ports are checked in
   * portMatch, addresses and set names are canonical or ids. Encoding every rule here instead
   * would cost as much as rendering it again. */
  policy(p: CompiledPolicy, ipBlocks: ReadonlyMap<string, IpBlockSet>, dirs: readonly Direction[] = DIRECTIONS): { chains: ChainModel[]; sets: SetModel[] } {
    try {
      const rendered = this.renderPolicy(p, ipBlocks, dirs);
      this.failedClosed.delete(p.id);
      return rendered;
    } catch (cause) {
      const err = new RenderError(`NetworkPolicy ${p.namespace}/${p.name}`, cause);
      this.failedClosed.set(p.id, err);
      this.opts.onFailClosed?.(err);
      return { chains: dirs.filter((dir) => p[dir]).map((dir) => ({ chain: this.chain(policyChainName(p.id, dir)), rules: [] })), sets: [] };
    }
  }

  /** The policy's chains alone (see policy). */
  policyChains(p: CompiledPolicy, ipBlocks: ReadonlyMap<string, IpBlockSet>, dirs: readonly Direction[] = DIRECTIONS): ChainModel[] {
    return this.policy(p, ipBlocks, dirs).chains;
  }

  /** Forgets a removed policy's render failure. */
  forget(policyId: string): void {
    this.failedClosed.delete(policyId);
  }

  private renderPolicy(p: CompiledPolicy, ipBlocks: ReadonlyMap<string, IpBlockSet>, dirs: readonly Direction[]): { chains: ChainModel[]; sets: SetModel[] } {
    const chains: ChainModel[] = [];
    const sets: SetModel[] = [];
    for (const dir of dirs) {
      const entries = p[dir];
      if (!entries) continue;
      const name = policyChainName(p.id, dir);
      const rules: Rule[] = [];
      for (let i = 0; i < entries.length; i++) {
        const comment = formatLabel({ kind: 'accept', policy: `${p.namespace}/${p.name}`, direction: dir, entry: i });
        const ports = entries[i].ports;
        const portSet = ports !== 'any' && ports.length > 1 ? this.portSet(ports) : undefined;
        if (portSet && !sets.some((x) => x.set.name === portSet.set.name)) sets.push(portSet);
        for (const exprs of this.acceptRules(entries[i], dir, ipBlocks, portSet?.set.name)) rules.push(this.rule(name, exprs, comment));
      }
      chains.push({ chain: this.chain(name), rules });
    }
    return { chains, sets };
  }

  /** The port matches of one rule entry as one set of `meta l4proto . th dport` ranges: one rule
   * per peer matches them all. */
  private portSet(ports: PortMatch[]): SetModel {
    // Rule entries of many policies list the same ports: each list is worked out once. Each
    // caller gets its own set and element map; the elements (never mutated) are shared.
    let key = '';
    for (const pm of ports) key += `${pm.protocol} ${pm.port} ${pm.endPort},`;
    let known = this.portSets.get(key);
    if (!known) {
      known = this.portSetContents(ports);
      if (this.portSets.size >= PORT_MATCH_CACHE_MAX) this.portSets.clear();
      this.portSets.set(key, known);
    }
    return { set: this.set(known.name, { key: ['inet_proto', 'inet_service'], flags: C.NFT_SET_INTERVAL }), elements: new Map(known.elements) };
  }

  private portSetContents(ports: PortMatch[]): { name: string; elements: Map<string, SetElement> } {
    // Ranges of one protocol that overlap or touch are merged: the kernel refuses overlapping
    // elements in an interval set.
    const ranges: [number, number, number][] = [];
    for (const pm of ports) {
      this.portMatch(pm); // checks protocol and range
      const first = pm.port ?? 0;
      ranges.push([b.IPPROTO[PROTO[pm.protocol]], first, pm.port === undefined ? 65535 : (pm.endPort ?? first)]);
    }
    ranges.sort((x, y) => x[0] - y[0] || x[1] - y[1]);
    const merged: [number, number, number][] = [];
    for (const r of ranges) {
      const last = merged[merged.length - 1];
      if (last && last[0] === r[0] && r[1] <= last[2] + 1) last[2] = Math.max(last[2], r[2]);
      else merged.push([...r]);
    }
    const elements = new Map<string, SetElement>();
    for (const [proto, first, last] of merged) {
      const protoByte = Buffer.from([proto]);
      const e: SetElement = { key: concatKey([protoByte, be16(first)]) };
      if (last !== first) e.keyEnd = concatKey([protoByte, be16(last)]);
      elements.set(elementKey(e), e);
    }
    return { name: portSetName(elements.keys()), elements };
  }

  /** Every (peer x port) match of one rule entry, each ending in a counted accept: one rule each;
   * with `portSet`, one rule per peer matches every port match of the entry. */
  private acceptRules(entry: CompiledRule, dir: Direction, ipBlocks: ReadonlyMap<string, IpBlockSet>, portSet?: string): Expr[][] {
    return this.ruleMatches(entry, dir, ipBlocks, COUNTED_ACCEPT, portSet);
  }

  /** Every (peer x port) match of one rule entry, each followed by `tail` (its verdict). With
   * `gate`, each match is preceded by the gate of its address family (a peer that pins none gets
   * one match per family). */
  ruleMatches(entry: CompiledRule, dir: Direction, ipBlocks: ReadonlyMap<string, IpBlockSet>, tail: Expr[], portSet?: string, gate?: (fam: IpFamily) => Expr[]): Expr[][] {
    const peerField = dir === 'ingress' ? 'saddr' : 'daddr';
    // Peer alternatives, each tagged with the address family it pins (undefined: any).
    const peers: { fam?: IpFamily; exprs: Expr[] }[] = [];
    if (entry.peers === 'any') peers.push({ exprs: [] });
    else {
      for (const ref of entry.peers) {
        if (ref.kind === 'pods') {
          peers.push({ fam: 'v4', exprs: ADDR_LOADS[`ip ${peerField}`].concat(this.lookup(peerSetName(ref.set, 'v4'))) });
          peers.push({ fam: 'v6', exprs: ADDR_LOADS[`ip6 ${peerField}`].concat(this.lookup(peerSetName(ref.set, 'v6'))) });
        } else {
          const block = ipBlocks.get(ref.set);
          if (!block) continue;
          const field = block.family === 'v4' ? (`ip ${peerField}` as const) : (`ip6 ${peerField}` as const);
          peers.push({ fam: block.family, exprs: ADDR_LOADS[field].concat(this.lookup(ref.set)) });
        }
      }
    }
    if (gate) {
      const gated = peers.flatMap((peer) => (peer.fam ? [peer.fam] : (['v4', 'v6'] as const)).map((fam) => ({ fam, exprs: gate(fam).concat(peer.exprs) })));
      peers.splice(0, peers.length, ...gated);
    }
    const out: Expr[][] = [];
    if (entry.ports === 'any') {
      for (const peer of peers) out.push(peer.exprs.concat(tail));
      return out;
    }
    const ports: Expr[][] = [];
    if (portSet) ports.push(PORT_SET_LOADS.exprs.concat(this.lookup(portSet, PORT_SET_LOADS.sreg)));
    else for (const pm of entry.ports) ports.push(this.portMatch(pm));
    for (const peer of peers) {
      for (const port of ports) out.push(peer.exprs.concat(port, tail));
      if (entry.namedPorts) {
        for (const fam of peer.fam ? [peer.fam] : (['v4', 'v6'] as const)) {
          const loads = NAMED_PORT_LOADS[fam];
          const lookup = this.lookup(namedPortSetName(entry.namedPorts, fam), loads.sreg);
          out.push(peer.exprs.concat(peer.fam ? loads.pinned : loads.exprs, lookup, tail));
        }
      }
    }
    return out;
  }

  /** `tcp dport 80`, `udp dport 53-60`, `meta l4proto sctp`. */
  private portMatch(pm: PortMatch): Expr[] {
    const key = `${pm.protocol} ${pm.port} ${pm.endPort}`;
    let exprs = this.portMatches.get(key);
    if (!exprs) {
      const proto = PROTO[pm.protocol];
      if (!proto) throw new RangeError(`unknown protocol ${JSON.stringify(pm.protocol)}`);
      for (const n of [pm.port, pm.endPort]) if (n !== undefined && !(Number.isInteger(n) && n >= 1 && n <= 65535)) throw new RangeError(`port ${n} is out of range (1-65535)`);
      exprs = frozen(pm.port === undefined ? b.l4proto(proto) : b.matchPort(proto, 'th dport', pm.port, pm.endPort));
      if (this.portMatches.size >= PORT_MATCH_CACHE_MAX) this.portMatches.clear();
      this.portMatches.set(key, exprs);
    }
    return exprs;
  }

  /** The chain of one combination of policies (the sorted ids isolating a pod in `dir`). */
  comboChain(dir: Direction, policies: readonly string[], policyNames: (id: string) => string): ChainModel {
    const name = comboChainName(policies, dir);
    const rules = policies.map((pid) => this.rule(name, [this.verdict('jump', policyChainName(pid, dir))], formatLabel({ kind: 'jump', policy: policyNames(pid) })));
    const log = logRule(dir, comboId(policies), this.opts.log);
    if (log) rules.push(this.rule(name, log));
    rules.push(this.rule(name, [this.verdict('goto', DENY_CHAINS[dir])]));
    return { chain: this.chain(name), rules };
  }

  /** The vmap entries a target contributes: set name -> elements. */
  vmapEntries(t: Target): [string, SetElement][] {
    const out: [string, SetElement][] = [];
    for (const dir of ['ingress', 'egress'] as const) {
      const policies = t[dir];
      if (!policies) continue;
      const verdict = { kind: 'goto' as const, chain: comboChainName(policies, dir) };
      for (const a of t.v4) out.push([VMAPS[dir].v4, { key: ipv4(a), verdict }]);
      for (const a of t.v6) out.push([VMAPS[dir].v6, { key: ipv6(a), verdict }]);
    }
    return out;
  }

  /** The counter sets that hold the same addresses as a vmap (keyed alike). */
  countersOf(vmap: string): string[] {
    return this.counterSetsByVmap.get(vmap) ?? [];
  }

  /** The audit set entries of a target, whatever its mode (none without audit support). */
  auditEntries(t: Target): [string, SetElement][] {
    if (!this.opts.modes) return [];
    return [...t.v4.map((a): [string, SetElement] => [AUDIT_SETS.v4, { key: ipv4(a) }]), ...t.v6.map((a): [string, SetElement] => [AUDIT_SETS.v6, { key: ipv6(a) }])];
  }

  /** The whole table for an IR. */
  full(ir: PolicyIR, pods: Iterable<PodInfo> = []): RulesetModel {
    return this.render(ir, pods).desired.model;
  }

  /** The whole table for an IR, with the claims the desired table keeps it by (desired.ts): a
   * combination chain claimed by its targets, a policy's direction by its combination chains, a
   * port set by its policies, a vmap entry by the targets at its address (the first by key holds
   * it: two local pods may briefly share an address). `pods` (all of the cluster's) fill the
   * source sets with the local ones' addresses. */
  render(ir: PolicyIR, pods: Iterable<PodInfo> = []): RenderedTable {
    this.failedClosed.clear();
    const d = new DesiredModel(emptyModel({ family: 'inet', name: this.opts.table }));
    const base = this.base();
    for (const c of base.chains) d.putChain(c.chain.name, c);
    const sets = [...base.sets, ...[...ir.peerSets.values()].flatMap((ps) => this.peerSet(ps)), ...[...ir.ipBlockSets.values()].map((ib) => this.ipBlockSet(ib))];
    for (const s of sets.concat([...ir.namedPortSets.values()].flatMap((np) => this.namedPortSet(np)))) d.putSet(s.set.name, s);
    const policySets = new Map<string, string[]>();
    const used = usedDirections(ir.targets.values());
    for (const p of ir.policies.values()) {
      const dirs = used.get(p.id);
      if (!dirs) continue;
      const rendered = this.policy(p, ir.ipBlockSets, dirs);
      for (const c of rendered.chains) d.putChain(c.chain.name, c);
      for (const s of rendered.sets) d.claimSet(s.set.name, p.id, () => s);
      if (rendered.sets.length) policySets.set(p.id, rendered.sets.map((s) => s.set.name));
    }
    const names = (id: string) => policyLabel(ir.policies.get(id));
    for (const t of [...ir.targets.values()].sort((x, y) => (x.key < y.key ? -1 : 1))) {
      for (const dir of DIRECTIONS) {
        const policies = t[dir];
        const combo = policies && comboChainName(policies, dir);
        if (combo && d.claimChain(combo, t.key, () => this.comboChain(dir, policies, names))) for (const id of policies) d.claim(policyDirection(id, dir), combo);
      }
      claimVmapEntries(this, d, t);
    }
    const audit = this.opts.modes ? new AuditEntries(this, d) : undefined;
    for (const t of ir.targets.values()) audit?.sync(t.key, t);
    const sources = new LocalSources(ir.nodeName);
    for (const pod of pods) sources.upsert(pod, d);
    return { desired: d, policySets, audit, sources };
  }
}

/** Claims a target's vmap entries; the counter sets hold the same addresses (keyed alike, no
 * claims of their own: they follow the vmap). */
export function claimVmapEntries(r: Renderer, d: DesiredModel, t: Target): void {
  for (const [set, e] of r.vmapEntries(t)) {
    const k = elementKey(e);
    if (d.claimElement(set, k, t.key, e)) for (const counters of r.countersOf(set)) d.putElement(counters, k, { key: e.key });
  }
}

/** Releases a target's vmap entries: another target's at the same address takes over. */
export function releaseVmapEntries(r: Renderer, d: DesiredModel, t: Target, targetOf: (key: string) => Target): void {
  for (const [set, e] of r.vmapEntries(t)) {
    const k = elementKey(e);
    const gone = d.releaseElement(set, k, t.key, (owner) => r.vmapEntries(targetOf(owner)).find(([s, x]) => s === set && elementKey(x) === k)![1]);
    if (gone) for (const counters of r.countersOf(set)) d.deleteElement(counters, k);
  }
}

/** What Renderer.render built: the desired model with its claims, each policy's port sets, the
 * audit entries (with audit support on) and the source sets' claims. */
export interface RenderedTable {
  desired: DesiredModel;
  policySets: Map<string, string[]>;
  audit?: AuditEntries;
  sources: LocalSources;
}

/** The claim entry of a policy's chain in one direction: claimed by the combination chains that
 * jump to it. */
export function policyDirection(policyId: string, dir: Direction): string {
  return `policy ${policyId} ${dir}`;
}

/** Policy id -> the directions in which it isolates some local pod: only those get a chain (a
 * policy selecting no pod of this node is never entered). */
export function usedDirections(targets: Iterable<Target>): Map<string, Direction[]> {
  const out = new Map<string, Direction[]>();
  for (const t of targets) {
    for (const dir of DIRECTIONS) {
      for (const id of t[dir] ?? []) {
        const dirs = out.get(id);
        if (!dirs) out.set(id, [dir]);
        else if (!dirs.includes(dir)) dirs.push(dir);
      }
    }
  }
  for (const dirs of out.values()) dirs.sort();
  return out;
}

export function policyLabel(p: CompiledPolicy | undefined): string {
  return p ? `${p.namespace}/${p.name}` : 'unknown policy';
}

/** A set's elements by elementKey, one per item. */
function elementsOf<T>(items: readonly T[], element: (item: T) => SetElement): Map<string, SetElement> {
  const out = new Map<string, SetElement>();
  for (const item of items) {
    const e = element(item);
    out.set(elementKey(e), e);
  }
  return out;
}

export function peerElement(addr: string): SetElement {
  return { key: addr.includes(':') ? ipv6(addr) : ipv4(addr) };
}

export function tripleElement(t: PortTriple): SetElement {
  const addr = t.ip.includes(':') ? ipv6(t.ip) : ipv4(t.ip);
  return { key: concatKey([addr, Buffer.from([b.IPPROTO[PROTO[t.protocol]]]), be16(t.port)]) };
}
