/** Drift made by an independent writer (`nft`) in nfkube's own table: `nfkube verify` reports it
 * exactly, one `agent.resync()` repairs it in one transaction, and verify then passes. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Agent } from '../../src/pipeline/agent';
import { Sandbox, withSandbox } from '../helpers/netns';
import { baseCluster, Cluster, startAgent, verify } from './harness';

/** The kernel-assigned names of the base cluster's chains and sets (ids are content hashes). */
function names(agent: Agent) {
  const m = agent.desiredModel!;
  const chain = (re: RegExp) => [...m.chains.keys()].find((n) => re.test(n))!;
  const set = (re: RegExp) => [...m.sets.keys()].find((n) => re.test(n))!;
  return {
    webIn: chain(/^combo_\w+_in$/),
    clientOut: chain(/^combo_\w+_out$/),
    webPolicy: chain(/^pol_\w+_in$/),
    denyPolicy: chain(/^pol_\w+_out$/),
    clients4: set(/^ps\w+_v4$/),
    clients6: set(/^ps\w+_v6$/),
    ports4: set(/^np\w+_v4$/),
    ports6: set(/^np\w+_v6$/),
  };
}

function handleOf(sb: Sandbox, chain: string, rule: string): string {
  const listing = sb.run('nft', ['-a', 'list', 'chain', 'inet', 'nfkube', chain]);
  const line = listing.split('\n').find((l) => l.trim().startsWith(`${rule} # handle`));
  assert.ok(line, `rule "${rule}" in ${chain}:\n${listing}`);
  return /# handle (\d+)/.exec(line)![1];
}

/** verify reports exactly `expected`, one resync repairs it with one commit, verify passes. */
async function assertDetectedAndRepaired(sb: Sandbox, cluster: Cluster, agent: Agent, expected: string, drift = expected): Promise<void> {
  const before = verify(sb, cluster);
  assert.equal(before.stdout, `${expected}\n`);
  assert.equal(before.status, 1);
  const commits = agent.totals.commits;
  const repair = await agent.resync();
  assert.equal(repair.drift, drift);
  assert.ok(repair.messages > 0);
  assert.equal(agent.totals.commits, commits + 1, 'one transaction');
  const after = verify(sb, cluster);
  assert.equal(after.status, 0, after.stdout);
  assert.match(after.stdout, /^table inet nfkube matches the desired state \(11 chains, 18 sets\)\n$/);
  assert.equal((await agent.resync()).drift, '', 'nothing left to repair');
}

async function withAgent(fn: (sb: Sandbox, cluster: Cluster, agent: Agent) => Promise<void>): Promise<void> {
  await withSandbox(async (sb) => {
    const cluster = baseCluster();
    const agent = await startAgent(sb, cluster);
    assert.equal(verify(sb, cluster).status, 0);
    try {
      await fn(sb, cluster, agent);
    } finally {
      await agent.stop();
    }
  });
}

test('a deleted rule is reported as missing and re-added', async () => {
  await withAgent(async (sb, cluster, agent) => {
    const n = names(agent);
    sb.run('nft', ['delete', 'rule', 'inet', 'nfkube', 'forward_ingress', 'handle', handleOf(sb, 'forward_ingress', 'ct state established,related accept')]);
    sb.run('nft', ['delete', 'rule', 'inet', 'nfkube', 'default_deny_in', 'handle', handleOf(sb, 'default_deny_in', 'drop comment "default deny ingress"')]);
    await assertDetectedAndRepaired(
      sb,
      cluster,
      agent,
      ['~ chain forward_ingress', '+   ct state established,related accept', '~ chain default_deny_in', '+   drop comment "default deny ingress"'].join('\n'),
    );
  });
});

