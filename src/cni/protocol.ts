/** The unix-socket protocol between the CNI plugin and the agent: one JSON request line, one JSON
 * reply line. Type-only for the plugin, which must not load anything at run time. */
import type { IpFamily } from '../net/ip';

export type IpamCommand = 'ADD' | 'DEL' | 'CHECK' | 'GC' | 'STATUS';

export interface IpamRequest {
  command: IpamCommand;
  /** The network configuration's name: handles are per network. */
  network: string;
  containerID?: string;
  ifname?: string;
  /** IPPool name from the ipam config; absent: the first pool (by name) selecting this node. */
  pool?: string;
  /** CNI_ARGS as key/value (K8S_POD_NAMESPACE, K8S_POD_NAME, K8S_POD_UID...). */
  args?: Record<string, string>;
  /** GC: the attachments of this network that are still in use. */
  validAttachments?: Array<{ containerID: string; ifname: string }>;
  /** CHECK: the addresses the runtime holds (from prevResult), as "ip/prefix". */
  expected?: string[];
}

export interface IpamIp {
  /** "address/prefix" with the pool's prefix length. */
  address: string;
  family: IpFamily;
}

/** The compiled plugin's request (native/cni/): the runtime's call as it came, the CNI_* environment
 * and the configuration from stdin, for the agent to answer exactly as the Node plugin would. */
export interface CniExecRequest {
  command: 'EXEC';
  env: Record<string, string>;
  config: unknown;
}

/** The answer to an EXEC: the plugin's exit status and its stdout, to be printed as is. */
export interface CniExecReply {
  exit: number;
  stdout: string;
}

export type IpamReply = { ok: true; ips?: IpamIp[]; released?: number } | { ok: false; code: number; msg: string; details?: string };

/** CNI error codes (spec 1.1, "Error" section). */
export const CNI_ERR = {
  incompatibleVersion: 1,
  unsupportedField: 2,
  containerUnknown: 3,
  invalidEnv: 4,
  ioFailure: 5,
  decodeFailure: 6,
  invalidConfig: 7,
  tryAgainLater: 11,
  pluginNotAvailable: 50,
  /** Plugin-specific (100+): CHECK found other addresses than the runtime holds. */
  addressMismatch: 100,
} as const;
