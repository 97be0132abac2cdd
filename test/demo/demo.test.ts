/** `nfkube demo` as a user runs it: the matrices it prints before and after the example policies,
 * the ruleset section, and that nothing is left behind, whether it finishes, is interrupted
 * (SIGINT, SIGTERM) or fails. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const root = join(__dirname, '..', '..', '..');
const nfkube = join(root, 'bin', 'nfkube');

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs the demo; `onOutput` sees stdout as it grows and may signal the child. */
function runDemo(args: string[], onOutput?: (stdout: string, pid: number, kill: (s: NodeJS.Signals) => void) => void): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [nfkube, 'demo', '--no-color', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => {
      stdout += d;
      onOutput?.(stdout, child.pid!, (s) => child.kill(s));
    });
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

/** Host links the demo could have made (its veths are called nfk<i>-<pod>): it must make none.
 * Other tests may add and remove links and named namespaces meanwhile, so only these count; a
 * sandbox namespace left behind would show as a process reference or an nsfs bind mount (what
 * `ip netns add` makes), checked by id below. */
function hostState(): { links: string[] } {
  const links = execFileSync('ip', ['-o', 'link', 'show'], { encoding: 'utf8' })
    .split('\n')
    .filter(Boolean)
    .map((l) => l.split(':')[1].trim().split('@')[0])
    .filter((name) => /^nfk\d+-/.test(name));
  return { links: links.sort() };
}

/** `net:[inode]` ids the demo printed for its sandbox. */
function printedNamespaces(stdout: string): string[] {
  return [...stdout.matchAll(/net:\[\d+\]/g)].map((m) => m[0]);
}

/** Every network namespace any process holds, by ns link or open fd (how a namespace stays alive
 * without a bind mount). */
function referencedNamespaces(pids?: string[]): Set<string> {
  const seen = new Set<string>();
  for (const pid of pids ?? readdirSync('/proc').filter((d) => /^\d+$/.test(d))) {
    try {
      seen.add(readlinkSync(`/proc/${pid}/ns/net`));
      for (const fd of readdirSync(`/proc/${pid}/fd`)) {
        try {
          const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
          if (target.startsWith('net:[')) seen.add(target);
        } catch {
          // the fd closed while we looked
        }
      }
    } catch {
      // the process exited while we looked
    }
  }
  return seen;
}

function assertNothingLeft(stdout: string, before: ReturnType<typeof hostState>): void {
  const ids = printedNamespaces(stdout);
  assert.ok(ids.length >= 2, `the demo printed its namespaces:\n${stdout}`);
  const held = referencedNamespaces();
  const mounts = readFileSync('/proc/self/mountinfo', 'utf8');
  for (const id of ids) {
    assert.ok(!held.has(id), `${id} is still held by a process`);
    assert.ok(!mounts.includes(id), `${id} is still bind-mounted`);
  }
  assert.deepEqual(hostState(), before, 'no demo veth in the host namespace');
}

/** The matrix printed under the heading: row label -> cells. */
function matrix(stdout: string, heading: string): Map<string, string[]> {
  const lines = stdout.split('\n');
  const at = lines.findIndex((l) => l.startsWith(heading));
  assert.ok(at >= 0, `no "${heading}" in:\n${stdout}`);
  const columns = lines[at + 1].split(/\s{2,}/).slice(1);
  const families = lines[at + 2].trim().split(/\s+/);
  assert.deepEqual(columns.map((c, i) => `${c} ${families[i]}`), [
    'shop/web:80 v4', 'shop/web:80 v6', 'shop/db:5432 v4', 'shop/db:5432 v6', 'ops/probe:9100 v4', 'ops/probe:9100 v6',
  ]);
  const rows = new Map<string, string[]>();
  for (const line of lines.slice(at + 3)) {
    if (!line.trim()) break;
    const [label, ...cells] = line.split(/\s{2,}/);
    rows.set(label, cells.join(' ').split(/\s+/));
  }
  return rows;
}

