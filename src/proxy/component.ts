/** The service proxy as a component of the agent: it keeps the desired model of its own table
 * current event by event. A Service or EndpointSlice event re-renders that one service (all its
 * ports and families) and records in the scope only the chains, sets and elements that differ, so
 * one endpoint change is a few element messages; a headless or ExternalName service renders
 * nothing and costs nothing. Node events change the node-port and cluster-CIDR sets element by
 * element, and re-render every service only when what services depend on (zone, node addresses,
 * whether pod CIDRs are known) changes. */
import type { Logger } from 'pino';
import { ConntrackClient } from '../conntrack/client';
import { ChangeScope } from '../pipeline/scope';
import { ClaimIndex, Refusal } from './claims';
import { reportRefusals, type ServiceEventSink } from './refusals';

export { REFUSAL_REASON, type ServiceEventSink } from './refusals';
import { staleFlows, UdpServicePort } from './conntrack-cleanup';
import { ProxyAftercare } from './after-commit';
import { DrawSlots } from './draw-slots';
import { DesiredModel } from '../pipeline/desired-model';
import type { HealthCheckServer } from './health';
import type { ProxyMetrics } from './metrics';
import type { ProxierHealth } from './proxier-health';
import type { ClusterChange, ClusterSnapshot } from '../k8s/source';
import type { EndpointSliceInfo, NodeInfo, ServiceInfo } from '../k8s/service-model';
import type { SetElement } from '../nft/types';
import type { Component, SyncKind, TableRef } from '../pipeline/component';
import { parseCidr, type IpFamily } from '../net/ip';
import type { RuleSetDiff } from '../ruleset/diff';
import { ChainModel, elementKey, emptyModel, RulesetModel, sameElementValue, SetModel } from '../ruleset/model';
import { BaseContents, cidrRanges, Contribution, DEFAULT_PROXY_TABLE, DrawSlot, drawSlot, FAMS, N, nodePortRanges, ProxyEnv, ProxyRenderer } from './render';
import { familyOf, familyOfText, isProxied, servicePortViews } from './service-ports';

export interface ProxyOptions {
  /** This node's name (EndpointSlice nodeName, Node object). */
  nodeName: string;
  /** Table name in family inet (default nfkube-proxy). */
  table?: string;
  /** --cluster-cidr: pod ranges; traffic from elsewhere to a service is masqueraded. Absent:
   * every Node's spec.podCIDRs. */
  clusterCIDRs?: string[];
  /** --nodeport-addresses: CIDRs whose local addresses accept NodePorts, or 'primary' (the
   * default): the node's primary address of each family. */
  nodePortAddresses?: string[] | 'primary';
  /** --masquerade-all */
  masqueradeAll?: boolean;
  masqueradeBit?: number;
  /** Deletes conntrack entries of removed UDP endpoints after each commit; none when absent. */
  conntrack?: ConntrackClient;
  logger?: Logger;
  metrics?: ProxyMetrics;
  /** Serves the health-check node ports of ETP Local load balancers; none when absent. */
  health?: HealthCheckServer;
  /** --allowed-external-ip-cidrs: externalIPs outside them are refused; empty or absent: all
   * allowed. */
  allowedExternalIPCIDRs?: string[];
  /** Records a Warning Event on a Service refused an address or port; none when absent. */
  events?: ServiceEventSink;
  /** kube-proxy's /healthz and /livez state, fed with queued changes, commits and this Node. */
  proxierHealth?: ProxierHealth;
}

/** Where refusals go as Kubernetes Events (src/k8s/event-writer.ts). */

interface Rendered {
  chains: Map<string, ChainModel>;
  sets: Map<string, SetModel>;
  /** Its elements of the shared maps: each one's map, element and key (elementKey) at the same
   * index of three arrays (a [map, element] pair each was ~64 bytes more per endpoint). */
  entrySets: string[];
  entryElements: SetElement[];
  entryKeys: string[];
  /** Its elements of the endpoint maps, under its draw slots, by map (no claims: no one else
   * writes them). */
  owned: OwnedElements[];
  endpoints: number;
  /** UDP service ports by name and family, for conntrack cleanup. */
  udp: Map<string, UdpServicePort>;
  /** For a service with a health-check node port: its local endpoints as healthChecks counts
   * them. */
  localEndpoints: number;
  /** Load-balancing chains that asked for a draw slot, and their family. */
  drawChains: Map<string, IpFamily>;
  /** Claims and endpoints refused (claims.ts, service-ports.ts). */
  refusals: Refusal[];
  healthCheckRefused: boolean;
}

