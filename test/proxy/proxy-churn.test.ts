/** Endpoint churn without lost connections (the seed-000 property, for services): while one
 * service's endpoints are added and removed 500 times (the ready set always non-empty, only
 * ready ones change), a client connecting every 10 ms to its ClusterIP sees no failure. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { Netns } from '../../src/netlink/netns';
import { NetlinkSocket } from '../../src/netlink/socket';
import { Agent } from '../../src/pipeline/agent';
import { ProxyComponent } from '../../src/proxy/component';
import { endpoint, node, port, service, slice, snapshotOf } from './fixtures';
import { createServiceNet, NODE_V4, POD_CIDRS, podV4 } from './service-net';

test('500 endpoint changes while a client connects every 10 ms: 0 failures', { timeout: 180_000 }, async () => {
  const net = await createServiceNet(3, { tcp: [8080], udp: [] });
  const netns = Netns.open(net.nodeNsPath);
  const socket = NetlinkSocket.open({ netns });
  const proxy = new ProxyComponent({ nodeName: 'node-1', clusterCIDRs: POD_CIDRS });
  const agent = new Agent({ socket, logger: pino({ level: 'silent' }), components: [proxy] });
  try {
    const web = service('x', 'web', { clusterIPs: ['198.19.0.80'], ports: [port('http', 'TCP', 80)] });
    const ports = [{ name: 'http', protocol: 'TCP' as const, port: 8080 }];
    const sliceOf = (hosts: number[]) => slice('x', 'web-a', 'web', { ports, endpoints: hosts.map((i) => endpoint(podV4(i), 'node-1')) });
    await agent.start(snapshotOf([web], [sliceOf([0])], [node('node-1', { addresses: [{ type: 'InternalIP', address: NODE_V4 }], podCIDRs: POD_CIDRS })]));
    let stop = false;
    const outcomes: string[] = [];
    const client = (async () => {
      while (!stop) {
        const o = await net.pods[2].probe({ host: '198.19.0.80', port: 80, protocol: 'tcp', timeoutMs: 2000 });
        outcomes.push('reply' in o ? o.reply.split(' ')[0] : `error ${o.error}`);
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    // pod0 always ready; pod1 comes and goes.
    for (let i = 0; i < 500; i++) {
      agent.onChange({ kind: 'EndpointSlice', type: 'upsert', key: 'x/web-a', object: sliceOf(i % 2 === 0 ? [0, 1] : [0]) });
      await agent.idle();
      await new Promise((r) => setTimeout(r, 5));
    }
    stop = true;
    await client;
    const failures = outcomes.filter((o) => o.startsWith('error'));
    assert.ok(outcomes.length >= 50, `only ${outcomes.length} connections`);
    assert.deepEqual(failures, [], `${failures.length} of ${outcomes.length} connections failed`);
    assert.deepEqual(new Set(outcomes), new Set(['pod0', 'pod1']));
  } finally {
    await agent.stop();
    await socket.close();
    netns.close();
    net.close();
  }
});
