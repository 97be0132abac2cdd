/** The Helm chart renders the same objects as the kustomize manifests, and its values (image,
 * node selector, tolerations, resources, flags) land where they should. Helm is not installable
 * from Debian here, so the chart is rendered by test/helpers/chart-render.ts (the template
 * subset the chart uses); kustomize by kubectl when installed, else by kustomize-render.ts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { renderChart } from '../helpers/chart-render';
import { renderKustomization } from '../helpers/kustomize-render';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const root = join(__dirname, '..', '..', '..');
const kustomizeDir = join(root, 'deploy', 'kubernetes');
const chartDir = join(root, 'deploy', 'helm', 'nfkube');

const byId = (objs: Obj[]) => new Map(objs.map((o) => [`${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`, o]));

function kubectlKustomize(): Obj[] | undefined {
  try {
    const out = execFileSync('kubectl', ['kustomize', kustomizeDir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    return parseAllDocuments(out).map((d) => d.toJS() as Obj).filter(Boolean);
  } catch {
    return undefined;
  }
}

test('our kustomize rendering equals kubectl kustomize (where kubectl is installed)', (t) => {
  const real = kubectlKustomize();
  if (!real) {
    t.diagnostic('kubectl not installed: the chart is compared with kustomize-render.ts alone');
    return;
  }
  assert.deepEqual(byId(renderKustomization(kustomizeDir)), byId(real));
});

test('helm chart with default values renders exactly the kustomize objects', () => {
  const kustomized = byId(renderKustomization(kustomizeDir));
  const charted = byId(renderChart(chartDir, { namespace: 'kube-system' }));
  assert.deepEqual([...charted.keys()].sort(), [...kustomized.keys()].sort());
  for (const [id, o] of kustomized) assert.deepEqual(charted.get(id), o, id);
});

test('the image is named once: in kustomization images, and the DaemonSet runs it on linux nodes', () => {
  const ds = readFileSync(join(kustomizeDir, 'daemonset.yaml'), 'utf8');
  const images = ds.match(/^\s*image:.*$/gm) ?? [];
  assert.ok(images.length >= 1);
  for (const line of images) assert.match(line, /^\s*image: nfkube\s*$/, 'no tag or registry in the DaemonSet: kustomization images sets them');
  const k = parseYaml(readFileSync(join(kustomizeDir, 'kustomization.yaml'), 'utf8')) as Obj;
  assert.deepEqual(k.images, [{ name: 'nfkube', newName: 'nfkube', newTag: 'latest' }]);
  const daemonset = renderKustomization(kustomizeDir).find((o) => o.kind === 'DaemonSet')!;
  assert.deepEqual(daemonset.spec.template.spec.nodeSelector, { 'kubernetes.io/os': 'linux' });
  assert.equal(daemonset.spec.template.spec.containers[0].image, 'nfkube:latest');
});

test('helm values: image, node selector, tolerations, resources, flags and metrics address', () => {
  const values = {
    image: { repository: 'registry.example/net/nfkube', tag: '0.1.0' },
    nodeSelector: { 'kubernetes.io/os': 'linux', pool: 'edge' },
    tolerations: [{ key: 'edge', operator: 'Equal', value: 'yes', effect: 'NoSchedule' }],
    resources: { requests: { cpu: '100m', memory: '128Mi' } },
    flags: { 'resync-period': '10m', 'deny-action': 'reject' },
    metrics: { host: '0.0.0.0', port: 9900 },
  };
  const ds = renderChart(chartDir, { namespace: 'net', values }).find((o) => o.kind === 'DaemonSet')!;
  assert.equal(ds.metadata.namespace, 'net');
  const pod = ds.spec.template.spec;
  const c = pod.containers[0];
  assert.equal(c.image, 'registry.example/net/nfkube:0.1.0');
  assert.deepEqual(pod.nodeSelector, values.nodeSelector);
  assert.deepEqual(pod.tolerations, values.tolerations);
  assert.deepEqual(c.resources, { ...values.resources, limits: { cpu: '1', memory: '704Mi' } }, 'maps merge over the defaults, as in Helm');
  assert.deepEqual(c.args, ['agent', '--node-name=$(NODE_NAME)', '--metrics-addr=0.0.0.0:9900', '--deny-action=reject', '--resync-period=10m']);
  assert.deepEqual(c.livenessProbe.httpGet, { host: '0.0.0.0', path: '/healthz', port: 9900 });
  const binding = renderChart(chartDir, { namespace: 'net', values }).find((o) => o.kind === 'ClusterRoleBinding')!;
  assert.equal(binding.subjects[0].namespace, 'net');
  // null (as with helm --set x=null) drops the field rather than rendering it empty.
  const bare = renderChart(chartDir, { namespace: 'net', values: { nodeSelector: null, tolerations: null } }).find((o) => o.kind === 'DaemonSet')!;
  assert.equal('nodeSelector' in bare.spec.template.spec, false);
  assert.equal('tolerations' in bare.spec.template.spec, false);
});

test('Chart.yaml: apiVersion v2, versions follow package.json', () => {
  const chart = parseYaml(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as Obj;
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  assert.equal(chart.apiVersion, 'v2');
  assert.equal(chart.name, 'nfkube');
  assert.equal(chart.version, pkg.version);
  assert.equal(chart.appVersion, pkg.version);
});

test('chart renderer: refuses what it does not implement rather than rendering it wrongly', () => {
  assert.throws(() => renderChart(join(root, 'test', 'no-such-chart'), { namespace: 'x' }));
});
