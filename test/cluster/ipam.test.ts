/** IPAM against kube-apiserver: the CRDs and RBAC of deploy/overlays/ipam, an IPPool created
 * through the API, two simulated nodes each running `nfkube agent --ipam` as the DaemonSet's
 * ServiceAccount, and Debian's bridge plugin calling nfkube-cni-ipam for pods on both nodes at
 * once, so both agents claim blocks concurrently through real create conflicts. Then a pod deleted
 * through the API is garbage collected. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { startIndex } from '../../src/ipam/pool';
import { COMPILED_PLUGIN, NODE_PLUGIN, runPlugin } from '../ipam/plugins';
import { NetnsBuilder, nsPath } from '../proxy/netns-builder';
import { AgentProcess } from './agent-process';
import { waitFor, type KObject } from './api';
import { ControlPlane } from './control-plane';
import { accountUsername, applyObjects, daemonSetAccount, deployObjects } from './deploy';
import { applyNamespace } from './desired-objects';
import { joinNode, nfkubeInNode, type JoinedNode } from './node';

const BRIDGE = '/usr/lib/cni/bridge';
/** Two names whose first choice of block is the same (asserted below): both nodes create the
 * same IPBlock at once and one of them gets a real 409 from the apiserver. */
const NODES = ['ipam-1', 'ipam-10'];
const PODS_PER_NODE = 3;
const NS = 'apps';
/** Blocks of four addresses: each node's three pods need more than one. */
const POOL = { apiVersion: 'ipam.nfkube.io/v1alpha1', kind: 'IPPool', metadata: { name: 'cluster' }, spec: { cidrs: ['198.18.64.0/26', '2001:db8:64::/122'], blockSize: { ipv4: 30, ipv6: 126 } } };

interface SimNode {
  joined: JoinedNode;
  ns: string;
  socket: string;
  agent: AgentProcess;
  pods: string[];
}

function v4Of(result: { ips: Array<{ address: string }> }): string {
  return result.ips.find((ip) => ip.address.includes('.'))!.address.split('/')[0];
}

