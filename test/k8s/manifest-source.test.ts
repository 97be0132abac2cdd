/** ManifestSource on a real directory: multi-document YAML, `kind: List`, JSON; files added,
 * changed, renamed into place and deleted; malformed files and documents reported by file,
 * document and field while everything else keeps being served. */
import assert from 'node:assert/strict';
import { mkdtempSync, renameSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { ManifestSource } from '../../src/k8s/manifest-source';
import type { PodInfo } from '../../src/k8s/model';
import type { ClusterChange, ClusterSnapshot } from '../../src/k8s/source';
import { Recorder } from './recorder';

const T = { timeout: 20_000 };

const podsYaml = (bLabel: string) => `
apiVersion: v1
kind: Namespace
metadata:
  name: x
  labels: {team: red}
---
# a comment-only document and an empty one are fine
---
apiVersion: v1
kind: Pod
metadata: {name: a, namespace: x, labels: {pod: a}}
spec:
  nodeName: node-1
  containers:
  - name: web
    ports: [{name: http, containerPort: 80}]
status: {phase: Running, podIP: 198.18.0.10}
---
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: x, labels: {pod: ${bLabel}}}
spec: {nodeName: node-2}
status:
  phase: Running
  podIPs: [{ip: 198.18.0.11}, {ip: "2001:db8::11"}]
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: x}
spec: {ports: [{port: 80}]}
`;

const listYaml = `
apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Namespace
  metadata: {name: y}
- apiVersion: v1
  kind: Pod
  metadata: {name: c, labels: {pod: c}}
  status: {podIP: 198.18.0.12}
`;

const policyJson = JSON.stringify({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'NetworkPolicy',
  metadata: { name: 'deny-x', namespace: 'x' },
  spec: { podSelector: {}, ingress: [{ from: [{ namespaceSelector: { matchLabels: { team: 'red' } } }] }] },
});

const isKey = (kind: ClusterChange['kind'], key: string, type?: ClusterChange['type']) => (c: ClusterChange) =>
  c.kind === kind && c.key === key && (type === undefined || c.type === type);

describe('ManifestSource', () => {
  let dir: string;
  let rec: Recorder;
  let source: ManifestSource;
  let initial: ClusterSnapshot;
  let markers = 0;
  const write = (name: string, text: string) => writeFileSync(join(dir, name), text);

  /** Writes a fresh namespace into its own file and waits for it: file events arrive in order,
   * so whatever earlier writes caused has been delivered by then. */
  async function settle(): Promise<void> {
    const name = `marker-${++markers}`;
    const from = rec.changes.length;
    write(`zz-${name}.yaml`, `apiVersion: v1\nkind: Namespace\nmetadata: {name: ${name}}\n`);
    await rec.change(isKey('Namespace', name), from);
    rec.changes.splice(rec.changes.findIndex(isKey('Namespace', name)), 1);
  }

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'nfkube-manifests-'));
    write('pods.yaml', podsYaml('b'));
    write('list.yml', listYaml);
    write('policy.json', policyJson);
    write('notes.txt', 'not a manifest');
    rec = new Recorder();
    source = new ManifestSource({ dir, ...rec });
    initial = await source.start();
  });

  after(async () => {
    await source.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  test('reads multi-document YAML, List and JSON into the initial state', T, () => {
    assert.deepEqual([...initial.namespaces.keys()].sort(), ['x', 'y']);
    assert.deepEqual(initial.namespaces.get('x'), { name: 'x', labels: { team: 'red', 'kubernetes.io/metadata.name': 'x' } });
    assert.deepEqual([...initial.pods.keys()].sort(), ['default/c', 'x/a', 'x/b']);
    assert.deepEqual(initial.pods.get('x/a'), {
      namespace: 'x',
      name: 'a',
      labels: { pod: 'a' },
      nodeName: 'node-1',
      phase: 'Running',
      ips: ['198.18.0.10'],
      hostNetwork: false,
      ports: [{ name: 'http', containerPort: 80, protocol: 'TCP' }],
    });
    assert.deepEqual(initial.pods.get('x/b')?.ips, ['198.18.0.11', '2001:db8::11']);
    assert.deepEqual(initial.policies.get('x/deny-x'), {
      namespace: 'x',
      name: 'deny-x',
      podSelector: {},
      ingress: [{ peers: [{ namespaceSelector: { matchLabels: { team: 'red' } } }] }],
    });
    assert.deepEqual(rec.changes, []);
    assert.deepEqual(rec.errors, []);
  });

  test('a changed file delivers only the objects that changed', T, async () => {
    const from = rec.changes.length;
    write('pods.yaml', podsYaml('b2'));
    const change = await rec.change(isKey('Pod', 'x/b'), from);
    assert.deepEqual((change.object as PodInfo).labels, { pod: 'b2' });
    // Rewriting with a different comment and layout changes nothing.
    write('pods.yaml', '# rewritten\n' + podsYaml('b2').replace('labels: {team: red}', 'labels:\n    team: red'));
    await settle();
    assert.deepEqual(rec.summary(from), ['upsert Pod x/b']);
  });

  test('files added, renamed into place and deleted', T, async () => {
    const from = rec.changes.length;
    write('more.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: d, namespace: y}\nstatus: {podIP: 198.18.0.13}\n');
    await rec.change(isKey('Pod', 'y/d', 'upsert'), from);
    // An atomic save: written under another name, renamed over the old file.
    write('more.yaml.tmp', 'apiVersion: v1\nkind: Pod\nmetadata: {name: e, namespace: y}\nstatus: {podIP: 198.18.0.14}\n');
    renameSync(join(dir, 'more.yaml.tmp'), join(dir, 'more.yaml'));
    await rec.change(isKey('Pod', 'y/e', 'upsert'), from);
    await rec.change(isKey('Pod', 'y/d', 'delete'), from);
    unlinkSync(join(dir, 'more.yaml'));
    await rec.change(isKey('Pod', 'y/e', 'delete'), from);
    await settle();
    assert.deepEqual(rec.summary(from), ['upsert Pod y/d', 'delete Pod y/d', 'upsert Pod y/e', 'delete Pod y/e']);
    assert.equal(source.snapshot().pods.has('y/e'), false);
  });

  test('a file that no longer parses keeps its objects; other files keep being served', T, async () => {
    const from = rec.changes.length;
    const errFrom = rec.errors.length;
    write('policy.json', policyJson.slice(0, 40));
    const err = await rec.error((e) => e.file === 'policy.json', errFrom);
    assert.equal(err.document, 0);
    write('pods.yaml', podsYaml('b3').replace('kind: Pod', 'kind: Pod\n  bad: [unclosed'));
    const yerr = await rec.error((e) => e.file === 'pods.yaml', errFrom);
    assert.equal(yerr.document, 2);
    assert.match(yerr.message, /^pods\.yaml, document 2: /);
    await settle();
    assert.deepEqual(rec.summary(from), [], 'nothing was dropped');
    assert.ok(source.snapshot().policies.has('x/deny-x'));
    assert.equal(source.snapshot().pods.get('x/b')?.labels.pod, 'b2');
    // Fixed again: served again.
    write('policy.json', policyJson.replace('red', 'blue'));
    await rec.change(isKey('NetworkPolicy', 'x/deny-x', 'upsert'), from);
    write('pods.yaml', podsYaml('b2'));
  });

  test('a malformed document is reported by file, document and field; the rest of the file is served', T, async () => {
    const from = rec.changes.length;
    const errFrom = rec.errors.length;
    write(
      'list.yml',
      listYaml.replace('{podIP: 198.18.0.12}', '{podIP: 198.18.0.999}') +
        '---\napiVersion: v1\nkind: Pod\nmetadata: {name: f, namespace: y, labels: {version: 2}}\n' +
        '---\napiVersion: v1\nkind: Pod\nmetadata: {name: g, namespace: y}\n' +
        '---\nkind: NetworkPolicy\napiVersion: extensions/v1beta1\nmetadata: {name: old, namespace: y}\n' +
        '---\nmetadata: {name: kindless}\n',
    );
    await rec.change(isKey('Pod', 'y/g', 'upsert'), from);
    const errors = rec.errors.slice(errFrom).map((e) => [e.file, e.document, e.object, e.field]);
    assert.deepEqual(errors, [
      ['list.yml', 0, 'Pod default/c', 'items[1].status.podIP'],
      ['list.yml', 1, 'Pod y/f', 'metadata.labels.version'],
      ['list.yml', 3, 'NetworkPolicy y/old', 'apiVersion'],
      ['list.yml', 4, '(document)', 'kind'],
    ]);
    await settle();
    // Pod c keeps its last good version; f never had one. The policy of another apiVersion
    // cannot be understood and must not be dropped: it fails closed (issue 11, defect 4).
    assert.deepEqual(rec.summary(from), ['upsert Pod y/g', 'upsert NetworkPolicy y/old']);
    assert.deepEqual(source.snapshot().policies.get('y/old')?.policyTypes, ['Ingress', 'Egress']);
    assert.deepEqual(source.snapshot().pods.get('default/c')?.ips, ['198.18.0.12']);
    assert.equal(source.snapshot().pods.has('y/f'), false);
  });

  test('an object defined in two files: the first file by name wins, the other takes over', T, async () => {
    const from = rec.changes.length;
    const errFrom = rec.errors.length;
    write('aa-dup.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: a, namespace: x, labels: {pod: dup}}\nstatus: {podIP: 198.18.0.20}\n');
    const err = await rec.error((e) => e.file === 'aa-dup.yaml', errFrom);
    assert.equal(err.object, 'Pod x/a');
    assert.match(err.message, /also defined in pods\.yaml; the one in aa-dup\.yaml is used/);
    const taken = await rec.change(isKey('Pod', 'x/a', 'upsert'), from);
    assert.deepEqual((taken.object as PodInfo).ips, ['198.18.0.20']);
    unlinkSync(join(dir, 'aa-dup.yaml'));
    const back = await rec.change((c) => isKey('Pod', 'x/a', 'upsert')(c) && c !== taken, from);
    assert.deepEqual((back.object as PodInfo).ips, ['198.18.0.10']);
    await settle();
    assert.deepEqual(rec.summary(from), ['upsert Pod x/a', 'upsert Pod x/a']);
  });

  test('rescanAll() after the fact finds nothing new when nothing changed', T, () => {
    const from = rec.changes.length;
    source.rescanAll();
    assert.deepEqual(rec.summary(from), []);
  });
});

describe('ManifestSource start()', () => {
  test('a missing directory is a start error', T, async () => {
    const source = new ManifestSource({ dir: join(tmpdir(), 'nfkube-does-not-exist'), ...new Recorder() });
    await assert.rejects(source.start(), /ENOENT/);
  });
});
