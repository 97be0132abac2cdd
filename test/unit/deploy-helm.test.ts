/** The Helm chart as a Helm user expects it: with default values the kustomize base plus Helm's
 * standard labels; each part (policy, proxy, IPAM, drop logs) a toggle bringing its own flags,
 * RBAC, mounts, init container and CRDs, equal to the kustomize overlays; values passed as one
 * quoted argument each, so none adds an argument; bare boolean flags; image tag defaulting to the
 * appVersion; monitors; a cleanup mode. Rendered by the real `helm template` (and `helm lint`)
 * where scripts/build-helm.sh built it, else by test/helpers/chart-render.ts, which is then
 * checked against helm wherever both exist. kustomize: kubectl where installed, else
 * kustomize-render.ts (the base only). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml, parseAllDocuments } from 'yaml';
import { renderChart } from '../helpers/chart-render';
import { helmBinary, helmTemplate, runHelm } from '../helpers/helm';
import { renderKustomization } from '../helpers/kustomize-render';

type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
const root = join(__dirname, '..', '..', '..');
const deploy = join(root, 'deploy');
const chartDir = join(deploy, 'helm', 'nfkube');
const helm = helmBinary();
const chart = parseYaml(readFileSync(join(chartDir, 'Chart.yaml'), 'utf8')) as Obj;

const byId = (objs: Obj[]) => new Map(objs.map((o) => [`${o.kind} ${o.metadata.namespace ?? ''}/${o.metadata.name}`, o]));

/** The chart's objects: by helm where built, else by our renderer. */
function render(values: unknown = {}, namespace = 'kube-system'): Obj[] {
  return helm ? helmTemplate(helm, chartDir, { namespace, values }) : renderChart(chartDir, { namespace, values });
}