interface OwnedElements {
  set: string;
  elements: SetElement[];
  keys: string[];
}

const EMPTY: Rendered = {
  chains: new Map(),
  sets: new Map(),
  entrySets: [],
  entryElements: [],
  entryKeys: [],
  owned: [],
  endpoints: 0,
  udp: new Map(),
  drawChains: new Map(),
  localEndpoints: 0,
  refusals: [],
  healthCheckRefused: false,
};

export class ProxyComponent implements Component {
  readonly name = 'proxy';
  readonly table: TableRef;
  /** The desired table, its claims of shared-map elements, draw slots and endpoint maps. */
  private model: DesiredModel;
  private drawSlots: DrawSlots;
  private readonly renderer: ProxyRenderer;
  private readonly services = new Map<string, ServiceInfo>();
  private readonly slices = new Map<string, EndpointSliceInfo>();
  /** service key -> keys of its slices. */
  private readonly slicesOf = new Map<string, Set<string>>();
  private readonly nodes = new Map<string, NodeInfo>();
  private readonly claims: ClaimIndex;
  private readonly rendered = new Map<string, Rendered>();
  /** Load-balancing chain -> its service. */
  private readonly chainService = new Map<string, string>();
  /** Services to re-render because a draw slot of theirs was taken or given back. */
  private readonly slotChanged = new Set<string>();
  private env!: ProxyEnv;
  private envKey = '';
  private contents!: BaseContents;
  /** What follows each commit: latency metrics, health answers, conntrack cleanup. */
  private readonly aftercare: ProxyAftercare;

  constructor(readonly opts: ProxyOptions) {
    this.table = { family: 'inet', name: opts.table ?? DEFAULT_PROXY_TABLE };
    this.renderer = new ProxyRenderer(this.table.name, opts.masqueradeBit);
    this.model = new DesiredModel(emptyModel({ ...this.table }));
    this.drawSlots = new DrawSlots(this.model, this.renderer);
    this.claims = new ClaimIndex(opts.allowedExternalIPCIDRs);
    this.aftercare = new ProxyAftercare(opts, {
      healthChecks: () => this.healthChecks(),
      udpPorts: () => [...this.rendered.values()].flatMap((r) => [...r.udp.values()]),
      reportRefusals: (old, now) => reportRefusals(this.opts, old, now),
    });
    for (const c of opts.clusterCIDRs ?? []) if (!parseCidr(c)) throw new Error(`--cluster-cidr: "${c}" is not a CIDR`);
    if (Array.isArray(opts.nodePortAddresses)) for (const c of opts.nodePortAddresses) if (!parseCidr(c)) throw new Error(`--nodeport-addresses: "${c}" is not a CIDR`);
  }

  start(snapshot: ClusterSnapshot): void {
    this.aftercare.restart();
    this.services.clear();
    this.slices.clear();
    this.slicesOf.clear();
    this.nodes.clear();
    this.rendered.clear();
    this.chainService.clear();
    this.slotChanged.clear();
    for (const [k, n] of snapshot.nodes ?? []) this.nodes.set(k, n);
    // Eligible until the Node says otherwise (kube-proxy: while starting up).
    if (this.nodes.has(this.opts.nodeName)) this.opts.proxierHealth?.syncNode(this.nodes.get(this.opts.nodeName));
    this.claims.clear();
    for (const [k, s] of snapshot.services ?? []) {
      this.services.set(k, s);
      this.claims.put(k, isProxied(s) ? s : undefined, false);
    }
    for (const [k, s] of snapshot.endpointSlices ?? []) this.addSlice(k, s);
    this.env = this.computeEnv();
    this.envKey = JSON.stringify(this.env);
    this.contents = this.computeContents();
    const m = emptyModel({ ...this.table });
    const base = this.renderer.base(this.contents);
    for (const c of base.chains) m.chains.set(c.chain.name, c);
    for (const s of base.sets) m.sets.set(s.set.name, s);
    this.model = new DesiredModel(m);
    this.drawSlots = new DrawSlots(this.model, this.renderer);
    for (const key of [...this.services.keys()].sort()) this.resyncService(key);
    this.resyncSlotChanges();
  }

