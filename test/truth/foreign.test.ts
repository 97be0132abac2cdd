/** Foreign safety: a namespace holding kube-proxy's iptables-nft tables, ip6tables, iptables-legacy
 * rules, another firewall's nft table and ipsets comes out of everything nfkube does byte-identical. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { NetlinkSocket } from '../../src/netlink/socket';
import { withSandbox } from '../helpers/netns';
import { churnSyncs } from './churn';
import { baseCluster, foreignState, nfkube, NODE, startAgent, verify } from './harness';
import { IP6TABLES, IPSETS, IPTABLES, IPTABLES_LEGACY, OTHER_NFT } from './kube-proxy';

test('foreign rules, tables and ipsets survive start, 1,000 syncs, drift repairs, restart and cleanup byte-identical', async () => {
  await withSandbox(async (sb) => {
    sb.run('ipset', ['restore'], IPSETS);
    sb.run('iptables-restore', [], IPTABLES);
    sb.run('ip6tables-restore', [], IP6TABLES);
    sb.run('iptables-legacy-restore', [], IPTABLES_LEGACY);
    sb.run('nft', ['-f', '-'], OTHER_NFT);
    const original = foreignState(sb);
    // The fixture really is there, in every store.
    assert.match(original.iptables, /-j DNAT --to-destination 198\.18\.200\.1:6443/);
    assert.match(original.iptables, /-m mark --mark 0x4000\/0x4000 -j ACCEPT/);
    assert.match(original.ip6tables, /KUBE-SEP-ZXCVBNMLKJHGFDSA/);
    assert.match(original.iptablesLegacy, /LEGACY-FW/);
    assert.match(original.nft, /"hostfw"/);
    assert.match(original.ipset, /KUBE-NODE-IPS[\s\S]*KUBE-LOOP-BACK[\s\S]*other-blocklist/);
    const unchanged = (step: string) => assert.deepEqual(foreignState(sb), original, `foreign state after ${step}`);

    const cluster = baseCluster();
    const dir = cluster.writeManifests();
    const once = nfkube(sb, ['agent', '--once', '--manifests', dir, '--node-name', NODE]);
    assert.equal(once.status, 0, once.stderr);
    assert.match(once.stderr, /base chain inet hostfw forward_filter \(hook forward priority 5 policy drop\) can override nfkube/);
    unchanged('agent start (CLI)');

    const agent = await startAgent(sb, cluster);
    await churnSyncs(cluster, agent, 1000);
    assert.equal(verify(sb, cluster).status, 0);
    unchanged('1,000 syncs');

    sb.run('nft', ['flush', 'chain', 'inet', 'nfkube', 'forward_ingress']);
    sb.run('nft', ['flush', 'map', 'inet', 'nfkube', 'egress_v4']);
    sb.run('nft', ['add', 'rule', 'inet', 'nfkube', 'input_egress', 'quota', 'over', '1', 'mbytes', 'drop']);
    assert.ok((await agent.resync()).drift);
    sb.run('nft', ['delete', 'table', 'inet', 'nfkube']);
    assert.match((await agent.resync()).drift ?? '', /missing/);
    assert.equal(verify(sb, cluster).status, 0);
    unchanged('drift repairs');
    await agent.stop();

    // Restart: a new process (socket) and agent on the same namespace, same cluster.
    const socket = NetlinkSocket.open({ netns: sb.netns });
    try {
      const restarted = await startAgent(sb, cluster, undefined, socket);
      assert.equal((await restarted.resync()).drift, '');
      await churnSyncs(cluster, restarted, 20, 1000);
      await restarted.stop();
    } finally {
      await socket.close();
    }
    assert.equal(verify(sb, cluster).status, 0);
    unchanged('restart');

    const cleanup = nfkube(sb, ['cleanup']);
    assert.equal(cleanup.status, 0, cleanup.stderr);
    assert.doesNotMatch(sb.run('nft', ['list', 'tables']), /inet nfkube/);
    unchanged('cleanup');
    assert.equal(nfkube(sb, ['cleanup']).status, 0, 'cleanup with nothing to clean');
    unchanged('a second cleanup');
  });
});
