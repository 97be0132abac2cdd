/** The demo's Service section: the service proxy programs a ClusterIP Service whose endpoints are
 * two pods of one namespace of the sandbox, in every family they and the client share. The
 * client (another pod, else the node itself) connects to the service address again and again;
 * each connection is answered by one endpoint, whose listener names itself and the source it
 * saw. Then one endpoint leaves the EndpointSlices: the proxy commits only that change, and every
 * connection reaches the other endpoint. */
import { createServer, type Server } from 'node:net';
import { constants } from 'node:os';
import type { Logger } from 'pino';
import { defaultedService, type EndpointSliceInfo } from '../k8s/service-model';
import type { ClusterChange } from '../k8s/source';
import { native } from '../native/binding';
import type { Netns } from '../netlink/netns';
import { NetlinkSocket } from '../netlink/socket';
import { Agent } from '../pipeline/agent';
import { ProxyComponent } from '../proxy/component';
import { DEFAULT_PROXY_TABLE } from '../proxy/render';
import { familyOf } from '../proxy/service-ports';
import { AF_INET, AF_INET6 } from '../netlink/message';
import { Rtnl } from '../rtnl/client';
import { RT_SCOPE_LINK } from '../rtnl/constants';
import { NODE_V4, NODE_V6, type Sandbox, type SandboxPod } from './sandbox';
import type { IpFamily } from '../net/ip';

/** The demo Service's addresses and ports (TEST-NET-2 and the documentation prefix). */
export const DEMO_SERVICE = { name: 'demo-echo', clusterIPs: { v4: '198.19.0.80', v6: '2001:db8:f::80' }, port: 80, targetPort: 8080 };
/** Connections per look: both endpoints answer at least once but with odds of 2 in 65,536. */
const CONNECTIONS = 16;
const ACCEPT_WAIT_MS = 2000;

export interface ServiceDemoOptions {
  sandbox: Sandbox;
  probeTimeoutMs: number;
  logger: Logger;
  /** Throws when the demo was interrupted. */
  step(): void;
  write(text: string): void;
}

interface Answer {
  endpoint: string;
  source: string;
}

/** Listeners on the target port of the endpoint pods; each connection's answer is queued in
 * arrival order. */
class EchoListeners {
  private readonly servers: Server[] = [];
  private readonly answers: Answer[] = [];
  private waiting: (() => void) | undefined;

  async listen(pod: SandboxPod, address: string): Promise<void> {
    const fd = native().listenInNetns(pod.netns.fd, address, DEMO_SERVICE.targetPort);
    const server = createServer((socket) => {
      const source = (socket.remoteAddress ?? '?').replace(/^::ffff:/, '');
      socket.on('error', () => undefined);
      socket.end(`${pod.key} ${source}\n`);
      this.answers.push({ endpoint: pod.key, source });
      this.waiting?.();
    });
    this.servers.push(server);
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen({ fd }, () => resolve());
    });
  }

  /** The answer to the connection just made, or undefined when no endpoint saw it in time. */
  async next(): Promise<Answer | undefined> {
    if (this.answers.length === 0) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, ACCEPT_WAIT_MS);
        this.waiting = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      this.waiting = undefined;
    }
    return this.answers.shift();
  }

  async close(): Promise<void> {
    await Promise.all(this.servers.splice(0).map((s) => new Promise<void>((resolve) => s.close(() => resolve()))));
  }
}

const ERRNO_NAMES = new Map(Object.entries(constants.errno).map(([name, n]) => [n, name]));
const hostPort = (ip: string, port: number) => (familyOf(ip) === 'v4' ? `${ip}:${port}` : `[${ip}]:${port}`);

/** Two pods of one namespace as endpoints, and a client: another pod, else the node. */
function choose(sandbox: Sandbox): { namespace: string; endpoints: SandboxPod[]; client: { label: string; netns: Netns; ips: string[] } } | undefined {
  for (const p of sandbox.pods) {
    const endpoints = sandbox.pods.filter((q) => q.pod.namespace === p.pod.namespace).slice(0, 2);
    if (endpoints.length < 2) continue;
    const other = sandbox.pods.find((q) => !endpoints.includes(q));
    const client = other ? { label: other.key, netns: other.netns, ips: other.pod.ips } : { label: `${sandbox.nodeName} (node)`, netns: sandbox.node, ips: [] };
    return { namespace: p.pod.namespace, endpoints, client };
  }
  return undefined;
}