test('a chain edited by another writer (rule added, rule order, base chain policy) is rewritten', async () => {
  await withAgent(async (sb, cluster, agent) => {
    const n = names(agent);
    const added = /# handle (\d+)/.exec(sb.run('nft', ['--echo', '--handle', 'insert', 'rule', 'inet', 'nfkube', n.webIn, 'ip', 'saddr', '198.18.0.9', 'accept']))![1];
    // Same rules, other order: only the order differs.
    const jump = handleOf(sb, n.clientOut, `jump ${n.denyPolicy} comment "y/deny-egress"`);
    sb.run('nft', ['delete', 'rule', 'inet', 'nfkube', n.clientOut, 'handle', jump]);
    sb.run('nft', ['add', 'rule', 'inet', 'nfkube', n.clientOut, 'jump', n.denyPolicy, 'comment', '"y/deny-egress"']);
    sb.run('nft', ['chain', 'inet', 'nfkube', 'input_egress', '{ policy drop; }']);
    await assertDetectedAndRepaired(
      sb,
      cluster,
      agent,
      [
        '~ chain input_egress',
        '    (rule order or base chain settings differ)',
        `~ chain ${n.webIn}`,
        `-   ip saddr 198.18.0.9 accept # handle ${added}`,
        `~ chain ${n.clientOut}`,
        '    (rule order or base chain settings differ)',
      ].join('\n'),
    );
    assert.match(sb.run('nft', ['list', 'chain', 'inet', 'nfkube', 'input_egress']), /policy accept;/);
  });
});

test('removed set and map elements are reported and re-added', async () => {
  await withAgent(async (sb, cluster, agent) => {
    const n = names(agent);
    sb.run('nft', ['delete', 'element', 'inet', 'nfkube', n.clients4, '{ 198.18.0.3 }']);
    sb.run('nft', ['delete', 'element', 'inet', 'nfkube', n.ports6, '{ 2001:db8::2 . tcp . 80 }']);
    sb.run('nft', ['delete', 'element', 'inet', 'nfkube', 'ingress_v4', '{ 198.18.0.2 }']);
    // An element nfkube never meant, in a set it owns.
    sb.run('nft', ['add', 'element', 'inet', 'nfkube', n.clients6, '{ 2001:db8::66 }']);
    await assertDetectedAndRepaired(
      sb,
      cluster,
      agent,
      [
        `+ element ingress_v4 { 198.18.0.2 : goto ${n.webIn} }`,
        `+ element ${n.clients4} { 198.18.0.3 }`,
        `+ element ${n.ports6} { 2001:db8::2 . tcp . 80 }`,
        `- element ${n.clients6} { 2001:db8::66 }`,
      ].join('\n'),
    );
  });
});

test('a flushed table (every rule gone, chains and sets kept) is refilled', async () => {
  await withAgent(async (sb, cluster, agent) => {
    const n = names(agent);
    sb.run('nft', ['flush', 'table', 'inet', 'nfkube']);
    await assertDetectedAndRepaired(
      sb,
      cluster,
      agent,
      [
        '~ chain forward_egress',
        '+   ct state established,related accept',
        '+   meta nfproto ipv6 icmpv6 type 133-136 accept',
        '+   ip saddr vmap @egress_v4',
        '+   ip6 saddr vmap @egress_v6',
        '~ chain forward_ingress',
        '+   ct state established,related accept',
        '+   meta nfproto ipv6 icmpv6 type 133-136 accept',
        '+   ip daddr vmap @ingress_v4',
        '+   ip6 daddr vmap @ingress_v6',
        '~ chain input_egress',
        '+   ct state established,related accept',
        '+   meta nfproto ipv6 icmpv6 type 133-136 accept',
        '+   ip saddr vmap @egress_v4',
        '+   ip6 saddr vmap @egress_v6',
        '~ chain default_deny_in',
        '+   update @deny_in_v4 { ip daddr }',
        '+   update @deny_in_v6 { ip6 daddr }',
        '+   drop comment "default deny ingress"',
        '~ chain default_deny_out',
        '+   update @deny_out_v4 { ip saddr }',
        '+   update @deny_out_v6 { ip6 saddr }',
        '+   drop comment "default deny egress"',
        '~ chain prerouting_source',
        '+   ip saddr @local_src_v4 fib saddr . iif oif missing goto spoofed_source',
        '+   ip6 saddr @local_src_v6 fib saddr . iif oif missing goto spoofed_source',
        '+   ip saddr @bound_src_v4 ip saddr . ether saddr != @local_mac_v4 goto spoofed_source',
        '+   ip6 saddr @bound_src_v6 ip6 saddr . ether saddr != @local_mac_v6 goto spoofed_source',
        '~ chain spoofed_source',
        '+   counter packets 0 bytes 0 drop',
        `~ chain ${n.webPolicy}`,
        `+   ip saddr @${n.clients4} ip daddr . meta l4proto . th dport @${n.ports4} counter packets 0 bytes 0 accept comment "x/web ingress[0]"`,
        `+   ip6 saddr @${n.clients6} ip6 daddr . meta l4proto . th dport @${n.ports6} counter packets 0 bytes 0 accept comment "x/web ingress[0]"`,
        `~ chain ${n.webIn}`,
        `+   jump ${n.webPolicy} comment "x/web"`,
        '+   goto default_deny_in',
        `~ chain ${n.clientOut}`,
        `+   jump ${n.denyPolicy} comment "y/deny-egress"`,
        '+   goto default_deny_out',
      ].join('\n'),
    );
  });
});