test('nfkube demo: all open before, exactly the example policies after, the ruleset, no leftovers', async () => {
  const before = hostState();
  // A generous timeout: an allowed path must never count as blocked on a busy machine.
  const run = await runDemo(['--probe-timeout', '2000']);
  assert.equal(run.code, 0, run.stderr);

  const open = matrix(run.stdout, 'Reachability before any policy');
  assert.deepEqual(Object.fromEntries(open), {
    'node-1 (node)': ['✓', '✓', '✓', '✓', '✓', '✓'],
    'shop/web': ['·', '·', '✓', '✓', '✓', '✓'],
    'shop/db': ['✓', '✓', '·', '·', '✓', '✓'],
    'ops/probe': ['✓', '✓', '✓', '✓', '·', '·'],
  });
  // The Service section: the proxy serves a ClusterIP from two endpoints (each connection named
  // by the endpoint that accepted it), then from the one left after the other is removed.
  const svc = run.stdout.slice(run.stdout.indexOf('A Service answering from its endpoints'), run.stdout.indexOf('The agent committed table inet nfkube '));
  assert.match(svc, /^  Service shop\/demo-echo: ClusterIP 198\.19\.0\.80, 2001:db8:f::80, port 80\/TCP -> 8080 on endpoints shop\/web, shop\/db$/m, svc);
  assert.match(svc, /^  The proxy committed table inet nfkube-proxy: \d+ netlink messages, one transaction/m, svc);
  const looks = [...svc.matchAll(/^  ops\/probe -> (\S+), 16 connections, answered by: (.*)$/gm)].map((m) => `${m[1]} ${m[2]}`);
  assert.deepEqual(looks.map((l) => l.replace(/ \d+(,| \()/g, ' N$1')), [
    '198.19.0.80:80 shop/db N, shop/web N (source seen: 198.18.1.20)',
    '[2001:db8:f::80]:80 shop/db N, shop/web N (source seen: 2001:db8:1::20)',
    '198.19.0.80:80 shop/db N (source seen: 198.18.1.20)',
    '[2001:db8:f::80]:80 shop/db N (source seen: 2001:db8:1::20)',
  ], svc);
  for (const l of looks.slice(2)) assert.match(l, / shop\/db 16 /);
  assert.match(svc, /^  Endpoint shop\/web removed from the EndpointSlices: \d+ netlink messages in one transaction/m, svc);
  // default-deny: shop pods take no ingress but what a policy allows; web-http: any pod may reach
  // web:80; db-from-web: only web reaches db:5432, and db may send only to port 53. The node's
  // own traffic (kubelet probes) is never matched; ops/probe has no policy.
  // Cells that changed from the first matrix carry a *.
  const enforced = matrix(run.stdout, 'Reachability with the NetworkPolicies enforced');
  assert.deepEqual(Object.fromEntries(enforced), {
    'node-1 (node)': ['✓', '✓', '✓', '✓', '✓', '✓'],
    'shop/web': ['·', '·', '✓', '✓', '✓', '✓'],
    'shop/db': ['✗*', '✗*', '·', '·', '✗*', '✗*'],
    'ops/probe': ['✓', '✓', '✗*', '✗*', '·', '·'],
  });
  // A legend for the symbols and the node row, and the policies that decide each closed path.
  assert.match(run.stdout, /Legend:\n  ✓  connected.*\n  ✗  no answer within 2000 ms: dropped.*\n  ·  not probed.*\n(.*\n)*  row node-1 \(node\): connections made by the node itself/);
  assert.match(run.stdout, /  \*  changed from the matrix before the policies/);
  const why = run.stdout.slice(run.stdout.indexOf('Why each path is closed'), run.stdout.indexOf('The drop log of one denied probe'));
  assert.equal(why.split('\n').filter((l) => l.startsWith('  ')).length, 6, why);
  assert.match(why, /  shop\/db -> shop\/web:80 v4 \(✗\): egress of shop\/db is isolated by shop\/db-from-web, it does not allow this/);
  assert.match(why, /  ops\/probe -> shop\/db:5432 v6 \(✗\): ingress of shop\/db is isolated by shop\/db-from-web, shop\/default-deny, none of them allows this/);

  const ruleset = run.stdout.slice(run.stdout.indexOf('The enforced ruleset, read back from the kernel'));
  assert.match(ruleset, /^table inet nfkube \{$/m);
  assert.match(ruleset, /chain forward_ingress \{\n\t\ttype filter hook forward priority 1; policy accept;/);
  assert.match(ruleset, /counter packets [1-9]\d* bytes \d+ accept comment "shop\/db-from-web ingress\[0\]"/);
  // Default denies are counted per pod address (shop/db is the only pod isolated for egress).
  assert.match(ruleset, /set deny_out_v4 \{[^}]*elements = \{ [\d.]+ counter packets [1-9]\d* bytes \d+/);
  assert.match(ruleset, /chain default_deny_out \{\n(.*\n)*?\t\tupdate @deny_out_v4 \{ ip saddr \}.*\n\t\tupdate @deny_out_v6 \{ ip6 saddr \}.*\n\t\tdrop comment "default deny egress"/);
  // Hashed chain names say whose they are.
  assert.match(ruleset, /chain pol_\w+_in \{ # NetworkPolicy shop\/db-from-web, ingress\n/);
  assert.match(ruleset, /chain combo_\w+_out \{ # pod shop\/db, egress\n/);
  assert.doesNotMatch(ruleset, /chain (pol|combo)_\w+ \{\n/, 'every hashed chain is annotated');
  assert.match(run.stdout, /Cleaned up: closed 4 network namespaces/);
  assert.doesNotMatch(run.stdout, /\x1b\[/, '--no-color prints no escape codes');
  assertNothingLeft(run.stdout, before);
});

test('nfkube demo --deny-action reject: IPv6 rejects show as rejects, as IPv4 ones do, not as timeouts', async () => {
  const before = hostState();
  const run = await runDemo(['--deny-action', 'reject', '--probe-timeout', '2000']);
  assert.equal(run.code, 0, run.stderr);
  const enforced = matrix(run.stdout, 'Reachability with the NetworkPolicies enforced');
  assert.deepEqual(Object.fromEntries(enforced), {
    'node-1 (node)': ['✓', '✓', '✓', '✓', '✓', '✓'],
    'shop/web': ['·', '·', '✓', '✓', '✓', '✓'],
    'shop/db': ['EHOSTUNREACH*', 'EACCES*', '·', '·', 'EHOSTUNREACH*', 'EACCES*'],
    'ops/probe': ['✓', '✓', 'EHOSTUNREACH*', 'EACCES*', '·', '·'],
  });
  assert.match(run.stdout, /  EACCES  an ICMPv6 "administratively prohibited" answered: the IPv6 reject/);
  assert.match(run.stdout, /  EHOSTUNREACH  an ICMP "host unreachable \/ administratively prohibited" answered: the IPv4 reject/);
  assertNothingLeft(run.stdout, before);
});

for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  test(`nfkube demo interrupted by ${signal} cleans up and exits ${signal === 'SIGINT' ? 130 : 143}`, async () => {
    const before = hostState();
    let sent = false;
    let heldWhileRunning: string[] = [];
    const run = await runDemo([], (stdout, pid, kill) => {
      if (sent || !stdout.includes('Reachability before any policy')) return;
      sent = true;
      // The printed ids are real: the running demo holds them.
      const held = referencedNamespaces([String(pid)]);
      heldWhileRunning = printedNamespaces(stdout).filter((id) => held.has(id));
      kill(signal);
    });
    assert.ok(sent, run.stdout);
    assert.equal(heldWhileRunning.length, 4, `the demo held its 4 namespaces while running:\n${run.stdout}`);
    assert.equal(run.code, signal === 'SIGINT' ? 130 : 143, run.stderr);
    assert.match(run.stderr, new RegExp(`${signal}, cleaning up`));
    assert.match(run.stdout, /Cleaned up: closed 4 network namespaces/);
    assertNothingLeft(run.stdout, before);
  });
}

test('nfkube demo that fails half-way reports the error, exits 1 and leaves nothing behind', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-demo-'));
  // Two pods with one address: the node's second host route to it is refused (EEXIST).
  const pod = (name: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: default}
spec: {nodeName: node-1, containers: [{name: c, image: x, ports: [{containerPort: 80}]}]}
status: {phase: Running, podIPs: [{ip: 198.18.7.1}]}
`;
  writeFileSync(join(dir, 'pods.yaml'), `${pod('a')}---\n${pod('b')}`);
  const before = hostState();
  const run = await runDemo(['--manifests', dir]);
  assert.equal(run.code, 1);
  assert.match(run.stderr, /RTM_NEWROUTE route 198\.18\.7\.1\/32: EEXIST/);
  assert.deepEqual(hostState(), before);
});

test('nfkube demo with two pods and no third: the node itself is the Service client', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-demo-'));
  const pod = (name: string, ip: string) => `apiVersion: v1
kind: Pod
metadata: {name: ${name}, namespace: default}
spec: {nodeName: node-1, containers: [{name: c, image: x, ports: [{containerPort: 80}]}]}
status: {phase: Running, podIPs: [{ip: ${ip}}]}
`;
  writeFileSync(join(dir, 'pods.yaml'), `${pod('a', '198.18.7.1')}---\n${pod('b', '198.18.7.2')}`);
  const before = hostState();
  const run = await runDemo(['--manifests', dir, '--probe-timeout', '2000']);
  assert.equal(run.code, 0, run.stderr);
  assert.match(run.stdout, /^  Service default\/demo-echo: ClusterIP 198\.19\.0\.80, port 80\/TCP -> 8080 on endpoints default\/a, default\/b$/m);
  const looks = [...run.stdout.matchAll(/^  node-1 \(node\) -> (.*)$/gm)].map((m) => m[1].replace(/ \d+(,| \()/g, ' N$1'));
  assert.deepEqual(looks, [
    '198.19.0.80:80, 16 connections, answered by: default/a N, default/b N (source seen: 198.18.255.1)',
    '198.19.0.80:80, 16 connections, answered by: default/b N (source seen: 198.18.255.1)',
  ], run.stdout);
  assertNothingLeft(run.stdout, before);
});