export async function showService(o: ServiceDemoOptions): Promise<void> {
  const chosen = choose(o.sandbox);
  o.write(`\nA Service answering from its endpoints (the service proxy, table inet ${DEFAULT_PROXY_TABLE} in the node's namespace)\n`);
  if (!chosen) {
    o.write('  No namespace has two pods on this node to be the endpoints of a Service: skipped.\n');
    return;
  }
  const { namespace, endpoints, client } = chosen;
  // Families every endpoint has, and the client too (the node has both), whose service address
  // no pod of the manifests uses.
  const usable = (f: IpFamily) =>
    endpoints.every((e) => e.pod.ips.some((ip) => familyOf(ip) === f)) &&
    (client.ips.length === 0 || client.ips.some((ip) => familyOf(ip) === f)) &&
    !o.sandbox.pods.some((p) => p.pod.ips.includes(DEMO_SERVICE.clusterIPs[f]));
  const fams = (['v4', 'v6'] as const).filter(usable);
  if (fams.length === 0) {
    o.write('  The endpoint pods and the client share no address family the demo Service can use: skipped.\n');
    return;
  }
  const svc = defaultedService(namespace, DEMO_SERVICE.name, {
    clusterIPs: fams.map((f) => DEMO_SERVICE.clusterIPs[f]),
    ports: [{ name: 'echo', protocol: 'TCP', port: DEMO_SERVICE.port, targetPort: 'echo' }],
  });
  const sliceOf = (f: IpFamily, pods: SandboxPod[]): EndpointSliceInfo => ({
    namespace,
    name: `${DEMO_SERVICE.name}-${f === 'v4' ? 'ipv4' : 'ipv6'}`,
    serviceName: DEMO_SERVICE.name,
    addressType: f === 'v4' ? 'IPv4' : 'IPv6',
    ports: [{ name: 'echo', protocol: 'TCP', port: DEMO_SERVICE.targetPort }],
    endpoints: pods.map((p) => ({ address: p.pod.ips.find((ip) => familyOf(ip) === f)!, ready: true, serving: true, terminating: false, nodeName: o.sandbox.nodeName })),
  });
  const slices = fams.map((f) => sliceOf(f, endpoints));
  o.write(`  Service ${namespace}/${svc.name}: ClusterIP ${svc.clusterIPs.join(', ')}, port ${DEMO_SERVICE.port}/TCP -> ${DEMO_SERVICE.targetPort} on endpoints ${endpoints.map((e) => e.key).join(', ')}\n`);

  const listeners = new EchoListeners();
  const socket = NetlinkSocket.open({ netns: o.sandbox.node });
  const agent = new Agent({ socket, logger: o.logger, components: [new ProxyComponent({ nodeName: o.sandbox.nodeName })] });
  try {
    for (const e of endpoints) for (const ip of e.pod.ips.filter((ip) => fams.includes(familyOf(ip)))) await listeners.listen(e, ip);
    o.step();
    const report = await agent.start({
      pods: new Map(),
      namespaces: new Map(),
      policies: new Map(),
      services: new Map([[`${namespace}/${svc.name}`, svc]]),
      endpointSlices: new Map(slices.map((s) => [`${namespace}/${s.name}`, s])),
      nodes: new Map(),
    });
    o.write(`  The proxy committed table inet ${DEFAULT_PROXY_TABLE}: ${report.messages} netlink messages, one transaction, ${report.durationMs.toFixed(1)} ms\n`);
    if (client.ips.length === 0) await routeFromNode(o.sandbox, endpoints[0].hostLink, svc.clusterIPs);
    const look = async () => {
      for (const f of fams) {
        o.step();
        o.write(`  ${await connections(client, DEMO_SERVICE.clusterIPs[f], listeners, o.probeTimeoutMs)}\n`);
      }
    };
    await look();

    o.step();
    const [gone, kept] = endpoints;
    const before = { commits: agent.totals.commits, messages: agent.totals.messages };
    for (const f of fams) {
      const s = sliceOf(f, [kept]);
      const change: ClusterChange = { kind: 'EndpointSlice', type: 'upsert', key: `${namespace}/${s.name}`, object: s };
      agent.onChange(change);
    }
    await agent.idle();
    const commits = agent.totals.commits - before.commits;
    o.write(`  Endpoint ${gone.key} removed from the EndpointSlices: ${agent.totals.messages - before.messages} netlink messages in ${commits === 1 ? 'one transaction' : `${commits} transactions`}, only this Service's endpoint maps and chains\n`);
    await look();
  } finally {
    await agent.stop();
    await socket.close();
    await listeners.close();
  }
}

/** Host-originated connections are routed before the proxy translates them, and a node's default
 * route covers the service addresses; the sandbox node has none, so the service addresses are
 * routed towards one endpoint's link (the DNAT then re-routes each connection to its endpoint). */
async function routeFromNode(sandbox: Sandbox, link: string, vips: string[]): Promise<void> {
  const rtnl = Rtnl.open(sandbox.node);
  try {
    const l = await rtnl.link(link);
    if (!l) throw new Error(`node ${sandbox.nodeName}: veth ${link} is missing`);
    for (const vip of vips) {
      await rtnl.addRoute(familyOf(vip) === 'v4'
        ? { family: AF_INET, dst: vip, dstLen: 32, oif: l.index, scope: RT_SCOPE_LINK, prefsrc: NODE_V4 }
        : { family: AF_INET6, dst: vip, dstLen: 128, oif: l.index, prefsrc: NODE_V6 });
    }
  } finally {
    await rtnl.close();
  }
}

/** CONNECTIONS connects from the client to vip:port, one at a time; which endpoint answered each
 * (as that endpoint's listener saw it) and with which source address. */
async function connections(client: { label: string; netns: Netns }, vip: string, listeners: EchoListeners, timeoutMs: number): Promise<string> {
  const by = new Map<string, number>();
  const sources = new Set<string>();
  const count = (what: string) => by.set(what, (by.get(what) ?? 0) + 1);
  for (let i = 0; i < CONNECTIONS; i++) {
    const errno = await native().connectInNetns(client.netns.fd, vip, DEMO_SERVICE.port, timeoutMs);
    if (errno !== 0) {
      count(errno === constants.errno.ETIMEDOUT ? 'no answer' : (ERRNO_NAMES.get(errno) ?? `E${errno}`));
      continue;
    }
    const answer = await listeners.next();
    if (!answer) {
      count('no endpoint saw it');
      continue;
    }
    count(answer.endpoint);
    sources.add(answer.source);
  }
  const answered = [...by].sort((x, y) => (x[0] < y[0] ? -1 : 1)).map(([k, n]) => `${k} ${n}`).join(', ');
  const seen = sources.size ? ` (source seen: ${[...sources].join(', ')})` : '';
  return `${client.label} -> ${hostPort(vip, DEMO_SERVICE.port)}, ${CONNECTIONS} connections, answered by: ${answered}${seen}`;
}