  get desired(): RulesetModel {
    return this.model.model;
  }

  /** Applies one change; false when it changed nothing of this table. */
  apply(change: ClusterChange, scope: ChangeScope): boolean {
    const before = scopeSize(scope);
    this.model.recordingIn(scope);
    switch (change.kind) {
      case 'Service': {
        if (change.type === 'upsert') this.services.set(change.key, change.object);
        else this.services.delete(change.key);
        const svc = this.services.get(change.key);
        // Another Service may win or lose an address or port this one claimed or gave up.
        const affected = this.claims.put(change.key, svc && isProxied(svc) ? svc : undefined);
        this.resyncService(change.key);
        for (const other of affected) this.resyncService(other);
        break;
      }
      case 'EndpointSlice': {
        const old = this.slices.get(change.key);
        if (change.type === 'upsert') {
          this.putSlice(change.key, change.object, old);
          if (change.object.triggerTimeMs !== undefined) this.aftercare.pendingTriggerTimes.push(change.object.triggerTimeMs);
        } else this.removeSlice(change.key);
        const affected = new Set<string>();
        if (old?.serviceName) affected.add(`${old.namespace}/${old.serviceName}`);
        if (change.type === 'upsert' && change.object.serviceName) affected.add(`${change.object.namespace}/${change.object.serviceName}`);
        for (const key of affected) this.resyncService(key);
        break;
      }
      case 'Node':
        if (change.type === 'upsert') this.nodes.set(change.key, change.object);
        else this.nodes.delete(change.key);
        if (change.key === this.opts.nodeName) this.opts.proxierHealth?.syncNode(this.nodes.get(change.key));
        this.nodeChanged();
        break;
      default:
        return false;
    }
    this.resyncSlotChanges();
    this.model.recordingIn(undefined);
    const touched = scopeSize(scope) !== before;
    if (touched) {
      this.opts.metrics?.queued();
      this.opts.proxierHealth?.queued();
    }
    return touched;
  }

  afterCommit(_diff: RuleSetDiff, kind: SyncKind): Promise<void> {
    return this.aftercare.committed(kind);
  }

  /** Deletes every UDP conntrack entry the current services leave stale. */
  reconcileConntrack(): Promise<void> {
    return this.aftercare.reconcileConntrack();
  }

  /** For a run that ends after its first sync (`agent --once`): see ProxyAftercare.settle. */
  settle(): Promise<void> {
    return this.aftercare.settle();
  }

  /** Resolves once the conntrack cleanups of every commit so far are done. */
  conntrackIdle(): Promise<void> {
    return this.aftercare.idle();
  }

  /** Conntrack entries deleted so far. */
  get conntrackDeleted(): number {
    return this.aftercare.conntrackDeleted;
  }

  stats(): Record<string, number> {
    let endpoints = 0;
    let proxied = 0;
    for (const r of this.rendered.values()) {
      endpoints += r.endpoints;
      if (r.chains.size > 0 || r.entryElements.length > 0 || r.owned.length > 0) proxied++;
    }
    return { services: this.services.size, proxiedServices: proxied, endpointSlices: this.slices.size, endpoints, chains: this.desired.chains.size };
  }

  /** The services this node proxies, for the health-check server: ETP Local load-balancer
   * services with their health-check node port and local endpoint count. */
  healthChecks(): { service: string; port: number; localEndpoints: number }[] {
    const out: { service: string; port: number; localEndpoints: number }[] = [];
    for (const [key, svc] of this.services) {
      if (svc.healthCheckNodePort === undefined || !isProxied(svc) || this.rendered.get(key)?.healthCheckRefused) continue;
      // Counted when the service was last rendered, which every change to it or its slices does.
      out.push({ service: key, port: svc.healthCheckNodePort, localEndpoints: this.rendered.get(key)?.localEndpoints ?? 0 });
    }
    return out;
  }

