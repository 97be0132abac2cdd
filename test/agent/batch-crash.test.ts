/** A first sync in bounded batches, killed with SIGKILL at every batch boundary (the crash hook
 * NFKUBE_TEST_KILL_AFTER_BATCH, with tiny batches from NFKUBE_TEST_BATCH_LIMITS), in a namespace
 * made for the test: at each boundary every base chain present already holds exactly its final
 * rules (nothing half-programmed is reachable), and the next start completes the table to what
 * an uninterrupted run leaves (nft's own listing, the oracle) and `verify` finds it equal. Once
 * for the policy table, once for the proxy's. */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { test } from 'node:test';
import { Sandbox, withSandbox } from '../helpers/netns';
import { node1 } from '../k8s/service-objects';
import { baseCluster, pod } from './fixtures';

const ROOT = resolve(__dirname, '../../..');
const NFKUBE = join(ROOT, 'bin/nfkube');
const LIMITS = '4,3';

interface Listing {
  chains: Map<string, string[]>;
  sets: Map<string, string[]>;
  base: string[];
}

const elementList = (text: string): string[] =>
  text
    .replace(/^elements = \{|\}$/g, '')
    .split(',')
    .map((e) => e.trim())
    .sort();

/** The table as nft lists it, with set elements in a fixed order: equal listings mean equal
 * tables, whatever order the objects were made in. (nft's text: its JSON printer of this
 * version stops short on some tables.) */
function listing(sb: Sandbox, table: string): Listing {
  const out: Listing = { chains: new Map(), sets: new Map(), base: [] };
  let lines: string[] | undefined;
  let elements: string | undefined;
  for (const raw of sb.run('nft', ['list', 'table', 'inet', table]).split('\n')) {
    const line = raw.trim();
    const head = /^(chain|set|map) (\S+) \{$/.exec(line);
    if (head) {
      lines = [];
      if (head[1] === 'chain') out.chains.set(head[2], lines);
      else out.sets.set(head[2], lines);
      continue;
    }
    if (!lines) continue;
    if (elements !== undefined || line.startsWith('elements = {')) {
      elements = elements === undefined ? line : `${elements} ${line}`;
      if (!line.endsWith('}')) continue;
      lines.push(...elementList(elements));
      elements = undefined;
    } else if (line === '}') lines = undefined;
    else if (line) lines.push(line);
  }
  for (const [name, body] of out.chains) if (body.some((l) => l.startsWith('type ') && l.includes(' hook '))) out.base.push(name);
  return out;
}

function policyManifests(): string {
  const c = baseCluster();
  for (let i = 0; i < 6; i++) c.apply(pod('x', `p${i}`, `198.18.0.${20 + i}`, { app: i % 2 ? 'web' : 'client' }));
  return c.writeManifests();
}

function proxyManifests(): string {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-batch-crash-'));
  const objects: Record<string, unknown>[] = [node1];
  for (let i = 0; i < 3; i++) {
    objects.push({ apiVersion: 'v1', kind: 'Service', metadata: { namespace: 'x', name: `s${i}` }, spec: { clusterIP: `198.19.1.${i + 1}`, clusterIPs: [`198.19.1.${i + 1}`], ports: [{ name: 'http', port: 80, targetPort: 8080 }] } });
    objects.push({
      apiVersion: 'discovery.k8s.io/v1',
      kind: 'EndpointSlice',
      metadata: { namespace: 'x', name: `s${i}-a`, labels: { 'kubernetes.io/service-name': `s${i}` } },
      addressType: 'IPv4',
      ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
      endpoints: [0, 1, 2].map((k) => ({ addresses: [`198.18.2.${i * 3 + k + 1}`], conditions: { ready: true }, nodeName: k ? 'node-2' : 'node-1' })),
    });
  }
  writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  return dir;
}

async function killAtEveryBoundary(table: string, dir: string, flags: string[]): Promise<number> {
  return withSandbox(async (sb) => {
    const nfkube = (args: string[], env: Record<string, string> = {}) =>
      spawnSync('nsenter', [`--net=${sb.netns.path}`, process.execPath, NFKUBE, ...args], { encoding: 'utf8', cwd: ROOT, env: { ...process.env, NFKUBE_TEST_BATCH_LIMITS: LIMITS, ...env } });
    const args = ['--manifests', dir, '--node-name', 'node-1', ...flags];
    const whole = nfkube(['agent', '--once', ...args, '--log-level', 'info']);
    assert.equal(whole.status, 0, whole.stderr);
    const batches = Number(/"batches":(\d+)/.exec(whole.stdout + whole.stderr)?.[1]);
    assert.ok(batches >= 5, `the tiny limits cut the first sync into several batches (${batches})`);
    const want = listing(sb, table);
    for (let n = 1; n < batches; n++) {
      sb.run('nft', ['delete', 'table', 'inet', table]);
      const killed = nfkube(['agent', '--once', ...args, '--log-level', 'warn'], { NFKUBE_TEST_KILL_AFTER_BATCH: String(n) });
      assert.equal(killed.signal, 'SIGKILL', `killed after batch ${n}: ${killed.stderr}`);
      const partial = listing(sb, table);
      for (const name of partial.base) assert.deepEqual(partial.chains.get(name), want.chains.get(name), `after batch ${n}: base chain ${name} is whole when it exists`);
      const restarted = nfkube(['agent', '--once', ...args, '--log-level', 'warn']);
      assert.equal(restarted.status, 0, `restart after a kill after batch ${n}: ${restarted.stderr}`);
      assert.deepEqual(listing(sb, table), want, `the restart after a kill after batch ${n} completes the table`);
      const verified = nfkube(['verify', ...args]);
      assert.equal(verified.status, 0, verified.stdout + verified.stderr);
    }
    return batches;
  });
}

test('policy table: kill -9 at every batch boundary of the first sync, then a start repairs it', { timeout: 300_000 }, async () => {
  const dir = policyManifests();
  try {
    await killAtEveryBoundary('nfkube', dir, []);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('proxy table: kill -9 at every batch boundary of the first sync, then a start repairs it', { timeout: 300_000 }, async () => {
  const dir = proxyManifests();
  try {
    await killAtEveryBoundary('nfkube-proxy', dir, ['--no-policy', '--proxy', '--cluster-cidr', '198.18.0.0/16']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
