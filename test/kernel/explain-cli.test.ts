/** `nfkube explain` and `nfkube verify --counters` against the kernel alone (--manifests): the
 * examples enforced in a sandbox, a flow explained, then the table tampered with so the model
 * and the kernel disagree: explain must say so and exit 1. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { withSandbox } from '../helpers/netns';

const ROOT = resolve(__dirname, '..', '..', '..');
const EXAMPLES = join(ROOT, 'examples');

function nfkube(netnsPath: string, args: string[]) {
  const r = spawnSync('nsenter', [`--net=${netnsPath}`, process.execPath, join(ROOT, 'bin', 'nfkube'), ...args], { encoding: 'utf8' });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr };
}

test('explain prints both verdicts and what decides them; a tampered table is a loud disagreement', async () => {
  await withSandbox(async (sb) => {
    const common = ['--manifests', EXAMPLES, '--node-name', 'node-1'];
    assert.equal(nfkube(sb.netns.path, ['agent', '--once', ...common, '--log-level', 'silent']).status, 0);

    const allowed = nfkube(sb.netns.path, ['explain', 'shop/web', 'shop/db', '--port', '5432', ...common]);
    assert.equal(allowed.status, 0, allowed.stderr);
    assert.match(allowed.stdout, /^shop\/web -> shop\/db tcp\/5432, IPv4 198\.18\.0\.10 -> 198\.18\.0\.11\n  model   ALLOWED\n/);
    assert.match(allowed.stdout, /ingress shop\/db: isolated by shop\/default-deny, shop\/db-from-web; allowed by shop\/db-from-web ingress\[0\]/);
    assert.match(allowed.stdout, /  kernel  ALLOWED\n[^]*accept comment "shop\/db-from-web ingress\[0\]"/);
    assert.equal(allowed.stdout.match(/model and kernel agree/g)?.length, 2, 'IPv4 and IPv6');

    const denied = nfkube(sb.netns.path, ['explain', 'ops/probe', 'shop/db', '--port', '5432', '--protocol', 'udp', ...common]);
    assert.equal(denied.status, 0, denied.stderr);
    assert.match(denied.stdout, /model   DENIED[^]*no rule allows it[^]*kernel  DENIED[^]*combo_\w+_in -> [^]*default_deny_in: drop comment "default deny ingress"/);

    const counters = nfkube(sb.netns.path, ['verify', '--counters', ...common]);
    assert.equal(counters.status, 0, counters.stdout);
    assert.match(counters.stdout, /^POLICY +DIRECTION +PODS +DROPPED +DROPPED BYTES +AUDITED +ACCEPTED\n/);
    assert.match(counters.stdout, /shop\/default-deny +ingress +2 +0 +0 +0 +0/);

    sb.run('nft', ['flush', 'map', 'inet', 'nfkube', 'ingress_v4']);
    const broken = nfkube(sb.netns.path, ['explain', 'ops/probe', 'shop/db', '--port', '5432', ...common]);
    assert.equal(broken.status, 1);
    assert.match(broken.stdout, /IPv4[^]*model   DENIED[^]*kernel  ALLOWED[^]*MODEL AND KERNEL DISAGREE/);
    assert.match(broken.stderr, /the model and the kernel disagree/);

    const bad = nfkube(sb.netns.path, ['explain', 'nope/nope', 'shop/db', ...common]);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /"nope\/nope" is neither an address nor a known pod/);
  });
});

test('a foreign rule matching fields a flow does not define (ip ttl, ip length, tcp flags): explain answers UNKNOWN naming it; names are printed escaped', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-explain-'));
  try {
    for (const f of ['cluster.yaml', 'policies.yaml']) copyFileSync(join(EXAMPLES, f), join(dir, f));
    // A policy whose name carries terminal control sequences, selecting shop/db.
    writeFileSync(join(dir, 'evil.json'), JSON.stringify({ apiVersion: 'networking.k8s.io/v1', kind: 'NetworkPolicy', metadata: { namespace: 'shop', name: 'evil\x1b[2J\x1b]0;owned\x07' }, spec: { podSelector: { matchLabels: { app: 'db' } }, policyTypes: ['Ingress'] } }));
    await withSandbox(async (sb) => {
      const common = ['--manifests', dir, '--node-name', 'node-1'];
      assert.equal(nfkube(sb.netns.path, ['agent', '--once', ...common, '--log-level', 'silent']).status, 0);

      const counters = nfkube(sb.netns.path, ['verify', '--counters', ...common]);
      assert.equal(counters.status, 0, counters.stdout);
      assert.doesNotMatch(counters.stdout, /[\x1b\x07]/, 'no control character reaches the terminal');
      assert.match(counters.stdout, /^shop\/evil\\u001b\[2J\\u001b\]0;owned\\u0007 +ingress +1 /m);

      const denied = nfkube(sb.netns.path, ['explain', 'ops/probe', 'shop/db', '--port', '5432', ...common]);
      assert.equal(denied.status, 0, denied.stderr);
      assert.doesNotMatch(denied.stdout, /[\x1b\x07]/);
      assert.match(denied.stdout, /isolated by [^\n]*shop\/evil\\u001b\[2J/);

      for (const [match, field] of [['ip ttl 64', /ip ttl/], ['ip length 40', /ip length/], ['tcp flags 0', /tcp doff\/flags|tcp flags/]] as const) {
        sb.run('nft', ['insert', 'rule', 'inet', 'nfkube', 'forward_ingress', ...match.split(' '), 'drop', 'comment', '"foreign"']);
        const r = nfkube(sb.netns.path, ['explain', 'shop/web', 'shop/db', '--port', '5432', ...common]);
        assert.equal(r.status, 1, `${match}: not an answer`);
        assert.match(r.stdout, /  kernel  UNKNOWN: cannot evaluate table inet nfkube, chain forward_ingress: /, match);
        assert.match(r.stdout, field, match);
        assert.match(r.stdout, /\(rule forward_ingress: [^\n]*drop comment "foreign" # handle \d+\)\n/, `${match}: the rule is named`);
        // The IPv4 flow's verdict is unknown; an ip (IPv4) match cannot match IPv6, so that one is known.
        const [v4, v6] = r.stdout.split(/(?=^shop\/web -> shop\/db tcp\/5432, IPv6)/m);
        assert.doesNotMatch(v4, /kernel  (ALLOWED|DENIED)/, match);
        if (match.startsWith('ip ')) assert.match(v6, /kernel  ALLOWED[^]*model and kernel agree/, match);
        assert.match(r.stderr, /the kernel verdict is unknown/);
        sb.run('nft', ['flush', 'chain', 'inet', 'nfkube', 'forward_ingress']);
        assert.equal(nfkube(sb.netns.path, ['agent', '--once', ...common, '--log-level', 'silent']).status, 0);
      }
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
