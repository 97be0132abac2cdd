/** FIELDS_READ (normalize.ts) names every field the normalizers read: the YAML subset parser
 * builds only those of a manifest, so a field read and not named would read as absent. Checked
 * two ways: every property the normalizers (and the manifest source around them) touch on whole
 * objects, valid and malformed, lies inside the kind's tree; and a directory of those objects as
 * YAML (pruned) and as JSON (built whole) gives the same state and the same errors. */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import { stringify } from 'yaml';
import type { SourceError } from '../../src/k8s/errors';
import { ManifestSource } from '../../src/k8s/manifest-source';
import { failClosedPolicy, FIELDS_READ, objectId, type ObjectKind } from '../../src/k8s/normalize';
import { normalizers } from '../../src/k8s/normalizers';
import type { FieldTree } from '../../src/k8s/yaml-block';

type KObject = Record<string, unknown>;

const POD: KObject = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: {
    name: 'web-1',
    namespace: 'shop',
    uid: '8f2c1a9e-4b1d-4c2a-9e5f-000000000001',
    labels: { app: 'web', tier: 'front' },
    annotations: { 'prometheus.io/scrape': 'true' },
    ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web', controller: true }],
  },
  spec: {
    nodeName: 'node-1',
    hostNetwork: false,
    containers: [
      {
        name: 'app',
        image: 'registry.example.com/web:1.0',
        env: [{ name: 'A', value: '1' }],
        ports: [
          { name: 'http', containerPort: 8080, protocol: 'TCP' },
          { containerPort: 53, protocol: 'UDP' },
        ],
        readinessProbe: { httpGet: { path: '/healthz', port: 8080 } },
      },
      { name: 'sidecar', image: 'registry.example.com/side:1.0' },
    ],
    volumes: [{ name: 'v', emptyDir: {} }],
  },
  status: {
    phase: 'Running',
    podIP: '198.18.0.10',
    podIPs: [{ ip: '198.18.0.10' }, { ip: '2001:db8::10' }],
    conditions: [{ type: 'Ready', status: 'True' }],
  },
};

const NAMESPACE: KObject = {
  apiVersion: 'v1',
  kind: 'Namespace',
  metadata: { name: 'shop', labels: { team: 'a' }, annotations: { 'nfkube.io/policy-mode': 'audit', other: 'x' } },
  spec: { finalizers: ['kubernetes'] },
  status: { phase: 'Active' },
};

const POLICY: KObject = {
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'allow-web', namespace: 'shop', generation: 1, annotations: { a: 'b' } },
  spec: {
    podSelector: { matchLabels: { app: 'web' } },
    policyTypes: ['Ingress', 'Egress'],
    ingress: [{ from: [{ podSelector: { matchExpressions: [{ key: 'tier', operator: 'In', values: ['front'] }] } }, { ipBlock: { cidr: '198.18.0.0/16', except: ['198.18.1.0/24'] } }], ports: [{ port: 'http' }, { protocol: 'UDP', port: 53, endPort: 60 }] }],
    egress: [{ to: [{ namespaceSelector: {} }] }],
  },
};

function set(o: KObject, path: string[], value: unknown): KObject {
  const copy = structuredClone(o);
  let at = copy as Record<string, unknown>;
  for (const k of path.slice(0, -1)) at = at[k] as Record<string, unknown>;
  at[path[path.length - 1]] = value;
  return copy;
}

/** Valid objects and ones malformed in the fields that are read (each error path reads). */
const OBJECTS: KObject[] = [
  POD,
  set(POD, ['status', 'podIPs'], 'x'),
  set(POD, ['status', 'podIPs'], [{ ip: 'not-an-ip' }]),
  set(POD, ['status', 'podIPs'], []),
  set(POD, ['spec', 'containers'], [{ ports: [{ containerPort: 0 }, { containerPort: 80, protocol: 'ICMP' }, 'x'] }, 5]),
  set(POD, ['spec', 'hostNetwork'], 'yes'),
  set(POD, ['metadata', 'labels'], { a: 1 }),
  set(POD, ['spec'], 'x'),
  set(POD, ['status'], [1]),
  set(POD, ['apiVersion'], 'v2'),
  set(POD, ['metadata', 'name'], ''),
  NAMESPACE,
  set(NAMESPACE, ['metadata', 'labels'], 'x'),
  set(NAMESPACE, ['metadata', 'annotations'], { 'nfkube.io/policy-mode': 5 }),
  POLICY,
  set(POLICY, ['spec', 'podSelector'], 'x'),
  set(POLICY, ['spec', 'ingress'], 'x'),
  set(POLICY, ['spec', 'egress'], [{ to: 'x', ports: [{ port: 0 }] }]),
  set(POLICY, ['spec', 'policyTypes'], [1]),
  set(POLICY, ['apiVersion'], 'extensions/v1beta1'),
  set(POLICY, ['metadata', 'namespace'], 7),
];