describe('IPAM against kube-apiserver: CNI bridge + nfkube-cni-ipam on two nodes', { skip: existsSync(BRIDGE) ? false : 'containernetworking-plugins is not installed' }, () => {
  let cp: ControlPlane;
  let deployed: KObject[];
  const b = new NetnsBuilder();
  const nodes: SimNode[] = [];
  const pluginDir = mkdtempSync(join(tmpdir(), 'nfkube-cni-bin-'));
  const results = new Map<string, { ips: Array<{ address: string }> }>();

  const cni = (n: SimNode, command: string, pod: string, stdinExtra: KObject = {}) =>
    runPlugin(['nsenter', `--net=${nsPath(n.ns)}`, BRIDGE], {
      PATH: `${dirname(process.execPath)}:/usr/sbin:/usr/bin:/sbin:/bin`,
      CNI_COMMAND: command,
      CNI_CONTAINERID: `${n.joined.name}-${pod}`,
      CNI_NETNS: nsPath(`${b.prefix}-${pod}`),
      CNI_IFNAME: 'eth0',
      CNI_PATH: `${pluginDir}:/usr/lib/cni`,
      CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=${NS};K8S_POD_NAME=${pod}`,
    }, JSON.stringify({ cniVersion: '1.0.0', name: 'nfkube-tier', type: 'bridge', bridge: 'nfk0', isGateway: false, ipMasq: false,
      ipam: { type: 'nfkube-cni-ipam', socket: n.socket, pool: 'cluster' }, ...stdinExtra }));

  before(async () => {
    cp = await ControlPlane.start();
    deployed = deployObjects('overlays/ipam');
    await applyObjects(cp.admin, deployed);
    await cp.admin.apply(POOL);
    await applyNamespace(cp.admin, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    symlinkSync(COMPILED_PLUGIN ?? NODE_PLUGIN, join(pluginDir, 'nfkube-cni-ipam'));
    for (const name of NODES) {
      const ns = b.addNetns(name);
      const joined = await joinNode(cp, deployed, { name, netnsPath: nsPath(ns) });
      const state = join(cp.dir, `${name}-ipam`);
      mkdirSync(state);
      const socket = join(state, 'ipam.sock');
      const agent = AgentProcess.start(nsPath(ns), name, joined.agentKubeconfig, ['--ipam', '--no-policy', '--ipam-socket', socket, '--ipam-state-dir', state, '--ipam-gc-interval', '5s']);
      const pods = [...Array(PODS_PER_NODE).keys()].map((i) => `${name}-p${i}`);
      for (const pod of pods) {
        b.addNetns(pod);
        await cp.admin.apply({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: NS, name: pod }, spec: { nodeName: name, containers: [{ name: 'c', image: 'registry.k8s.io/pause:3.10' }] } });
      }
      nodes.push({ joined, ns, socket, agent, pods });
    }
    for (const n of nodes) await waitFor(`the IPAM socket of ${n.joined.name}`, () => existsSync(n.socket) || undefined, 120_000, 100);
  });

  after(async () => {
    await Promise.all(nodes.map((n) => n.agent.stop()));
    b.close();
    await cp?.close();
  });

  test('pods on two nodes get distinct addresses from blocks each node claimed through the API, concurrently', async (t) => {
    const runs = await Promise.all(nodes.flatMap((n) => n.pods.map(async (pod) => ({ pod, run: await cni(n, 'ADD', pod) }))));
    for (const { pod, run } of runs) {
      assert.equal(run.status, 0, `bridge ADD of ${pod}: ${run.out} ${run.err}`);
      results.set(pod, JSON.parse(run.out));
    }
    const v4 = [...results.values()].map(v4Of);
    assert.equal(new Set(v4).size, v4.length, `distinct addresses: ${v4}`);
    const blocks = (await cp.admin.get('/apis/ipam.nfkube.io/v1alpha1/ipblocks')).items as KObject[];
    assert.equal(new Set(blocks.map((x) => x.spec.cidr)).size, blocks.length, 'no block claimed twice');
    for (const n of nodes) {
      const mine = blocks.filter((x) => x.spec.node === n.joined.name).map((x) => x.spec.cidr as string);
      assert.ok(mine.length > 0, `${n.joined.name} claimed blocks`);
      for (const pod of n.pods) {
        const addr = v4Of(results.get(pod)!);
        const inMine = mine.some((cidr) => cidr.includes('.') && sameV4Block(addr, cidr));
        const claimed = ((await cp.admin.get('/apis/ipam.nfkube.io/v1alpha1/ipaddressclaims')).items as KObject[]).some((c) => c.spec.address === addr && c.spec.node === n.joined.name);
        assert.ok(inMine || claimed, `${pod} ${addr} lies in a block of ${n.joined.name} (${mine}) or a claim of it`);
      }
    }
    const conflicts = cp.auditEvents(accountUsername(daemonSetAccount(deployed))).filter((e) => e.verb === 'create' && e.requestURI.includes('/ipblocks') && e.responseStatus?.code === 409);
    const first = (node: string) => startIndex(`${node}/${BigInt(0xc6124000)}`, 16n);
    assert.equal(first(NODES[0]), first(NODES[1]), 'both nodes try the same v4 block first');
    assert.ok(conflicts.length > 0, 'one node\'s create of a block the other created was refused with 409');
    t.diagnostic(`${conflicts.length} block creates answered 409 AlreadyExists`);
    const check = await nfkubeInNode(nodes[0].joined.netnsPath, ['ipam', 'check', '--kubeconfig', nodes[0].joined.adminKubeconfig]);
    assert.equal(check.code, 0, `nfkube ipam check: ${check.out}`);
  });

  test('a pod deleted through the API has its addresses garbage collected by its node\'s agent', async () => {
    const [victim, survivor] = nodes[1].pods;
    // Blocks publish their allocations in status, by ordinal, with the pod each is for.
    const published = async (pod: string) => ((await cp.admin.get('/apis/ipam.nfkube.io/v1alpha1/ipblocks')).items as KObject[])
      .some((x) => Object.values((x.status?.allocations ?? {}) as Record<string, KObject>).some((a) => a.pod?.name === pod));
    await waitFor(`the allocation of ${victim} to be published in its block`, async () => (await published(victim)) || undefined);
    await cp.admin.delete({ apiVersion: 'v1', kind: 'Pod', metadata: { namespace: NS, name: victim } }, '?gracePeriodSeconds=0');
    await waitFor(`the allocation of deleted pod ${victim} to be released`, async () => ((await published(victim)) ? undefined : true), 120_000, 250);
    assert.ok(await published(survivor), `the live pod ${survivor} keeps its allocation`);
  });

  test('every request of both agents was allowed by the shipped RBAC', () => {
    assert.deepEqual(cp.refusedRequests(accountUsername(daemonSetAccount(deployed))), []);
  });
});

function sameV4Block(addr: string, cidr: string): boolean {
  const [base, len] = cidr.split('/');
  const n = (s: string) => s.split('.').reduce((acc, o) => acc * 256 + Number(o), 0);
  const size = 2 ** (32 - Number(len));
  return Math.floor(n(addr) / size) === Math.floor(n(base) / size);
}
