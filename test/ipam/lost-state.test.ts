/** A lost local record: the agent restarted without its state file holds what the blocks publish
 * for handles it no longer knows until GC proves their pods gone, and `ipam check` finds two live
 * pods sharing a pool address even after the owner has overwritten what it published. */
import assert from 'node:assert/strict';
import { renameSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { auditCluster } from '../../src/ipam/check';
import { IpamRequest } from '../../src/cni/protocol';
import { TestApiServer } from '../helpers/apiserver';
import { agentFactory, AgentFactory, node, pool, podObject, startIpamApiServer } from './cluster';

let server: TestApiServer;
let f: AgentFactory;

before(async () => {
  server = await startIpamApiServer();
  f = agentFactory(server);
});
after(async () => server.close());

const add = (id: string, podName?: string): IpamRequest => ({ command: 'ADD', network: 'net', containerID: id, ifname: 'eth0', ...(podName ? { args: { K8S_POD_NAMESPACE: 'default', K8S_POD_NAME: podName } } : {}) });
const v4 = (r: Awaited<ReturnType<import('../../src/ipam/service').IpamService['handle']>>) => (r.ok ? r.ips![0].address : `failed: ${JSON.stringify(r)}`);

test('with its state file moved away, the agent holds the published address of a live pod until GC finds the pod gone', async () => {
  // One /29: six usable addresses.
  server.create(pool('lost', ['198.18.130.0/29'], { ipv4: 29 }));
  server.create(node('lost-node'));
  server.create(podObject('default', 'old', 'lost-node'));
  const first = f.make('lost-node');
  await first.start();
  const held = v4(await first.handle(add('old-c', 'old')));
  await first.flushPublish();
  first.crash();
  renameSync(first.walPath, `${first.walPath}.moved`);
  const again = f.make('lost-node');
  await again.start();
  const fresh = [];
  for (let i = 0; i < 5; i++) fresh.push(v4(await again.handle(add(`new-${i}`))));
  assert.ok(fresh.every((a) => /^198\.18\.130\.\d+\/29$/.test(a)), fresh.join());
  assert.ok(!fresh.includes(held), `${held} stays with the live pod: ${fresh.join()}`);
  assert.equal((await again.handle(add('one-too-many'))).ok, false, 'the block is full: the published address counts');
  assert.equal(v4(await again.handle(add('old-c', 'old'))), held, "the old pod's retried ADD gets its address back");
  await again.runGc();
  assert.ok(again.state.allocations.has('net/old-c/eth0'), 'a live pod keeps its address through GC');
  server.delete('Pod', 'default', 'old');
  await again.runGc();
  assert.equal(v4(await again.handle(add('after-gc'))), held, 'once the pod is gone its address is free');
  await again.stop();
});

test('ipam check: two live pods with one pool address, or a pod using an address published for another live pod, are duplicates', () => {
  const blocks = [{ metadata: { name: 'v4-198-18-131-0-29', uid: 'u' }, spec: { pool: 'chk', cidr: '198.18.131.0/29', node: 'n' }, status: { allocations: { '2': { handle: 'net/a/eth0', pod: { namespace: 'default', name: 'a' } } } } }];
  const pods = [
    { namespace: 'default', name: 'a', uid: '1', ips: ['198.18.131.3'] },
    { namespace: 'default', name: 'b', uid: '2', ips: ['198.18.131.3'] },
    { namespace: 'default', name: 'c', uid: '3', ips: ['198.18.131.2'] },
    { namespace: 'other-net', name: 'd', uid: '4', ips: ['10.0.0.1'] },
    { namespace: 'other-net', name: 'e', uid: '5', ips: ['10.0.0.1'] },
  ];
  const findings = auditCluster({ pools: [pool('chk', ['198.18.131.0/29'], { ipv4: 29 })], blocks, claims: [], pods });
  assert.deepEqual(
    findings.filter((x) => x.kind === 'duplicate').map((x) => x.message),
    ['198.18.131.3 is the address of 2 pods: default/a, default/b', '198.18.131.2 is held for pod default/a (IPBlock v4-198-18-131-0-29, n net/a/eth0) but pod default/c uses it'],
  );
});
