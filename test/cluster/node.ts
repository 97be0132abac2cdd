/** A simulated node joining the tier's cluster: its Node object, the apiserver on its loopback
 * (a relay), and kubeconfigs for the agent (the DaemonSet ServiceAccount's token from the
 * TokenRequest API) and for the test's own admin commands run inside it. */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import type { KObject } from './api';
import { ControlPlane, REPO_ROOT } from './control-plane';
import { daemonSetAccount } from './deploy';

export interface JoinedNode {
  name: string;
  netnsPath: string;
  /** The agent's kubeconfig: the DaemonSet account's token. */
  agentKubeconfig: string;
  /** The same file with a token file instead, for rotation. */
  tokenFile: string;
  tokenFileKubeconfig: string;
  adminKubeconfig: string;
}

export async function joinNode(
  cp: ControlPlane,
  deployed: KObject[],
  node: { name: string; netnsPath: string; podCIDRs?: string[]; addresses?: string[] },
): Promise<JoinedNode> {
  await cp.admin.apply({ apiVersion: 'v1', kind: 'Node', metadata: { name: node.name, labels: { 'kubernetes.io/os': 'linux', 'kubernetes.io/hostname': node.name } },
    spec: node.podCIDRs ? { podCIDR: node.podCIDRs[0], podCIDRs: node.podCIDRs } : {} });
  if (node.addresses) {
    await cp.admin.patchStatus({ apiVersion: 'v1', kind: 'Node', metadata: { name: node.name } }, {
      addresses: node.addresses.map((address) => ({ type: 'InternalIP', address })),
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString() }],
    });
  }
  await cp.relayInto(node.netnsPath);
  const account = daemonSetAccount(deployed);
  const token = await cp.admin.requestToken(account.namespace, account.name);
  const tokenFile = cp.writeFile(`${node.name}.token`, token);
  return {
    name: node.name,
    netnsPath: node.netnsPath,
    agentKubeconfig: cp.kubeconfig(`${node.name}-agent`, { token }),
    tokenFile,
    tokenFileKubeconfig: cp.kubeconfig(`${node.name}-agent-file`, { tokenFile }),
    adminKubeconfig: cp.kubeconfig(`${node.name}-admin`, cp.pki.admin),
  };
}

/** `nfkube ARGS` inside a node's namespace: its exit code and output. */
export function nfkubeInNode(netnsPath: string, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => execFile('nsenter', [`--net=${netnsPath}`, process.execPath, join(REPO_ROOT, 'bin', 'nfkube'), ...args], { cwd: REPO_ROOT, timeout: 60_000 },
    (err, stdout, stderr) => resolve({ code: err ? (typeof (err as { code?: unknown }).code === 'number' ? (err as { code: number }).code : 1) : 0, out: `${stdout}${stderr}` })));
}

/** `nfkube verify` in the node's namespace as the admin: true iff the kernel holds what the
 * API's state asks for (`args`: the agent's rendering flags and table). */
export async function kernelMatchesApi(node: JoinedNode, args: string[]): Promise<boolean> {
  return (await nfkubeInNode(node.netnsPath, ['verify', '--kubeconfig', node.adminKubeconfig, '--node-name', node.name, ...args])).code === 0;
}