  private addSlice(key: string, s: EndpointSliceInfo): void {
    this.slices.set(key, s);
    if (!s.serviceName) return;
    const svc = `${s.namespace}/${s.serviceName}`;
    let set = this.slicesOf.get(svc);
    if (!set) this.slicesOf.set(svc, (set = new Set()));
    set.add(key);
  }

  /** Stores an updated slice in place: a key deleted and added again leaves a dead entry in its
   * V8 Map hash chain until the next rehash (one slice updated 20k times: ~15 us an update at 5k
   * slices). */
  private putSlice(key: string, s: EndpointSliceInfo, old: EndpointSliceInfo | undefined): void {
    if (!old || old.serviceName !== s.serviceName || old.namespace !== s.namespace) {
      this.removeSlice(key);
      this.addSlice(key, s);
      return;
    }
    this.slices.set(key, s);
  }

  private removeSlice(key: string): void {
    const s = this.slices.get(key);
    if (!s) return;
    this.slices.delete(key);
    if (!s.serviceName) return;
    const svc = `${s.namespace}/${s.serviceName}`;
    const set = this.slicesOf.get(svc);
    set?.delete(key);
    if (set?.size === 0) this.slicesOf.delete(svc);
  }

  private computeEnv(): ProxyEnv {
    const self = this.nodes.get(this.opts.nodeName);
    const nodeIPs: Partial<Record<IpFamily, string>> = {};
    for (const type of ['InternalIP', 'ExternalIP']) {
      for (const a of self?.addresses ?? []) if (a.type === type && nodeIPs[familyOf(a.address)] === undefined) nodeIPs[familyOf(a.address)] = a.address;
    }
    const cidrs = this.clusterCIDRs();
    const env: ProxyEnv = {
      nodeName: this.opts.nodeName,
      masqueradeAll: this.opts.masqueradeAll ?? false,
      localDetector: { v4: cidrs.v4.length > 0, v6: cidrs.v6.length > 0 },
      nodeIPs,
    };
    if (self?.zone !== undefined) env.zone = self.zone;
    return env;
  }

  private clusterCIDRs(): Record<IpFamily, string[]> {
    const out: Record<IpFamily, string[]> = { v4: [], v6: [] };
    const all = this.opts.clusterCIDRs ?? [...this.nodes.values()].flatMap((n) => n.podCIDRs);
    for (const c of all) {
      const f = familyOfText(c);
      if (f) out[f].push(c);
    }
    return out;
  }

  private computeContents(): BaseContents {
    const np = this.opts.nodePortAddresses;
    const ranges: Record<IpFamily, [bigint, bigint][]> = { v4: [], v6: [] };
    for (const f of FAMS) {
      if (Array.isArray(np)) ranges[f] = nodePortRanges(np, f);
      else if (this.env.nodeIPs[f] !== undefined) ranges[f] = cidrRanges([`${this.env.nodeIPs[f]}/${f === 'v4' ? 32 : 128}`]);
    }
    return { clusterCIDRs: this.clusterCIDRs(), nodePortRanges: ranges };
  }

  private nodeChanged(): void {
    this.env = this.computeEnv();
    this.contents = this.computeContents();
    const base = this.renderer.base(this.contents);
    for (const s of base.sets) {
      if (s.set.name.startsWith('nodeport-ips-') || s.set.name.startsWith('cluster-cidrs-')) this.model.putSet(s.set.name, s);
    }
    const key = JSON.stringify(this.env);
    if (key === this.envKey) return;
    this.envKey = key;
    for (const svc of [...this.rendered.keys()]) this.resyncService(svc);
  }

