/** The service proxy on real EndpointSlices: two simulated nodes (test/proxy/two-node-net.ts)
 * run `nfkube agent --proxy --no-policy` as the DaemonSet's ServiceAccount (deploy/overlays/proxy)
 * against kube-apiserver; pods are created through the API and their readiness written as
 * kubelet writes it; Services get their ClusterIPs and NodePorts from the apiserver and their
 * EndpointSlices from kube-controller-manager's controller. Packets from a node and from an
 * external client show which endpoints serve, as pods become ready, unready, terminating and
 * deleted; a headless Service costs no kernel work. */
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { probes, servers } from '../proxy/packet-fixtures';
import { CLIENT, createTwoNodeNet, NODE_A, NODE_B, type TwoNodeNet } from '../proxy/two-node-net';
import { AgentProcess } from './agent-process';
import { waitFor, type KObject } from './api';
import { ControlPlane } from './control-plane';
import { accountUsername, applyObjects, daemonSetAccount, deployObjects } from './deploy';
import { applyNamespace, kubeletStatus } from './desired-objects';
import { joinNode } from './node';

const PODS_PER_NODE = 2;
const NS = 'shop';

function podObject(name: string, nodeName: string): KObject {
  return {
    apiVersion: 'v1', kind: 'Pod', metadata: { namespace: NS, name, labels: { app: 'web' } },
    spec: { nodeName, containers: [{ name: 'serve', image: 'registry.k8s.io/e2e-test-images/agnhost:2.47',
      ports: [{ name: 'http', containerPort: 8080, protocol: 'TCP' }, { name: 'dns', containerPort: 5353, protocol: 'UDP' }] }] },
  };
}

function serviceObject(name: string, spec: KObject): KObject {
  return {
    apiVersion: 'v1', kind: 'Service', metadata: { namespace: NS, name },
    spec: { selector: { app: 'web' }, ipFamilyPolicy: 'RequireDualStack', ports: [{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }, { name: 'dns', port: 53, targetPort: 'dns', protocol: 'UDP' }], ...spec },
  };
}

