/** Test fixtures for IPAM: the test API server serving the ipam.nfkube.io resources and Nodes,
 * pools and nodes, agents over client-node, and the end-of-test checker that compares the API with
 * every agent's own state. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../../src/log';
import { ClientNodeApi, loadKubeConfig } from '../../src/ipam/api';
import { IpamService, IpamServiceOptions } from '../../src/ipam/service';
import { auditCluster, Finding } from '../../src/ipam/check';
import { IpamMetrics } from '../../src/ipam/metrics';
import { KObject } from '../../src/ipam/objects';
import { TestApiServer } from '../helpers/apiserver';

export async function startIpamApiServer(): Promise<TestApiServer> {
  const api = await TestApiServer.start();
  api.serveResource({ plural: 'ippools', kind: 'IPPool', apiVersion: 'ipam.nfkube.io/v1alpha1', namespaced: false });
  api.serveResource({ plural: 'ipblocks', kind: 'IPBlock', apiVersion: 'ipam.nfkube.io/v1alpha1', namespaced: false });
  api.serveResource({ plural: 'ipaddressclaims', kind: 'IPAddressClaim', apiVersion: 'ipam.nfkube.io/v1alpha1', namespaced: false });
  api.serveResource({ plural: 'nodes', kind: 'Node', apiVersion: 'v1', namespaced: false });
  return api;
}

export function pool(name: string, cidrs: string[], blockSize?: { ipv4?: number; ipv6?: number }, nodeSelector?: KObject): KObject {
  return { apiVersion: 'ipam.nfkube.io/v1alpha1', kind: 'IPPool', metadata: { name }, spec: { cidrs, ...(blockSize ? { blockSize } : {}), ...(nodeSelector ? { nodeSelector } : {}) } };
}

export function node(name: string, labels: Record<string, string> = {}): KObject {
  return { apiVersion: 'v1', kind: 'Node', metadata: { name, labels } };
}

export function podObject(namespace: string, name: string, nodeName: string): KObject {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { namespace, name }, spec: { nodeName, containers: [{ name: 'c', image: 'x' }] } };
}

export const quiet = createLogger('silent');

export interface AgentFactory {
  stateDir: string;
  kubeconfig: string;
  make(nodeName: string, extra?: Partial<IpamServiceOptions>): IpamService;
}

export function agentFactory(server: TestApiServer, defaults: Partial<IpamServiceOptions> = {}): AgentFactory {
  const stateDir = mkdtempSync(join(tmpdir(), 'nfkube-ipam-'));
  const kubeconfig = server.writeKubeconfig();
  const kc = loadKubeConfig(kubeconfig);
  return {
    stateDir,
    kubeconfig,
    make(nodeName, extra = {}) {
      const metrics = new IpamMetrics();
      const api = new ClientNodeApi({ kubeConfig: kc, timeoutMs: 10_000, onRequest: (verb, resource) => metrics.apiRequests.inc({ verb, resource }) });
      return new IpamService({ api, nodeName, stateDir, logger: quiet, metrics, gcIntervalMs: 0, publishDelayMs: 50, ...defaults, ...extra });
    },
  };
}

/** Findings from the API (as `nfkube ipam check` sees it) plus what only the agents know:
 * every address held by two handles anywhere, every agent address outside its blocks/claims. */
export function checkEverything(server: TestApiServer, agents: IpamService[]): Finding[] {
  const pods = server.objects('pods').map((p) => ({ namespace: p.metadata.namespace, name: p.metadata.name, uid: p.metadata.uid, nodeName: p.spec?.nodeName }));
  const findings = auditCluster({
    pools: server.objects('ippools'),
    blocks: server.objects('ipblocks'),
    claims: server.objects('ipaddressclaims'),
    pods,
    nodes: server.objects('nodes').map((n) => ({ name: n.metadata.name, labels: n.metadata.labels ?? {} })),
  });
  const blocks = new Map(server.objects('ipblocks').map((b) => [b.metadata.name as string, b]));
  const claims = new Map(server.objects('ipaddressclaims').map((c) => [c.metadata.name as string, c]));
  const seen = new Map<string, string>();
  for (const agent of agents) {
    for (const [key, a] of agent.state.allocations) {
      for (const ip of a.ips) {
        const other = seen.get(ip.address);
        if (other) findings.push({ kind: 'duplicate', message: `${ip.address} held by ${other} and ${agent.nodeName} ${key}` });
        seen.set(ip.address, `${agent.nodeName} ${key}`);
        if (ip.claim) {
          const c = claims.get(ip.claim.name);
          if (!c || c.metadata.uid !== ip.claim.uid || c.spec.node !== agent.nodeName) findings.push({ kind: 'orphan', message: `${agent.nodeName} holds ${ip.address} through a claim the API does not have` });
        } else {
          const b = blocks.get(ip.block);
          if (!b || b.spec.node !== agent.nodeName) findings.push({ kind: 'orphan', message: `${agent.nodeName} holds ${ip.address} in block ${ip.block}, which the API gives to ${b?.spec.node ?? 'nobody'}` });
        }
      }
    }
  }
  return findings;
}
