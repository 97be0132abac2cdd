/** What the proxy's packet tests share: the http (TCP 80 -> named port 8080) and dns (UDP 53 ->
 * 5353) service ports, dual-stack ClusterIPs and EndpointSlices, probes that collect the replies
 * (`name source`) or errors, and the Agent hosting a ProxyComponent in a node's namespace. */
import pino from 'pino';
import type { EndpointInfo, EndpointSliceInfo } from '../../src/k8s/service-model';
import type { ClusterSnapshot } from '../../src/k8s/source';
import { Netns } from '../../src/netlink/netns';
import { NetlinkSocket } from '../../src/netlink/socket';
import { Agent } from '../../src/pipeline/agent';
import type { Component } from '../../src/pipeline/component';
import { ProxyComponent, ProxyOptions } from '../../src/proxy/component';
import { endpoint, port, slice } from './fixtures';
import type { Host } from './netns-builder';

export const httpDns = [port('http', 'TCP', 80, { targetPort: 'http' }), port('dns', 'UDP', 53, { targetPort: 'dns' })];
export const slicePorts = [
  { name: 'http', protocol: 'TCP' as const, port: 8080 },
  { name: 'dns', protocol: 'UDP' as const, port: 5353 },
];

/** ClusterIPs 198.19.0.n and 2001:db8:f::n. */
export const dual = (n: number) => [`198.19.0.${n}`, `2001:db8:f::${n.toString(16)}`];

export interface DualEndpoint {
  v4: string;
  v6: string;
  nodeName: string;
  over?: Partial<EndpointInfo>;
}

/** An IPv4 and an IPv6 EndpointSlice (`<name>-4`, `<name>-6`) of service x/<name>. */
export function dualSlices(name: string, eps: DualEndpoint[]): EndpointSliceInfo[] {
  return [
    slice('x', `${name}-4`, name, { ports: slicePorts, endpoints: eps.map((e) => endpoint(e.v4, e.nodeName, e.over)) }),
    slice('x', `${name}-6`, name, { addressType: 'IPv6', ports: slicePorts, endpoints: eps.map((e) => endpoint(e.v6, e.nodeName, e.over)) }),
  ];
}

/** `count` probes one after another; the replies (`name source`) or `error <code>`, in order. */
export async function probes(from: Host, host: string, p: number, protocol: 'tcp' | 'udp', count: number, timeoutMs = 2000): Promise<string[]> {
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const o = await from.probe({ host, port: p, protocol, timeoutMs });
    out.push('reply' in o ? o.reply : `error ${o.error}`);
  }
  return out;
}

/** The names that answered. */
export const servers = (replies: string[]) => new Set(replies.map((r) => r.split(' ')[0]));

export interface ProxyAgent {
  proxy: ProxyComponent;
  agent: Agent;
  stop(): Promise<void>;
}

/** The pipeline Agent hosting a ProxyComponent (and any `others`) in the namespace at `nsPath`,
 * started on the snapshot (one full commit of each table). */
export async function startProxyAgent(nsPath: string, opts: ProxyOptions, snapshot: ClusterSnapshot, others: Component[] = []): Promise<ProxyAgent> {
  const netns = Netns.open(nsPath);
  const socket = NetlinkSocket.open({ netns });
  const proxy = new ProxyComponent(opts);
  const agent = new Agent({ socket, logger: pino({ level: 'silent' }), components: [proxy, ...others] });
  const stop = async () => {
    await agent.stop();
    await socket.close();
    netns.close();
  };
  try {
    await agent.start(snapshot);
  } catch (err) {
    await stop();
    throw err;
  }
  return { proxy, agent, stop };
}