describe('service proxy against kube-apiserver and the EndpointSlice controller (two nodes)', () => {
  let cp: ControlPlane;
  let net: TwoNodeNet;
  let deployed: KObject[];
  const agents: AgentProcess[] = [];
  const pods = [...Array(PODS_PER_NODE).keys()].flatMap((i) => [
    { name: `a${i}`, node: NODE_A, addr: NODE_A.pod(i) },
    { name: `b${i}`, node: NODE_B, addr: NODE_B.pod(i) },
  ]);
  const ready = async (name: string, isReady: boolean): Promise<void> => {
    const p = pods.find((x) => x.name === name)!;
    await cp.admin.patchStatus(podObject(p.name, p.node.name), kubeletStatus({ phase: 'Running', podIP: p.addr.v4, podIPs: [{ ip: p.addr.v4 }, { ip: p.addr.v6 }] }, isReady));
  };

  before(async () => {
    cp = await ControlPlane.start();
    deployed = deployObjects('overlays/proxy');
    await applyObjects(cp.admin, deployed);
    net = await createTwoNodeNet(PODS_PER_NODE, { tcp: [8080], udp: [5353] });
    for (const [spec, n] of [[NODE_A, net.a], [NODE_B, net.b]] as const) {
      const node = await joinNode(cp, deployed, { name: spec.name, netnsPath: n.nsPath, podCIDRs: [...spec.podCIDRs], addresses: [spec.addr.v4, spec.addr.v6] });
      agents.push(AgentProcess.start(n.nsPath, spec.name, node.agentKubeconfig, ['--proxy', '--no-policy']));
    }
    await applyNamespace(cp.admin, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
    for (const p of pods) {
      await cp.admin.apply(podObject(p.name, p.node.name));
      await ready(p.name, true);
    }
    await Promise.all(agents.map((a) => a.waitForFirstSync()));
  });

  after(async () => {
    await Promise.all(agents.map((a) => a.stop()));
    net?.close();
    await cp?.close();
  });

  test('a ClusterIP Service answers from every ready pod, from the addresses the apiserver allocated, through the controller\'s EndpointSlices', async () => {
    const svc = await cp.admin.apply(serviceObject('web', {}));
    assert.equal(svc.spec.clusterIPs.length, 2, 'dual-stack ClusterIPs from the ServiceCIDRs');
    const slices = await waitFor('EndpointSlices of web from the controller', async () => {
      const list = await cp.admin.get(`/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=kubernetes.io/service-name=web`);
      const ready = list.items.flatMap((s: KObject) => s.endpoints ?? []).filter((e: KObject) => e.conditions?.ready);
      return ready.length === 2 * pods.length ? list.items : undefined;
    });
    assert.ok(slices.every((s: KObject) => s.metadata.labels['endpointslice.kubernetes.io/managed-by'] === 'endpointslice-controller.k8s.io'));
    for (const ip of svc.spec.clusterIPs as string[]) {
      const answered = await waitFor(`ClusterIP ${ip} to answer from all pods`, async () => {
        // A round of probes in which every pod answered and nothing else did: rounds started while
        // the agent was still committing the endpoints may hold an ECONNREFUSED (no endpoints yet).
        const seen = servers(await probes(net.a.host, ip, 80, 'tcp', 40, 1000));
        return pods.every((p) => seen.has(p.name)) && seen.size === pods.length ? seen : undefined;
      });
      assert.equal(answered.size, pods.length);
      const udp = servers(await probes(net.b.host, ip, 53, 'udp', 10, 1000));
      assert.ok([...udp].every((n) => pods.some((p) => p.name === n)), `UDP answers only from pods: ${[...udp]}`);
    }
  });

  test('an unready pod stops serving and serves again when ready; a deleted pod (terminating, then gone) stops serving', async () => {
    const ip = (await cp.admin.get(`/api/v1/namespaces/${NS}/services/web`)).spec.clusterIPs[0] as string;
    await ready('a0', false);
    await waitFor('a0 to stop serving', async () => (servers(await probes(net.a.host, ip, 80, 'tcp', 20, 1000)).has('a0') ? undefined : true));
    const without = servers(await probes(net.a.host, ip, 80, 'tcp', 40, 1000));
    assert.equal(without.has('a0'), false, `an unready endpoint gets no new connections: ${[...without]}`);
    await ready('a0', true);
    await waitFor('a0 to serve again', async () => (servers(await probes(net.a.host, ip, 80, 'tcp', 20, 1000)).has('a0') || undefined));

    // A graceful delete with no kubelet to finish it: the pod stays, terminating, in its slice.
    await cp.admin.delete(podObject('b1', NODE_B.name), '?gracePeriodSeconds=300');
    await waitFor('b1 to be terminating in its EndpointSlice', async () => {
      const list = await cp.admin.get(`/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=kubernetes.io/service-name=web`);
      return list.items.flatMap((s: KObject) => s.endpoints ?? []).some((e: KObject) => e.targetRef?.name === 'b1' && e.conditions?.terminating) || undefined;
    });
    await waitFor('b1 to stop serving', async () => (servers(await probes(net.a.host, ip, 80, 'tcp', 20, 1000)).has('b1') ? undefined : true));
    await cp.admin.delete(podObject('b1', NODE_B.name), '?gracePeriodSeconds=0');
    const after = servers(await probes(net.b.host, ip, 80, 'tcp', 30, 1000));
    assert.equal(after.has('b1'), false);
    const p = pods.find((x) => x.name === 'b1')!;
    await cp.admin.apply(podObject('b1', NODE_B.name));
    await ready(p.name, true);
  });

  test('NodePort from an external client: Cluster policy reaches every node\'s pods, Local only the receiving node\'s', async () => {
    const cluster = await cp.admin.apply(serviceObject('np', { type: 'NodePort' }));
    const local = await cp.admin.apply(serviceObject('np-local', { type: 'NodePort', externalTrafficPolicy: 'Local' }));
    const nodePort = (s: KObject): number => s.spec.ports.find((x: KObject) => x.name === 'http').nodePort;
    assert.ok(nodePort(cluster) >= 30000 && nodePort(local) >= 30000, 'NodePorts allocated by the apiserver');
    await waitFor('NodePort (Cluster) on node-a to reach node-b\'s pods', async () => (servers(await probes(net.client, NODE_A.addr.v4, nodePort(cluster), 'tcp', 20, 1000)).has('b0') || undefined));
    const seenLocal = await waitFor('NodePort (Local) on node-b to answer', async () => {
      const s = servers(await probes(net.client, NODE_B.addr.v6, nodePort(local), 'tcp', 20, 1000));
      return s.size > 0 && ![...s].some((n) => n.startsWith('error')) ? s : undefined;
    });
    assert.ok([...seenLocal].every((n) => n.startsWith('b')), `Local: only node-b's pods: ${[...seenLocal]}`);
    const replies = await probes(net.client, NODE_B.addr.v4, nodePort(local), 'tcp', 10, 1000);
    assert.ok(replies.every((r) => r.endsWith(CLIENT.v4)), `Local keeps the client's source address: ${replies}`);
  });

  test('a headless Service causes no kernel work', async () => {
    const since = agents.map((a) => a.lines.length);
    await cp.admin.apply(serviceObject('headless', { clusterIP: 'None', clusterIPs: ['None'] }));
    await waitFor('EndpointSlices of the headless Service', async () => {
      const list = await cp.admin.get(`/apis/discovery.k8s.io/v1/namespaces/${NS}/endpointslices?labelSelector=kubernetes.io/service-name=headless`);
      return list.items.length > 0 || undefined;
    });
    // A later, real change (a Service without selector: no EndpointSlice follows) is committed
    // after the headless events were seen: had they caused kernel work, a commit of their own
    // would come before the marker's.
    await cp.admin.apply(serviceObject('marker', { selector: undefined }));
    for (const [i, a] of agents.entries()) {
      await a.waitForLine('the marker Service committed', (l) => l.msg === 'sync committed' && JSON.stringify(l).includes('marker'), since[i]);
      const commits = a.lines.slice(since[i]).filter((l) => l.msg === 'sync committed');
      assert.equal(commits.length, 1, `${a.nodeName}: one commit, the marker's: ${JSON.stringify(commits.map((c) => c.objects))}`);
    }
  });

  test('every request of both agents was allowed by the shipped RBAC', () => {
    const events = cp.auditEvents(accountUsername(daemonSetAccount(deployed)));
    assert.deepEqual(cp.refusedRequests(accountUsername(daemonSetAccount(deployed))), []);
    for (const resource of ['/api/v1/services', '/api/v1/nodes', '/apis/discovery.k8s.io/v1/endpointslices']) {
      assert.ok(events.some((e) => e.verb === 'watch' && e.requestURI.startsWith(`${resource}?`)), `watch ${resource}`);
    }
  });
});
