/** How a pod is wired routed from its node, as most CNIs do: its addresses (/32, /128) on its
 * eth0, default routes via the node (IPv6 via the node end's link-local fe80::1), and on the
 * node end `hostIf` a host route to each address with the node's own address as source. */
export interface Addrs {
  v4: string;
  v6: string;
}

/** The `ip` argument lists, in order, once the veth pair exists (hostIf in nodeNs, eth0 in podNs). */
export function routedPodCommands(nodeNs: string, podNs: string, hostIf: string, pod: Addrs, node: Addrs): string[][] {
  return [
    ['-n', podNs, 'addr', 'add', `${pod.v4}/32`, 'dev', 'eth0'],
    ['-n', podNs, 'addr', 'add', `${pod.v6}/128`, 'dev', 'eth0', 'nodad'],
    ['-n', podNs, 'link', 'set', 'eth0', 'up'],
    ['-n', podNs, 'route', 'add', `${node.v4}/32`, 'dev', 'eth0', 'scope', 'link'],
    ['-n', podNs, 'route', 'add', 'default', 'via', node.v4, 'dev', 'eth0'],
    ['-n', podNs, '-6', 'route', 'add', 'default', 'via', 'fe80::1', 'dev', 'eth0'],
    ['-n', nodeNs, 'link', 'set', hostIf, 'up'],
    ['-n', nodeNs, 'addr', 'add', 'fe80::1/64', 'dev', hostIf, 'nodad'],
    ['-n', nodeNs, 'route', 'add', `${pod.v4}/32`, 'dev', hostIf, 'src', node.v4],
    ['-n', nodeNs, '-6', 'route', 'add', `${pod.v6}/128`, 'dev', hostIf, 'src', node.v6],
  ];
}