  private render(key: string): Rendered {
    const svc = this.services.get(key);
    if (!svc || !isProxied(svc)) return EMPTY;
    const slices = [...(this.slicesOf.get(key) ?? [])].map((k) => this.slices.get(k)!);
    const decision = this.claims.decide(key);
    const out: Rendered = { ...EMPTY, chains: new Map(), sets: new Map(), entrySets: [], entryElements: [], entryKeys: [], owned: [], udp: new Map(), drawChains: new Map(), refusals: decision.refusals };
    out.healthCheckRefused = !decision.healthCheckNodePort();
    // kube-proxy's LocalReadyEndpoints, which each family's proxier reports: distinct addresses of
    // ready local endpoints that some service port uses, so a dual-stack pod counts once.
    const local: Record<IpFamily, Set<string>> | undefined = svc.healthCheckNodePort !== undefined ? { v4: new Set(), v6: new Set() } : undefined;
    const drawId = (chain: string, f: IpFamily): DrawSlot | undefined => {
      const slot = drawSlot(chain);
      out.drawChains.set(chain, f);
      this.chainService.set(chain, key);
      const { displaced, holds } = this.drawSlots.enter(chain, f, slot);
      if (displaced !== undefined) this.slotChanged.add(this.chainService.get(displaced)!);
      return holds ? slot : undefined;
    };
    const refusedEndpoints = new Set<string>();
    for (const view of servicePortViews(svc, slices, this.opts.nodeName)) {
      for (const ep of view.refusedEndpoints) refusedEndpoints.add(ep);
      if (!decision.clusterIP(view.clusterIP)) continue;
      const { protocol, port, nodePort } = view.port;
      view.externalIPs = view.externalIPs.filter((ip) => decision.externalIP(ip, protocol, port));
      view.loadBalancerIPs = view.loadBalancerIPs.filter((ip) => decision.externalIP(ip, protocol, port));
      if (nodePort !== undefined && !decision.nodePort(protocol, nodePort)) {
        const { nodePort: _refused, ...rest } = view.port;
        view.port = rest;
      }
      out.endpoints += view.endpoints.length;
      if (local) for (const ep of view.endpoints) if (ep.local && ep.ready) local[view.fam].add(ep.ip);
      const c: Contribution = this.renderer.servicePort(view, this.env, drawId);
      for (const ch of c.chains) out.chains.set(ch.chain.name, ch);
      for (const s of c.sets) out.sets.set(s.set.name, s);
      for (const [set, e] of c.elements) {
        out.entrySets.push(set);
        out.entryElements.push(e);
        out.entryKeys.push(elementKey(e));
      }
      for (const g of c.owned) out.owned.push(g);
      if (view.port.protocol === 'UDP') {
        const p = view.port.port;
        out.udp.set(`${view.fam} ${view.name}`, {
          fam: view.fam,
          dsts: [view.clusterIP, ...view.externalIPs, ...view.loadBalancerIPs].map((ip) => `${ip} ${p}`),
          nodePort: view.port.nodePort,
          endpoints: c.reachable.map((ep) => `${ep.ip} ${ep.port}`),
          serving: view.endpoints.filter((ep) => ep.serving).map((ep) => ep.ip),
        });
      }
    }
    if (local) out.localEndpoints = Math.max(local.v4.size, local.v6.size);
    for (const ep of refusedEndpoints) out.refusals.push({ kind: 'endpoint-address', service: key, value: ep, message: `Service ${key}: endpoint ${ep} refused` });
    return out;
  }