function kubectlKustomize(dir: string): Obj[] | undefined {
  try {
    const out = execFileSync('kubectl', ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    return parseAllDocuments(out).map((d) => d.toJS() as Obj).filter(Boolean);
  } catch {
    return undefined;
  }
}

/** What the kustomize manifests do not have: Helm's labels beyond the name, its keep annotation
 * on the CRDs, and the pull policy. */
function withoutHelmExtras(o: Obj): Obj {
  const copy = structuredClone(o);
  const strip = (labels: Obj | undefined) => {
    for (const k of Object.keys(labels ?? {})) if (k !== 'app.kubernetes.io/name' && k !== 'app.kubernetes.io/component') delete labels![k];
  };
  strip(copy.metadata.labels);
  if (copy.metadata.annotations) {
    delete copy.metadata.annotations['helm.sh/resource-policy'];
    if (!Object.keys(copy.metadata.annotations).length) delete copy.metadata.annotations;
  }
  strip(copy.spec?.selector?.matchLabels);
  strip(copy.spec?.template?.metadata?.labels);
  for (const c of [...(copy.spec?.template?.spec?.containers ?? []), ...(copy.spec?.template?.spec?.initContainers ?? [])]) delete c.imagePullPolicy;
  return copy;
}

function assertSameObjects(charted: Obj[], kustomized: Obj[]) {
  const c = byId(charted.map(withoutHelmExtras));
  const k = byId(kustomized);
  assert.deepEqual([...c.keys()].sort(), [...k.keys()].sort());
  for (const [id, o] of k) assert.deepEqual(c.get(id), o, id);
}

const daemonSet = (objs: Obj[]) => objs.find((o) => o.kind === 'DaemonSet' && o.metadata.name === 'nfkube')!;
const args = (objs: Obj[]) => daemonSet(objs).spec.template.spec.containers[0].args as string[];
const LATEST = { image: { tag: 'latest' } };

test('helm lint passes, strict, and the values schema refuses a bad value (where helm is built)', (t) => {
  if (!helm) {
    t.diagnostic('helm is not built (scripts/build-helm.sh): lint and schema checks need it; the chart is rendered by chart-render.ts');
    return;
  }
  const out = runHelm(helm, ['lint', '--strict', chartDir]);
  assert.match(out, /1 chart\(s\) linted, 0 chart\(s\) failed/);
  for (const bad of [{ image: { pullPolicy: 'Sometimes' } }, { flags: { 'log-level\n  - --no-policy': 'x' } }, { proxy: { enabled: 'yes' } }, { image: { repository: 'nfkube"\n  - x' } }]) {
    assert.throws(() => runHelm(helm, ['template', 'nfkube', chartDir], bad), /values don't meet the specifications of the schema|schema/, JSON.stringify(bad));
  }
});

test('our chart renderer renders what helm template does, for every toggle (where helm is built)', (t) => {
  if (!helm) {
    t.diagnostic('helm is not built: nothing to compare the fallback renderer with');
    return;
  }
  for (const values of [{}, { proxy: { enabled: true }, ipam: { enabled: true }, dropLogs: { enabled: true }, policy: { enabled: false } }, { serviceMonitor: { enabled: true }, podMonitor: { enabled: true }, flags: { 'deny-action': 'reject # x', 'no-hold-table': true } }, { cleanup: { enabled: true } }]) {
    assert.deepEqual(byId(renderChart(chartDir, { namespace: 'net', values })), byId(helmTemplate(helm, chartDir, { namespace: 'net', values })), JSON.stringify(values));
  }
});

test('default values render the kustomize base: policy only, no CRD, no init container, no host path', () => {
  const objs = render(LATEST);
  const real = kubectlKustomize(join(deploy, 'kubernetes'));
  assertSameObjects(objs, real ?? renderKustomization(join(deploy, 'kubernetes')));
  if (real) assert.deepEqual(byId(renderKustomization(join(deploy, 'kubernetes'))), byId(real), 'kustomize-render.ts agrees with kubectl');
  assert.equal(objs.some((o) => o.kind === 'CustomResourceDefinition'), false);
  const pod = daemonSet(objs).spec.template.spec;
  assert.equal(pod.initContainers, undefined);
  assert.equal(pod.volumes.some((v: Obj) => v.hostPath), false);
});

test('the image is named in kustomization images only: no tag or registry in a DaemonSet', () => {
  for (const file of ['kubernetes/daemonset.yaml', 'cleanup/daemonset.yaml', 'overlays/ipam/kustomization.yaml']) {
    for (const line of readFileSync(join(deploy, file), 'utf8').match(/^\s*image: nfkube.*$/gm) ?? []) assert.match(line, /^\s*image: nfkube\s*$/, file);
  }
  for (const dir of ['kubernetes', 'overlays/ipam', 'cleanup']) {
    const k = parseYaml(readFileSync(join(deploy, dir, 'kustomization.yaml'), 'utf8')) as Obj;
    assert.deepEqual(k.images, [{ name: 'nfkube', newName: 'nfkube', newTag: 'latest' }], dir);
  }
});

test('proxy and ipam toggles render the kustomize overlays (where kubectl is installed)', (t) => {
  for (const [part, values] of [['proxy', { proxy: { enabled: true } }], ['ipam', { ipam: { enabled: true } }]] as const) {
    const real = kubectlKustomize(join(deploy, 'overlays', part));
    if (!real) {
      t.diagnostic(`kubectl not installed: overlays/${part} not compared`);
      continue;
    }
    assertSameObjects(render({ ...LATEST, ...values }), real);
  }
});

test('each toggle brings its flag, RBAC, mounts, init container and CRDs', () => {
  const base = render();
  const roles = (objs: Obj[]) => objs.filter((o) => o.kind === 'ClusterRole').map((o) => o.metadata.name).sort();
  assert.deepEqual(roles(base), ['nfkube']);
  assert.deepEqual(args(base), ['agent', '--node-name=$(NODE_NAME)', '--metrics-addr=127.0.0.1:9476']);

  const all = render({ policy: { enabled: false }, proxy: { enabled: true }, ipam: { enabled: true }, dropLogs: { enabled: true } });
  assert.deepEqual(args(all).slice(3), ['--no-policy', '--proxy', '--ipam', '--log-drops']);
  assert.deepEqual(roles(all), ['nfkube-ipam', 'nfkube-proxy'], 'no policy role without policy');
  const ipamRole = all.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'nfkube-ipam')!;
  assert.ok(ipamRole.rules.some((r: Obj) => r.resources.includes('pods') && r.verbs.includes('list')), 'IPAM lists pods itself when policy is off');
  const crds = all.filter((o) => o.kind === 'CustomResourceDefinition');
  assert.deepEqual(crds.map((o) => o.metadata.name).sort(), ['ipaddressclaims.ipam.nfkube.io', 'ipblocks.ipam.nfkube.io', 'ippools.ipam.nfkube.io']);
  for (const crd of crds) assert.equal(crd.metadata.annotations['helm.sh/resource-policy'], 'keep', 'helm uninstall keeps the pools');
  const pod = daemonSet(all).spec.template.spec;
  assert.deepEqual(pod.initContainers.map((c: Obj) => c.args), [['install', '--cni', '--root=/host']]);
  assert.deepEqual(pod.containers[0].volumeMounts.map((m: Obj) => m.mountPath), ['/tmp', '/run/nfkube', '/var/lib/nfkube']);
  assert.deepEqual(pod.volumes.filter((v: Obj) => v.hostPath).map((v: Obj) => v.hostPath.path), ['/opt/cni/bin', '/opt/nfkube/bin', '/run/nfkube', '/var/lib/nfkube']);
  for (const binding of all.filter((o) => o.kind === 'ClusterRoleBinding')) assert.equal(binding.subjects[0].namespace, 'kube-system');
});

test('flags: true is the bare flag, false leaves it out, every value is one argument (the two injections of issue 26)', () => {
  const a = args(render({ flags: { 'log-level': 'info\n  - --no-policy', 'deny-action': 'reject # x', 'no-hold-table': true, 'log-drops': false, 'resync-period': '10m', 'max-burst': 5 } }));
  assert.deepEqual(a.slice(3), ['--deny-action=reject # x', '--log-level=info\n  - --no-policy', '--max-burst=5', '--no-hold-table', '--resync-period=10m']);
  assert.equal(a.includes('--no-policy'), false, 'no argument was added');
  assert.equal(a.some((x) => x === '--log-drops' || x.startsWith('--log-drops=')), false);
  // The agent refuses both values: a clear error, never a silently different configuration.
  assert.equal(a.filter((x) => x.startsWith('--deny-action=')).length, 1);
});

test('image: tag defaults to the appVersion, pull policy, and the standard labels on every object', () => {
  const objs = render({ image: { repository: 'registry.example/net/nfkube', pullPolicy: 'Always' }, ipam: { enabled: true } }, 'net');
  const pod = daemonSet(objs).spec.template.spec;
  for (const c of [...pod.containers, ...pod.initContainers]) {
    assert.equal(c.image, `registry.example/net/nfkube:${chart.appVersion}`);
    assert.equal(c.imagePullPolicy, 'Always');
  }
  assert.equal(daemonSet(render({ image: { tag: '0.0.9' } })).spec.template.spec.containers[0].image, 'nfkube:0.0.9');
  for (const o of objs) {
    assert.deepEqual(
      Object.fromEntries(Object.entries(o.metadata.labels).filter(([k]) => k.startsWith('app.kubernetes.io/') || k === 'helm.sh/chart')),
      { 'app.kubernetes.io/name': 'nfkube', 'app.kubernetes.io/instance': 'nfkube', 'app.kubernetes.io/version': chart.appVersion, 'app.kubernetes.io/managed-by': 'Helm', 'app.kubernetes.io/part-of': 'nfkube', 'helm.sh/chart': `nfkube-${chart.version}` },
      `${o.kind} ${o.metadata.name}`,
    );
  }
  assert.deepEqual(daemonSet(objs).spec.selector.matchLabels, { 'app.kubernetes.io/name': 'nfkube', 'app.kubernetes.io/instance': 'nfkube' });
});

test('helm values: node selector, tolerations, resources, metrics address, namespace', () => {
  const values = {
    nodeSelector: { 'kubernetes.io/os': 'linux', pool: 'edge' },
    tolerations: [{ key: 'edge', operator: 'Equal', value: 'yes', effect: 'NoSchedule' }],
    resources: { requests: { cpu: '100m', memory: '128Mi' } },
    metrics: { host: '0.0.0.0', port: 9900 },
  };
  const objs = render(values, 'net');
  const ds = daemonSet(objs);
  assert.equal(ds.metadata.namespace, 'net');
  const pod = ds.spec.template.spec;
  const c = pod.containers[0];
  assert.deepEqual(pod.nodeSelector, values.nodeSelector);
  assert.deepEqual(pod.tolerations, values.tolerations);
  assert.deepEqual(c.resources, { ...values.resources, limits: { cpu: '1', memory: '704Mi' } }, 'maps merge over the defaults, as in Helm');
  assert.equal(c.args[2], '--metrics-addr=0.0.0.0:9900');
  assert.deepEqual(c.livenessProbe.httpGet, { host: '0.0.0.0', path: '/healthz', port: 9900 });
  assert.equal(objs.find((o) => o.kind === 'ClusterRoleBinding')!.subjects[0].namespace, 'net');
  const bare = daemonSet(render({ nodeSelector: null, tolerations: null }, 'net'));
  assert.equal('nodeSelector' in bare.spec.template.spec, false);
  assert.equal('tolerations' in bare.spec.template.spec, false);
});

test('ServiceMonitor and PodMonitor, off by default, scrape the named metrics port', () => {
  assert.equal(render().some((o) => o.apiVersion === 'monitoring.coreos.com/v1'), false);
  assert.equal('ports' in daemonSet(render()).spec.template.spec.containers[0], false, 'no port (a host port, with hostNetwork) unless scraped');
  const objs = render({ metrics: { host: '0.0.0.0', port: 9476 }, serviceMonitor: { enabled: true, labels: { release: 'prom' } }, podMonitor: { enabled: true } });
  const ds = daemonSet(objs);
  assert.deepEqual(ds.spec.template.spec.containers[0].ports, [{ name: 'metrics', containerPort: 9476 }]);
  const sm = objs.find((o) => o.kind === 'ServiceMonitor')!;
  assert.equal(sm.metadata.labels.release, 'prom');
  assert.deepEqual(sm.spec.endpoints, [{ port: 'metrics', path: '/metrics', interval: '30s' }]);
  const svc = objs.find((o) => o.kind === 'Service')!;
  assert.deepEqual(svc.spec.selector, ds.spec.selector.matchLabels);
  assert.deepEqual(sm.spec.selector.matchLabels, ds.spec.selector.matchLabels);
  const pm = objs.find((o) => o.kind === 'PodMonitor')!;
  assert.deepEqual(pm.spec.podMetricsEndpoints, [{ port: 'metrics', path: '/metrics', interval: '30s' }]);
});

test('cleanup mode replaces the agent with the cleanup DaemonSet of deploy/cleanup', () => {
  const objs = render({ ...LATEST, cleanup: { enabled: true } });
  assert.equal(daemonSet(objs), undefined, 'no agent');
  const cleanup = objs.find((o) => o.kind === 'DaemonSet' && o.metadata.name === 'nfkube-cleanup')!;
  const real = kubectlKustomize(join(deploy, 'cleanup')) ?? renderKustomization(join(deploy, 'cleanup'));
  assertSameObjects([cleanup], real);
  const init = cleanup.spec.template.spec.initContainers[0];
  assert.deepEqual(init.args, ['uninstall', '--root=/host', '--purge']);
  assert.deepEqual(init.securityContext.capabilities, { drop: ['ALL'], add: ['NET_ADMIN'] });
  assert.equal(cleanup.spec.template.spec.hostNetwork, true, "the node's own tables");
  // It reaches every host path the agent and its CNI installer write.
  const agentPaths = daemonSet(render({ ipam: { enabled: true } })).spec.template.spec.volumes.filter((v: Obj) => v.hostPath).map((v: Obj) => v.hostPath.path).sort();
  assert.deepEqual(cleanup.spec.template.spec.volumes.map((v: Obj) => v.hostPath.path).sort(), agentPaths);
});

test('Chart.yaml: apiVersion v2, versions follow package.json; NOTES.txt says how to remove', () => {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
  assert.equal(chart.apiVersion, 'v2');
  assert.equal(chart.name, 'nfkube');
  assert.equal(chart.version, pkg.version);
  assert.equal(chart.appVersion, pkg.version);
  assert.match(readFileSync(join(chartDir, 'templates', 'NOTES.txt'), 'utf8'), /cleanup\.enabled=true/);
});

test('chart renderer: refuses what it does not implement rather than rendering it wrongly', () => {
  assert.throws(() => renderChart(join(root, 'test', 'no-such-chart'), { namespace: 'x' }));
});
