/** A node for the service proxy's packet tests: a node namespace with routed pods (veth, /32 and
 * /128 routes) and an external client on an uplink link, each running svc-pod.js. Named
 * namespaces `nfkp-<random>-…`, always removed again; the host's namespace is never touched.
 *
 *   client  198.18.100.2 / 2001:db8:100::2  --uplink--  node 198.18.100.1 / 2001:db8:100::1
 *   pod i   198.18.1.(10+i) / 2001:db8:1::(10+i), pod CIDRs 198.18.1.0/24, 2001:db8:1::/64 */
import { Host, NetnsBuilder, NODE_SYSCTLS, nsPath, ServePorts } from './netns-builder';

export type { Host } from './netns-builder';

export const NODE_V4 = '198.18.100.1';
export const NODE_V6 = '2001:db8:100::1';
export const CLIENT_V4 = '198.18.100.2';
export const CLIENT_V6 = '2001:db8:100::2';
export const POD_CIDRS = ['198.18.1.0/24', '2001:db8:1::/64'];
export const podV4 = (i: number) => `198.18.1.${10 + i}`;
export const podV6 = (i: number) => `2001:db8:1::${(10 + i).toString(16)}`;

export interface ServiceNet {
  nodeNsPath: string;
  client: Host;
  pods: Host[];
  /** A probe from the node itself (host-originated traffic). */
  node: Host;
  run(args: string[]): string;
  /** Runs a command in the client's namespace. */
  runInClient(args: string[]): string;
  close(): void;
}

/** `nodePorts`: what the node itself serves (a host-network endpoint), nothing when absent. */
export async function createServiceNet(podCount: number, ports: ServePorts, nodePorts?: ServePorts): Promise<ServiceNet> {
  const b = new NetnsBuilder();
  const ip = (args: string[]) => b.ip(args);
  try {
    const nodeNs = b.addNetns('node');
    b.sysctl(nodeNs, NODE_SYSCTLS);
    const clientNs = b.addNetns('client');
    ip(['-n', nodeNs, 'link', 'add', 'uplink', 'type', 'veth', 'peer', 'name', 'eth0', 'netns', clientNs]);
    ip(['-n', nodeNs, 'addr', 'add', `${NODE_V4}/24`, 'dev', 'uplink']);
    ip(['-n', nodeNs, 'addr', 'add', `${NODE_V6}/64`, 'dev', 'uplink', 'nodad']);
    ip(['-n', nodeNs, 'link', 'set', 'uplink', 'up']);
    ip(['-n', clientNs, 'addr', 'add', `${CLIENT_V4}/24`, 'dev', 'eth0']);
    ip(['-n', clientNs, 'addr', 'add', `${CLIENT_V6}/64`, 'dev', 'eth0', 'nodad']);
    ip(['-n', clientNs, 'link', 'set', 'eth0', 'up']);
    ip(['-n', clientNs, 'route', 'add', 'default', 'via', NODE_V4]);
    // The node's own default route goes out the uplink, as a real node's does: service addresses
    // are routable (to nowhere) before the proxy translates them.
    ip(['-n', nodeNs, 'route', 'add', 'default', 'via', CLIENT_V4]);
    ip(['-n', nodeNs, '-6', 'route', 'add', 'default', 'via', CLIENT_V6]);
    ip(['-n', clientNs, '-6', 'route', 'add', 'default', 'via', NODE_V6]);
    const podNs: string[] = [];
    for (let i = 0; i < podCount; i++) podNs.push(b.addRoutedPod(nodeNs, `pod${i}`, `pod${i}`, { v4: podV4(i), v6: podV6(i) }, { v4: NODE_V4, v6: NODE_V6 }));
    const client = await b.start('client', clientNs);
    const pods = await Promise.all(podNs.map((ns, i) => b.start(`pod${i}`, ns, ports)));
    const node = await b.start('node', nodeNs, nodePorts);
    return {
      nodeNsPath: nsPath(nodeNs),
      client,
      pods,
      node,
      run: (args) => b.run(nodeNs, args),
      runInClient: (args) => b.run(clientNs, args),
      close: () => b.close(),
    };
  } catch (err) {
    b.close();
    throw err;
  }
}
