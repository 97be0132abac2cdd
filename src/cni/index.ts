/** `nfkube/cni`: the CNI IPAM plugin (`nfkube-cni-ipam`) and its request protocol with the node
 * agent's socket. */
export { main, cniCall, cniExec, NetConf, Ask } from './plugin';
export { IpamCommand, IpamRequest, IpamReply, IpamIp, CNI_ERR } from './protocol';
