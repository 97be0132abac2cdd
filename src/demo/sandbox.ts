/** The demo's stand-in for a node and its pods: one fresh network namespace for the node and one
 * per pod, each pod joined to the node by a veth pair and routed the way most CNIs do it (a /32
 * and /128 host route per pod on the node, a default route via the node in the pod). Built with
 * rtnetlink only. Nothing is created in the caller's own namespace, so the host's links, routes
 * and firewall are never touched, and the kernel removes everything once the handles close (or
 * the process dies). */
import { isIPv4 } from 'node:net';
import type { PodInfo } from '../k8s/model';
import { AF_INET, AF_INET6 } from '../netlink/message';
import { Netns } from '../netlink/netns';
import { Rtnl } from '../rtnl/client';
import { IFA_F_NODAD, RT_SCOPE_LINK } from '../rtnl/constants';

/** The node's own addresses, on its loopback: the gateway of every pod and the source of
 * node-to-pod traffic. */
export const NODE_V4 = '198.18.255.1';
export const NODE_V6 = '2001:db8:ffff::1';
/** The node end of every pod's veth answers for this link-local gateway. */
const NODE_LINK_LOCAL = 'fe80::1';
const IFNAMSIZ = 16;

export interface SandboxPod {
  /** namespace/name */
  key: string;
  pod: PodInfo;
  netns: Netns;
  /** The node end of the pod's veth pair (the pod end is eth0). */
  hostLink: string;
}

export class Sandbox {
  readonly pods: SandboxPod[] = [];
  private closed = false;

  private constructor(readonly nodeName: string, readonly node: Netns) {}

  /** Builds the node and one namespace per pod; on failure everything made so far is closed. */
  static async build(nodeName: string, pods: PodInfo[]): Promise<Sandbox> {
    for (const pod of pods) {
      if (pod.ips.includes(NODE_V4) || pod.ips.includes(NODE_V6)) {
        throw new Error(`Pod ${pod.namespace}/${pod.name}: status.podIPs uses ${NODE_V4} or ${NODE_V6}, the demo node's own address`);
      }
    }
    const sandbox = new Sandbox(nodeName, Netns.create());
    try {
      await sandbox.setUpNode();
      for (const pod of pods) await sandbox.addPod(pod);
      return sandbox;
    } catch (err) {
      sandbox.close();
      throw err;
    }
  }

  private async setUpNode(): Promise<void> {
    const rtnl = Rtnl.open(this.node);
    try {
      const lo = await rtnl.link('lo');
      if (!lo) throw new Error(`node ${this.nodeName}: no loopback link`);
      await rtnl.setUp(lo.index);
      await rtnl.addAddress({ index: lo.index, address: NODE_V4, prefixLen: 32 });
      await rtnl.addAddress({ index: lo.index, address: NODE_V6, prefixLen: 128, flags: IFA_F_NODAD });
      // rtnetlink has no IPv6 forwarding switch (the kernel refuses IFLA_INET6_CONF with EINVAL):
      // IPv4 forwarding is set per pod link below, IPv6 through the namespace's own sysctl.
      this.node.writeSysctl('net/ipv6/conf/all/forwarding', '1');
    } finally {
      await rtnl.close();
    }
  }

  private async addPod(pod: PodInfo): Promise<void> {
    const key = `${pod.namespace}/${pod.name}`;
    const hostLink = `nfk${this.pods.length}-${pod.name}`.slice(0, IFNAMSIZ - 1);
    const netns = Netns.create();
    this.pods.push({ key, pod, netns, hostLink });
    const node = Rtnl.open(this.node);
    const inPod = Rtnl.open(netns);
    try {
      await node.createVeth({ name: hostLink }, { name: 'eth0', netnsFd: netns.fd });
      const host = await node.link(hostLink);
      if (!host) throw new Error(`pod ${key}: veth ${hostLink} vanished after creation`);
      await node.setUp(host.index);
      await node.setIPv4Forwarding(host.index, true);
      await node.addAddress({ index: host.index, address: NODE_LINK_LOCAL, prefixLen: 64, flags: IFA_F_NODAD });

      const lo = await inPod.link('lo');
      const eth0 = await inPod.link('eth0');
      if (!lo || !eth0) throw new Error(`pod ${key}: lo or eth0 missing in its namespace`);
      await inPod.setUp(lo.index);
      await inPod.setUp(eth0.index);
      for (const ip of pod.ips) {
        const v4 = isIPv4(ip);
        await inPod.addAddress({ index: eth0.index, address: ip, prefixLen: v4 ? 32 : 128, flags: v4 ? undefined : IFA_F_NODAD });
        await node.addRoute(v4
          ? { family: AF_INET, dst: ip, dstLen: 32, oif: host.index, scope: RT_SCOPE_LINK, prefsrc: NODE_V4 }
          : { family: AF_INET6, dst: ip, dstLen: 128, oif: host.index, prefsrc: NODE_V6 });
      }
      await inPod.addRoute({ family: AF_INET, dst: NODE_V4, dstLen: 32, oif: eth0.index, scope: RT_SCOPE_LINK });
      await inPod.addRoute({ family: AF_INET, dstLen: 0, gateway: NODE_V4, oif: eth0.index });
      await inPod.addRoute({ family: AF_INET6, dstLen: 0, gateway: NODE_LINK_LOCAL, oif: eth0.index });
    } finally {
      await node.close();
      await inPod.close();
    }
  }

  /** Closes every namespace handle; the kernel then deletes the namespaces and their veths. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    for (const p of this.pods) p.netns.close();
    this.node.close();
  }
}