test('a deleted table is reported whole and recreated', async () => {
  await withAgent(async (sb, cluster, agent) => {
    const n = names(agent);
    sb.run('nft', ['delete', 'table', 'inet', 'nfkube']);
    await assertDetectedAndRepaired(
      sb,
      cluster,
      agent,
      [
        'table inet nfkube does not exist',
        '+ chain forward_egress (4 rules)',
        '+ chain forward_ingress (4 rules)',
        '+ chain input_egress (4 rules)',
        '+ chain default_deny_in (3 rules)',
        '+ chain default_deny_out (3 rules)',
        '+ chain prerouting_source (4 rules)',
        '+ chain spoofed_source (1 rules)',
        `+ chain ${n.webPolicy} (2 rules)`,
        `+ chain ${n.denyPolicy} (0 rules)`,
        `+ chain ${n.webIn} (2 rules)`,
        `+ chain ${n.clientOut} (2 rules)`,
        '+ set local_src_v4 (3 elements)',
        '+ set bound_src_v4 (0 elements)',
        '+ set local_mac_v4 (0 elements)',
        '+ set local_src_v6 (1 elements)',
        '+ set bound_src_v6 (0 elements)',
        '+ set local_mac_v6 (0 elements)',
        '+ set ingress_v4 (1 elements)',
        '+ set ingress_v6 (1 elements)',
        '+ set egress_v4 (1 elements)',
        '+ set egress_v6 (0 elements)',
        '+ set deny_in_v4 (1 elements)',
        '+ set deny_in_v6 (1 elements)',
        '+ set deny_out_v4 (1 elements)',
        '+ set deny_out_v6 (0 elements)',
        `+ set ${n.clients4} (1 elements)`,
        `+ set ${n.clients6} (0 elements)`,
        `+ set ${n.ports4} (1 elements)`,
        `+ set ${n.ports6} (1 elements)`,
      ].join('\n'),
      'table inet nfkube missing',
    );
  });
});

test('a table switched off (dormant) is reported and replaced awake', async () => {
  await withAgent(async (sb, cluster, agent) => {
    // Every rule and element is in place, but no base chain of a dormant table sees a packet.
    sb.run('nft', ['add table inet nfkube { flags dormant; }']);
    await assertDetectedAndRepaired(sb, cluster, agent, 'table inet nfkube has flags dormant');
    assert.doesNotMatch(sb.run('nft', ['list', 'table', 'inet', 'nfkube']), /dormant/);
  });
});

test('a set recreated with another definition is replaced, and the chain that looks it up refilled', async () => {
  await withAgent(async (sb, cluster, agent) => {
    const n = names(agent);
    // The kernel refuses to delete a set a rule looks up: the other writer empties the chain first.
    sb.run('nft', [`flush chain inet nfkube ${n.webPolicy}; delete set inet nfkube ${n.clients4}; add set inet nfkube ${n.clients4} { type ipv4_addr; flags interval; }`]);
    const before = verify(sb, cluster);
    assert.equal(before.status, 1);
    assert.match(before.stdout, new RegExp(`^~ chain ${n.webPolicy}\n\\+   ip saddr @${n.clients4} `));
    assert.match(before.stdout, new RegExp(`\n~ set ${n.clients4} \\(definition differs\\)\n`));
    const repair = await agent.resync();
    assert.match(repair.drift ?? '', /definition differs/);
    assert.equal(verify(sb, cluster).status, 0);
    assert.doesNotMatch(sb.run('nft', ['list', 'set', 'inet', 'nfkube', n.clients4]), /interval/);
  });
});