/** The property paths read of `raw` (keys joined by SEP, array entries as `[]`, all of an
 * object's keys as `*`), recorded through proxies. */
const SEP = '\u001f';
function readPaths(raw: unknown, read: (wrapped: unknown) => void): Set<string> {
  const paths = new Set<string>();
  const join = (path: string, key: string) => (path ? `${path}${SEP}${key}` : key);
  const wrap = (v: unknown, path: string): unknown => {
    if (typeof v !== 'object' || v === null) return v;
    return new Proxy(v, {
      get(target, prop, receiver) {
        const value = Reflect.get(target, prop, receiver);
        if (typeof prop === 'symbol') return value;
        if (Array.isArray(target)) return /^\d+$/.test(prop) ? wrap(value, join(path, '[]')) : value;
        paths.add(join(path, prop));
        return wrap(value, join(path, prop));
      },
      ownKeys(target) {
        paths.add(join(path, '*'));
        return Reflect.ownKeys(target);
      },
      has(target, prop) {
        if (typeof prop === 'string' && !Array.isArray(target)) paths.add(join(path, prop));
        return Reflect.has(target, prop);
      },
    });
  };
  read(wrap(raw, ''));
  return paths;
}

/** True when the tree builds the value at path (a `*` needs the whole value). */
function covered(tree: FieldTree, path: string): boolean {
  let at: FieldTree | true = tree;
  for (const part of path.split(SEP)) {
    if (at === true) return true;
    if (part === '[]') continue;
    if (part === '*' || !Object.hasOwn(at, part)) return false;
    at = at[part];
  }
  return true;
}

describe('FIELDS_READ', () => {
  test('every field the normalizers read, of valid and malformed objects, is in its kind\'s tree', () => {
    for (const object of OBJECTS) {
      const kind = object.kind as ObjectKind;
      const tree = FIELDS_READ[kind]!;
      const paths = readPaths(object, (raw) => {
        // What the manifest source reads around the normalizer.
        void (raw as KObject).kind;
        void (raw as KObject).apiVersion;
        try {
          const id = objectId(kind, raw, { defaultNamespace: 'default' });
          if (kind === 'NetworkPolicy') failClosedPolicy(id, raw, 'spec', 'test', true);
          normalizers[kind](raw, { defaultNamespace: 'default', onProblem: () => undefined });
        } catch {
          // Malformed: what was read up to the error counts as well.
        }
      });
      const outside = [...paths].filter((p) => p !== 'kind' && !covered(tree, p)).map((p) => p.split(SEP).join('.'));
      assert.deepEqual(outside, [], `${kind} ${JSON.stringify(object).slice(0, 120)}`);
    }
  });

  test('a directory as YAML (built in part) and as JSON (built whole): the same state, the same errors', async () => {
    const dirs = ['yaml', 'json'].map((ext) => {
      const dir = mkdtempSync(join(tmpdir(), `nfkube-fields-${ext}-`));
      OBJECTS.forEach((o, i) => writeFileSync(join(dir, `o${String(i).padStart(2, '0')}.${ext}`), ext === 'yaml' ? stringify(o) : JSON.stringify(o)));
      // One List of them all, too: its items are pruned by their own kinds.
      const list = { apiVersion: 'v1', kind: 'List', items: OBJECTS.map((o) => set(o, ['metadata', 'namespace'], 'listed')) };
      writeFileSync(join(dir, `list.${ext}`), ext === 'yaml' ? stringify(list) : JSON.stringify(list));
      return dir;
    });
    try {
      const [yaml, json] = await Promise.all(
        dirs.map(async (dir) => {
          const errors: string[] = [];
          const record = (e: SourceError) => errors.push(`${e.file?.replace(/\.(yaml|json)$/, '')} ${e.document ?? ''} ${e.message.replace(/\.(yaml|json)\b/g, '')}`);
          const source = new ManifestSource({ dir, onChange: () => undefined, onError: record, onWarning: record });
          const snapshot = await source.start();
          await source.stop();
          return { snapshot, errors: errors.sort() };
        }),
      );
      assert.ok(yaml.snapshot.pods.size >= 2 && yaml.snapshot.policies.size >= 2 && yaml.errors.length > 10);
      assert.deepEqual(yaml.errors, json.errors);
      assert.deepEqual(yaml.snapshot, json.snapshot);
    } finally {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    }
  });
});
