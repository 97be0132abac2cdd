/** The UDP conntrack cleanup with real packets: a client that keeps its source port (as a
 * resolver does) keeps reaching a removed endpoint while its conntrack entry lives, unless the
 * proxy deletes the entry over ctnetlink after committing the change, and then it reaches a
 * live endpoint at once; an endpoint removed while no proxy ran (a restart, two `--once` runs) is
 * found by the reconcile of the next start. The conntrack binary is only the oracle. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pino from 'pino';
import { ConntrackClient } from '../../src/conntrack/client';
import { Netns } from '../../src/netlink/netns';
import { NetlinkSocket } from '../../src/netlink/socket';
import { Agent } from '../../src/pipeline/agent';
import { ProxyComponent } from '../../src/proxy/component';
import { endpoint, node, port, service, slice, snapshotOf } from './fixtures';
import { createServiceNet, NODE_V4, NODE_V6, POD_CIDRS, podV4, podV6 } from './service-net';

const N1 = 'node-1';

const N1_NODES = [node(N1, { addresses: [{ type: 'InternalIP', address: NODE_V4 }, { type: 'InternalIP', address: NODE_V6 }], podCIDRs: POD_CIDRS })];
const DNS = service('x', 'dns', { clusterIPs: ['198.19.0.53', '2001:db8:f::35'], ports: [port('dns', 'UDP', 53, { targetPort: 5353 })] });
const DNS_PORTS = [{ name: 'dns', protocol: 'UDP' as const, port: 5353 }];
const dnsSlices = (i: number) => [
  slice('x', 'dns-4', 'dns', { ports: DNS_PORTS, endpoints: [endpoint(podV4(i), N1)] }),
  slice('x', 'dns-6', 'dns', { addressType: 'IPv6', ports: DNS_PORTS, endpoints: [endpoint(podV6(i), N1)] }),
];

test('UDP: an endpoint removed while no proxy ran is reconciled at the next start (IPv4 and IPv6)', { timeout: 90_000 }, async () => {
  const net = await createServiceNet(2, { tcp: [], udp: [5353] });
  const netns = Netns.open(net.nodeNsPath);
  const socket = NetlinkSocket.open({ netns });
  try {
    const sport = 43000;
    const ask = async (host: string) => {
      const o = await net.client.probe({ host, port: 53, protocol: 'udp', sport, timeoutMs: 2000 });
      return 'reply' in o ? o.reply.split(' ')[0] : `error ${o.error}`;
    };
    const run = async (endpointPod: number) => {
      const proxy = new ProxyComponent({ nodeName: N1, clusterCIDRs: POD_CIDRS, conntrack: new ConntrackClient(socket) });
      const agent = new Agent({ socket, logger: pino({ level: 'silent' }), components: [proxy] });
      await agent.start(snapshotOf([DNS], dnsSlices(endpointPod), N1_NODES));
      await agent.idle();
      await proxy.conntrackIdle();
      return { proxy, agent };
    };
    const first = await run(0);
    for (const host of ['198.19.0.53', '2001:db8:f::35']) assert.equal(await ask(host), 'pod0', `${host} before`);
    // The process ends with its table in place; the endpoint moves while none runs.
    await first.agent.stop();
    const second = await run(1);
    try {
      for (const host of ['198.19.0.53', '2001:db8:f::35']) assert.equal(await ask(host), 'pod1', `${host}: the pinned client reaches the live endpoint`);
      assert.ok(second.proxy.conntrackDeleted >= 2, `deleted ${second.proxy.conntrackDeleted}`);
    } finally {
      await second.agent.stop();
    }
  } finally {
    await socket.close();
    netns.close();
    net.close();
  }
});

test('UDP: without cleanup a pinned client keeps the removed endpoint; with it, a live one at once (IPv4 and IPv6)', { timeout: 90_000 }, async () => {
  const net = await createServiceNet(2, { tcp: [], udp: [5353] });
  const netns = Netns.open(net.nodeNsPath);
  const socket = NetlinkSocket.open({ netns });
  try {
    const dns = service('x', 'dns', { clusterIPs: ['198.19.0.53', '2001:db8:f::35'], ports: [port('dns', 'UDP', 53, { targetPort: 5353 })] });
    const ports = [{ name: 'dns', protocol: 'UDP' as const, port: 5353 }];
    const slices = (i: number) => [
      slice('x', 'dns-4', 'dns', { ports, endpoints: [endpoint(podV4(i), N1)] }),
      slice('x', 'dns-6', 'dns', { addressType: 'IPv6', ports, endpoints: [endpoint(podV6(i), N1)] }),
    ];
    const nodes = [node(N1, { addresses: [{ type: 'InternalIP', address: NODE_V4 }, { type: 'InternalIP', address: NODE_V6 }], podCIDRs: POD_CIDRS })];
    const client = net.client;
    const ask = async (host: string, sport: number) => {
      const o = await client.probe({ host, port: 53, protocol: 'udp', sport, timeoutMs: 2000 });
      return 'reply' in o ? o.reply.split(' ')[0] : `error ${o.error}`;
    };
    const entries = (host: string, sport: number) =>
      net.run(['conntrack', '-L', '-p', 'udp', '--orig-dst', host]).split('\n').filter((l) => l.includes(`sport=${sport} dport=53 `));

    for (const [withCleanup, sport] of [[false, 41000], [true, 42000]] as const) {
      const proxy = new ProxyComponent({ nodeName: N1, clusterCIDRs: POD_CIDRS, conntrack: withCleanup ? new ConntrackClient(socket) : undefined });
      const agent = new Agent({ socket, logger: pino({ level: 'silent' }), components: [proxy] });
      await agent.start(snapshotOf([dns], slices(0), nodes));
      for (const host of ['198.19.0.53', '2001:db8:f::35']) assert.equal(await ask(host, sport), 'pod0', `${host} before`);
      for (const s of slices(1)) agent.onChange({ kind: 'EndpointSlice', type: 'upsert', key: `x/${s.name}`, object: s });
      await agent.idle();
      await proxy.conntrackIdle();
      for (const host of ['198.19.0.53', '2001:db8:f::35']) {
        if (withCleanup) {
          assert.equal(entries(host, sport).length, 0, `${host}: the stale entry is gone`);
          assert.equal(await ask(host, sport), 'pod1', `${host}: the same client reaches the live endpoint`);
        } else {
          assert.equal(entries(host, sport).length, 1, `${host}: the entry stays`);
          assert.equal(await ask(host, sport), 'pod0', `${host}: the same client still reaches the removed endpoint`);
          // A new source port is a new flow: it already goes to the live endpoint.
          assert.equal(await ask(host, sport + 1), 'pod1');
        }
      }
      if (withCleanup) assert.ok(proxy.conntrackDeleted >= 2);
      await agent.stop();
      // The next round starts from the first endpoint again, with fresh source ports.
      net.run(['nft', 'delete', 'table', 'inet', 'nfkube-proxy']);
    }
  } finally {
    await socket.close();
    netns.close();
    net.close();
  }
});