  /** Re-renders one service and puts into the model (and scope) what differs. */
  private resyncService(key: string): void {
    const old = this.rendered.get(key) ?? EMPTY;
    const now = this.render(key);
    if (now === EMPTY) this.rendered.delete(key);
    else this.rendered.set(key, now);
    const left: [string, IpFamily, DrawSlot][] = [];
    for (const [chain, f] of old.drawChains) {
      if (now.drawChains.has(chain)) continue;
      const slot = drawSlot(chain);
      const restored = this.drawSlots.leave(chain, f, slot);
      this.chainService.delete(chain);
      if (restored !== undefined) this.slotChanged.add(this.chainService.get(restored)!);
      left.push([chain, f, slot]);
    }
    reportRefusals(this.opts, old.refusals, now.refusals);
    for (const name of new Set([...old.udp.keys(), ...now.udp.keys()])) this.aftercare.pendingStaleFlows.push(...staleFlows(old.udp.get(name), now.udp.get(name)));
    const m = this.model;
    for (const [name, c] of now.chains) m.refreshChain(name, c);
    for (const name of old.chains.keys()) if (!now.chains.has(name)) m.putChain(name, undefined);
    for (const [name, s] of now.sets) m.putSet(name, s);
    for (const name of old.sets.keys()) if (!now.sets.has(name)) m.putSet(name, undefined);
    // A first render (every service at start-up) has nothing to compare with. A change indexes
    // both renders by map and key and keeps neither index: kept on the render, they were ~4 KB
    // a service of 50 endpoints, 20 MB once endpoint churn had touched 5,000 services.
    if (old.entryElements.length === 0) now.entryElements.forEach((e, i) => m.claimElement(now.entrySets[i], now.entryKeys[i], key, e));
    else {
      compareBySet(entriesBySet(old), entriesBySet(now), (set, k) => m.releaseElement(set, k, key, (owner) => lastEntry(this.rendered.get(owner)!, set, k)!), (set, k, e) => m.claimElement(set, k, key, e));
    }
    if (old.owned.length === 0) {
      for (const g of now.owned) for (let i = 0; i < g.elements.length; i++) m.putElement(g.set, g.keys[i], g.elements[i]);
    } else {
      compareBySet(ownedBySet(old), ownedBySet(now), (set, k) => m.deleteElement(set, k), (set, k, e) => m.putElement(set, k, e));
    }
    for (const [chain, f, slot] of left) this.drawSlots.releaseBlock(chain, f, slot);
  }

  /** Re-renders the services whose draw slot was taken or given back by another's change. */
  private resyncSlotChanges(): void {
    for (const key of this.slotChanged) {
      this.slotChanged.delete(key);
      this.resyncService(key);
    }
  }

}


/** A render's shared-map elements by map and key (the last of equal ones, as a later element of
 * a render replaces an earlier one in the model), to compare two renders of one service. */
function entriesBySet(r: Rendered): Map<string, Map<string, SetElement>> {
  const m = new Map<string, Map<string, SetElement>>();
  for (let i = 0; i < r.entryElements.length; i++) {
    const set = r.entrySets[i];
    let byKey = m.get(set);
    if (!byKey) m.set(set, (byKey = new Map()));
    byKey.set(r.entryKeys[i], r.entryElements[i]);
  }
  return m;
}

/** Compares two renders' elements by map and key: `gone` for each key only the old one has, then
 * `changed` for each the new one has with another value or not at all before. */
function compareBySet(
  was: Map<string, Map<string, SetElement>>,
  next: Map<string, Map<string, SetElement>>,
  gone: (set: string, k: string) => void,
  changed: (set: string, k: string, e: SetElement) => void,
): void {
  for (const [set, elements] of was) {
    const keep = next.get(set);
    for (const k of elements.keys()) if (!keep?.has(k)) gone(set, k);
  }
  for (const [set, elements] of next) {
    const before = was.get(set);
    for (const [k, e] of elements) {
      const b = before?.get(k);
      if (b === undefined || !sameElementValue(b, e)) changed(set, k, e);
    }
  }
}

/** A render's endpoint-map elements by map and key. */
function ownedBySet(r: Rendered): Map<string, Map<string, SetElement>> {
  const m = new Map<string, Map<string, SetElement>>();
  for (const g of r.owned) {
    let byKey = m.get(g.set);
    if (!byKey) m.set(g.set, (byKey = new Map()));
    for (let i = 0; i < g.elements.length; i++) byKey.set(g.keys[i], g.elements[i]);
  }
  return m;
}

/** The element a render puts at `set key` (its last one there). */
function lastEntry(r: Rendered, set: string, k: string): SetElement | undefined {
  for (let i = r.entryElements.length - 1; i >= 0; i--) if (r.entrySets[i] === set && r.entryKeys[i] === k) return r.entryElements[i];
  return undefined;
}

function scopeSize(scope: ChangeScope): number {
  let n = scope.chains.size + scope.sets.size;
  for (const keys of scope.elements.values()) n += keys.size;
  return n;
}

export { N as PROXY_NAMES };
