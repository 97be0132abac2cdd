/** The proxy through the command line, in a namespace made for the test: `agent --once --proxy`
 * programs the proxy's table from a manifests directory (Services, EndpointSlices, Nodes) beside
 * the policy table, `verify --proxy` finds it equal, `render --proxy` prints text nft itself loads
 * into the same table (the oracle), `--no-policy` runs the proxy alone, and `cleanup` removes
 * both tables and nothing else. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { withSandbox } from '../helpers/netns';
import { node1, web, webSlice } from '../k8s/service-objects';

const ROOT = resolve(__dirname, '../../..');
const NFKUBE = join(ROOT, 'bin/nfkube');

test('agent --once --proxy, verify, render (loaded by nft), --no-policy, cleanup', { timeout: 120_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-proxy-cli-'));
  try {
    const headless = { apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'x', name: 'h' }, spec: { clusterIP: 'None', ports: [{ port: 80 }] } };
    writeFileSync(join(dir, 'svc.yaml'), [web, webSlice, node1, headless].map((o) => JSON.stringify(o)).join('\n---\n'));
    await withSandbox(async (sb) => {
      const nfkube = (args: string[]) => spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, NFKUBE, ...args], { encoding: 'utf8', cwd: ROOT });
      const flags = ['--manifests', dir, '--node-name', 'node-1', '--proxy', '--cluster-cidr', '198.18.0.0/16,2001:db8::/32'];
      const once = nfkube(['agent', '--once', ...flags, '--log-level', 'warn']);
      assert.equal(once.status, 0, once.stderr);
      const tables = sb.run('nft', ['list', 'tables']);
      assert.match(tables, /table inet nfkube\n/);
      assert.match(tables, /table inet nfkube-proxy/);
      const listed = sb.run('nft', ['list', 'table', 'inet', 'nfkube-proxy']);
      assert.match(listed, /198\.19\.0\.10 \. 6 \. 80 : goto service-v4-x\/web\/tcp\/http|198\.19\.0\.10 \. tcp \. 80 : goto service-v4-x\/web\/tcp\/http/);
      assert.equal(listed.includes('x/h/'), false, 'the headless service is not proxied');
      const verified = nfkube(['verify', ...flags]);
      assert.equal(verified.status, 0, verified.stdout + verified.stderr);
      assert.match(verified.stdout, /table inet nfkube-proxy matches/);
      // The rendering is nft syntax: nft loads it into a fresh table and lists the same thing.
      const rendered = nfkube(['render', '--manifests', dir, '--node-name', 'node-1', '--proxy', '--no-policy', '--cluster-cidr', '198.18.0.0/16,2001:db8::/32']);
      assert.equal(rendered.status, 0, rendered.stderr);
      sb.run('nft', ['delete', 'table', 'inet', 'nfkube-proxy']);
      sb.run('nft', ['-f', '-'], rendered.stdout);
      const again = nfkube(['verify', '--no-policy', ...flags]);
      assert.equal(again.status, 0, again.stdout + again.stderr);
      // A changed endpoint is drift verify reports.
      sb.run('nft', ['flush', 'chain', 'inet', 'nfkube-proxy', 'services']);
      const drift = nfkube(['verify', '--no-policy', ...flags]);
      assert.equal(drift.status, 1);
      assert.match(drift.stdout, /chain services/);
      const bad = nfkube(['agent', '--once', '--no-policy', '--manifests', dir]);
      assert.equal(bad.status === 0, false);
      assert.match(bad.stderr + bad.stdout, /--no-policy needs --proxy or --ipam/);
      const cleaned = nfkube(['cleanup']);
      assert.equal(cleaned.status, 0, cleaned.stderr);
      assert.equal(sb.run('nft', ['list', 'tables']).trim(), '');
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
