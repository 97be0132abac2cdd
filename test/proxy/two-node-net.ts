/** Two nodes and an external client on one LAN (a bridge in its own namespace), for the service
 * proxy's cross-node packet tests. Each node routes its own pods (veth, /32 and /128 routes) and
 * the other node's pod CIDR via that node, as a host-gateway CNI does; the client knows only the
 * LAN. Every pod runs svc-pod.js, answering with its name and the source it saw.
 *
 *   client 198.18.100.100 / 2001:db8:100::64
 *   node-a 198.18.100.1 / 2001:db8:100::1  pods a<i> 198.18.1.(10+i) / 2001:db8:1::(10+i), zone a
 *   node-b 198.18.100.2 / 2001:db8:100::2  pods b<i> 198.18.2.(10+i) / 2001:db8:2::(10+i), zone b */
import type { NodeInfo } from '../../src/k8s/service-model';
import { node } from './fixtures';
import { Host, NetnsBuilder, NODE_SYSCTLS, nsPath, ServePorts } from './netns-builder';

export const CLIENT = { v4: '198.18.100.100', v6: '2001:db8:100::64' };

export interface TwoNodeSpec {
  name: string;
  zone: string;
  addr: { v4: string; v6: string };
  podCIDRs: [string, string];
  pod(i: number): { v4: string; v6: string };
}

function nodeSpec(letter: 'a' | 'b', n: number): TwoNodeSpec {
  return {
    name: `node-${letter}`,
    zone: letter,
    addr: { v4: `198.18.100.${n}`, v6: `2001:db8:100::${n}` },
    podCIDRs: [`198.18.${n}.0/24`, `2001:db8:${n}::/64`],
    pod: (i) => ({ v4: `198.18.${n}.${10 + i}`, v6: `2001:db8:${n}::${(10 + i).toString(16)}` }),
  };
}

export const NODE_A = nodeSpec('a', 1);
export const NODE_B = nodeSpec('b', 2);

/** The Node objects both proxies read: addresses, pod CIDRs, zone. */
export function nodeObjects(): NodeInfo[] {
  return [NODE_A, NODE_B].map((n) =>
    node(n.name, { addresses: [{ type: 'InternalIP', address: n.addr.v4 }, { type: 'InternalIP', address: n.addr.v6 }], podCIDRs: [...n.podCIDRs], zone: n.zone }),
  );
}

export interface NetNode {
  spec: TwoNodeSpec;
  nsPath: string;
  /** svc-pod.js in the node's own namespace (host-originated traffic). */
  host: Host;
  pods: Host[];
}

export interface TwoNodeNet {
  a: NetNode;
  b: NetNode;
  client: Host;
  close(): void;
}

export async function createTwoNodeNet(podsPerNode: number, ports: ServePorts): Promise<TwoNodeNet> {
  const b = new NetnsBuilder();
  const ip = (args: string[]) => b.ip(args);
  try {
    const lan = b.addNetns('lan');
    ip(['-n', lan, 'link', 'add', 'br0', 'type', 'bridge', 'stp_state', '0']);
    ip(['-n', lan, 'link', 'set', 'br0', 'up']);
    const plug = (ns: string, port: string, addr: { v4: string; v6: string }) => {
      ip(['-n', lan, 'link', 'add', port, 'type', 'veth', 'peer', 'name', 'uplink', 'netns', ns]);
      ip(['-n', lan, 'link', 'set', port, 'master', 'br0']);
      ip(['-n', lan, 'link', 'set', port, 'up']);
      ip(['-n', ns, 'addr', 'add', `${addr.v4}/24`, 'dev', 'uplink']);
      ip(['-n', ns, 'addr', 'add', `${addr.v6}/64`, 'dev', 'uplink', 'nodad']);
      ip(['-n', ns, 'link', 'set', 'uplink', 'up']);
    };
    const clientNs = b.addNetns('client');
    plug(clientNs, 'client', CLIENT);
    const build = (spec: TwoNodeSpec, peer: TwoNodeSpec) => {
      const ns = b.addNetns(spec.name);
      b.sysctl(ns, NODE_SYSCTLS);
      plug(ns, spec.name, spec.addr);
      ip(['-n', ns, 'route', 'add', peer.podCIDRs[0], 'via', peer.addr.v4]);
      ip(['-n', ns, '-6', 'route', 'add', peer.podCIDRs[1], 'via', peer.addr.v6]);
      // Service addresses are routable (to nowhere: the client) before the proxy translates them.
      ip(['-n', ns, 'route', 'add', 'default', 'via', CLIENT.v4]);
      ip(['-n', ns, '-6', 'route', 'add', 'default', 'via', CLIENT.v6]);
      const pods: string[] = [];
      for (let i = 0; i < podsPerNode; i++) pods.push(b.addRoutedPod(ns, `${spec.zone}${i}`, `pod${i}`, spec.pod(i), spec.addr));
      return { ns, pods };
    };
    const na = build(NODE_A, NODE_B);
    const nb = build(NODE_B, NODE_A);
    const start = async (spec: TwoNodeSpec, n: { ns: string; pods: string[] }): Promise<NetNode> => ({
      spec,
      nsPath: nsPath(n.ns),
      host: await b.start(spec.name, n.ns),
      pods: await Promise.all(n.pods.map((ns, i) => b.start(`${spec.zone}${i}`, ns, ports))),
    });
    return { a: await start(NODE_A, na), b: await start(NODE_B, nb), client: await b.start('client', clientNs), close: () => b.close() };
  } catch (err) {
    b.close();
    throw err;
  }
}
