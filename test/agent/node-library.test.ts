/** The node composition as a library user runs it: `runNode` with option values of their own, in
 * a network namespace of the test's, with the registry's features and one feature of the test's
 * added by one line. The tables it commits are the ones render/verify build for the same values. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FEATURES } from '../../src/node/features';
import { runNode } from '../../src/node/run';
import { compareTable, desiredComponents } from '../../src/node/desired';
import { enabledFeatures, kindsOf } from '../../src/node/enabled';
import { ManifestSource } from '../../src/k8s/manifest-source';
import type { ClusterChange, ClusterSnapshot } from '../../src/k8s/source';
import type { Feature } from '../../src/pipeline/feature';
import type { OptionValues } from '../../src/options/table';
import { withSandbox } from '../helpers/netns';
import { namespace, NODE, pod, policy } from './fixtures';

const service = {
  apiVersion: 'v1',
  kind: 'Service',
  metadata: { name: 'web', namespace: 'shop' },
  spec: { type: 'ClusterIP', clusterIP: '198.19.0.10', clusterIPs: ['198.19.0.10'], ports: [{ name: 'http', port: 80, targetPort: 8080, protocol: 'TCP' }] },
};
const slice = {
  apiVersion: 'discovery.k8s.io/v1',
  kind: 'EndpointSlice',
  metadata: { name: 'web-1', namespace: 'shop', labels: { 'kubernetes.io/service-name': 'web' } },
  addressType: 'IPv4',
  endpoints: [{ addresses: ['198.18.0.2'], conditions: { ready: true }, nodeName: NODE }],
  ports: [{ name: 'http', port: 8080, protocol: 'TCP' }],
};

function manifests(): string {
  const dir = mkdtempSync(join(tmpdir(), 'nfkube-node-'));
  const objects = [
    namespace('shop'),
    pod('shop', 'web', '198.18.0.2', { app: 'web' }),
    pod('shop', 'db', '198.18.0.3', { app: 'db' }),
    policy('shop', 'db-from-web', { podSelector: { matchLabels: { app: 'db' } }, ingress: [{ from: [{ podSelector: { matchLabels: { app: 'web' } } }] }] }),
    service,
    slice,
  ];
  writeFileSync(join(dir, 'cluster.json'), JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  return dir;
}

/** A feature of the test's: reads Pods, owns no table, and keeps what it was shown. */
function watchingFeature(seen: { snapshot?: ClusterSnapshot; changes: ClusterChange[]; opened: number }): Feature<true> {
  return {
    name: 'pod-watcher',
    options: { 'watch-pods': { type: 'boolean', description: 'count the pods' } },
    kinds: ['Pod'],
    settings: (v) => (v['watch-pods'] === true ? true : undefined),
    async open() {
      seen.opened++;
      return { load: (s) => void (seen.snapshot = s), apply: (c) => void seen.changes.push(c) };
    },
  };
}

async function run(values: OptionValues, netns: import('../../src/netlink/netns').Netns, features?: readonly Feature<any>[]): Promise<number> {
  const closers: (() => unknown)[] = [];
  try {
    return await runNode(values, { defer: (c) => closers.push(c), netns, features });
  } finally {
    for (const close of closers.reverse()) await close();
  }
}

test('runNode --once commits policy and proxy tables that equal what the desired-state commands build', async () => {
  const dir = manifests();
  try {
    await withSandbox(async (sb) => {
      const values: OptionValues = { manifests: dir, once: true, proxy: true, 'node-name': NODE, 'log-level': 'silent', 'metrics-addr': '', 'cluster-cidr': '198.18.0.0/16' };
      assert.equal(await run(values, sb.netns), 0);
      const tables = sb.run('nft', ['list', 'tables']);
      assert.match(tables, /table inet nfkube\n/);
      assert.match(tables, /table inet nfkube-proxy\n/);
      const enabled = enabledFeatures(values);
      assert.deepEqual(enabled.map((e) => e.feature.name), ['policy', 'proxy']);
      const source = new ManifestSource({ dir, kinds: kindsOf(enabled), onChange: () => undefined, onError: (e) => assert.fail(e.message) });
      const snapshot = await source.start();
      await source.stop();
      const components = desiredComponents(enabled, snapshot, NODE, values);
      assert.deepEqual(components.map((c) => c.name), ['policy', 'proxy']);
      for (const c of components) assert.equal((await compareTable(sb.socket, c.desired)).plan.action, 'noop', `${c.name}: the kernel holds what render builds`);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('a feature added to the registry by one line gets its option, its kinds and the change stream', async () => {
  const dir = manifests();
  try {
    await withSandbox(async (sb) => {
      const seen = { changes: [] as ClusterChange[], opened: 0 } as { snapshot?: ClusterSnapshot; changes: ClusterChange[]; opened: number };
      const features = [...FEATURES, watchingFeature(seen)];
      const off: OptionValues = { manifests: dir, once: true, 'node-name': NODE, 'log-level': 'silent', 'metrics-addr': '' };
      assert.equal(await run(off, sb.netns, features), 0);
      assert.equal(seen.opened, 0, 'off without its option');
      assert.equal(await run({ ...off, 'watch-pods': true }, sb.netns, features), 0);
      assert.equal(seen.opened, 1);
      assert.deepEqual([...seen.snapshot!.pods.keys()].sort(), ['shop/db', 'shop/web']);
      // Alone it would have no table to keep: refused before it opens, naming it.
      await assert.rejects(run({ ...off, 'watch-pods': true, 'no-policy': true }, sb.netns, features), /^Error: pod-watcher own no table/);
      assert.equal(seen.opened, 1);
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the node refuses two features owning one table, naming both', () => {
  assert.throws(() => enabledFeatures({ proxy: true, table: 'same', 'proxy-table': 'same' }), /table inet same: both policy and proxy would own it/);
  assert.throws(() => enabledFeatures({ 'no-policy': true }), /--no-policy needs --proxy or --ipam/);
});
