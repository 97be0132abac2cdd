/** Every manifest under deploy/kubernetes parses and has the properties the agent relies on. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { DEFAULT_METRICS_ADDR, parseListenAddress } from '../../src/observe/server';

const dir = join(__dirname, '..', '..', '..', 'deploy', 'kubernetes');
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function load(file: string): Obj[] {
  const docs = parseAllDocuments(readFileSync(join(dir, file), 'utf8'));
  return docs.map((d) => {
    assert.deepEqual(d.errors, [], `${file}: ${d.errors.join('; ')}`);
    return d.toJS() as Obj;
  }).filter((o) => o !== null);
}

const files = readdirSync(dir).filter((f) => f.endsWith('.yaml'));
const byKind = new Map<string, Obj>();
for (const file of files) for (const o of load(file)) byKind.set(o.kind, o);

test('kustomization lists every manifest and sets the namespace', () => {
  const k = byKind.get('Kustomization');
  assert.ok(k, 'kustomization.yaml');
  assert.deepEqual([...k.resources].sort(), files.filter((f) => f !== 'kustomization.yaml').sort());
  assert.equal(k.namespace, 'kube-system');
  for (const kind of ['DaemonSet', 'ServiceAccount', 'ClusterRole', 'ClusterRoleBinding']) assert.ok(byKind.has(kind), kind);
});

test('DaemonSet: host network, node name, every node, critical, least privilege, probes', () => {
  const ds = byKind.get('DaemonSet')!;
  assert.equal(ds.apiVersion, 'apps/v1');
  const pod = ds.spec.template.spec;
  assert.deepEqual(ds.spec.selector.matchLabels, ds.spec.template.metadata.labels);
  assert.equal(pod.hostNetwork, true);
  assert.equal(pod.priorityClassName, 'system-node-critical');
  assert.equal(pod.serviceAccountName, byKind.get('ServiceAccount')!.metadata.name);
  assert.ok(pod.tolerations.some((t: Obj) => t.operator === 'Exists' && t.key === undefined && t.effect === undefined), 'a toleration matching every taint');
  assert.equal(pod.containers.length, 1);
  const c = pod.containers[0];
  const nodeName = c.env.find((e: Obj) => e.name === 'NODE_NAME');
  assert.equal(nodeName.valueFrom.fieldRef.fieldPath, 'spec.nodeName');
  assert.equal(c.args[0], 'agent');
  assert.ok(c.args.includes('--node-name=$(NODE_NAME)'));
  const sc = c.securityContext;
  assert.deepEqual(sc.capabilities, { drop: ['ALL'], add: ['NET_ADMIN'] });
  assert.equal(sc.readOnlyRootFilesystem, true);
  assert.equal(sc.allowPrivilegeEscalation, false);
  assert.notEqual(sc.privileged, true);
  for (const key of ['requests', 'limits']) {
    assert.ok(c.resources[key].cpu && c.resources[key].memory, `resources.${key} has cpu and memory`);
  }
  // Probes go to the metrics server's address: with hostNetwork the kubelet shares the node's
  // network namespace, so 127.0.0.1 is the agent's loopback too.
  const metricsArg = c.args.find((a: string) => a.startsWith('--metrics-addr='));
  const addr = parseListenAddress(metricsArg ? metricsArg.split('=')[1] : DEFAULT_METRICS_ADDR);
  for (const [probe, path] of [['livenessProbe', '/healthz'], ['readinessProbe', '/readyz']] as const) {
    const get = c[probe].httpGet;
    assert.equal(get.path, path, probe);
    assert.equal(get.port, addr.port, `${probe} port`);
    if (addr.host !== '0.0.0.0' && addr.host !== '::') assert.equal(get.host, addr.host, `${probe} host`);
  }
});

test('ClusterRole grants exactly what the policy agent uses: list and watch of pods, namespaces, networkpolicies (issue 11)', () => {
  const role = byKind.get('ClusterRole')!;
  const verbsOf = (group: string, resource: string) =>
    role.rules.filter((r: Obj) => r.apiGroups.includes(group) && r.resources.includes(resource)).flatMap((r: Obj) => r.verbs as string[]);
  // src/k8s/informer-source.ts: a WatchList, or a paged LIST then a WATCH, per kind; it never GETs one object.
  for (const [group, resource] of [['', 'pods'], ['', 'namespaces'], ['networking.k8s.io', 'networkpolicies']]) {
    assert.deepEqual(verbsOf(group, resource).sort(), ['list', 'watch'], resource);
  }
  // nfkube emits no Events: granting them would be unused write access.
  assert.deepEqual(verbsOf('', 'events'), []);
  assert.deepEqual(verbsOf('events.k8s.io', 'events'), []);
  assert.ok(role.rules.every((r: Obj) => !r.verbs.includes('*') && !r.resources.includes('*') && !r.apiGroups.includes('*')), 'no wildcards');
});

test('ClusterRoleBinding binds the role to the ServiceAccount in the kustomization namespace', () => {
  const b = byKind.get('ClusterRoleBinding')!;
  assert.deepEqual(b.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: byKind.get('ClusterRole')!.metadata.name });
  assert.deepEqual(b.subjects, [{ kind: 'ServiceAccount', name: byKind.get('ServiceAccount')!.metadata.name, namespace: byKind.get('Kustomization')!.namespace }]);
});

test('DaemonSet: the runtime default seccomp profile, and the manifest says why it runs as uid 0', () => {
  const c = byKind.get('DaemonSet')!.spec.template.spec.containers[0];
  assert.deepEqual(c.securityContext.seccompProfile, { type: 'RuntimeDefault' });
  assert.equal(c.securityContext.runAsUser, 0);
  const text = readFileSync(join(dir, 'daemonset.yaml'), 'utf8');
  const comment = text.slice(0, text.indexOf('runAsUser: 0'));
  assert.match(comment.slice(comment.lastIndexOf('securityContext:')), /# Why uid 0: [\s\S]*capabilities[\s\S]*ambient/);
});

/** A Kubernetes memory quantity ("640Mi", "1Gi", "500M") in bytes. */
function bytesOf(quantity: string): number {
  const m = /^(\d+)(Ki|Mi|Gi|K|M|G)?$/.exec(quantity);
  assert.ok(m, `memory quantity ${quantity}`);
  return Number(m[1]) * ({ Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, K: 1e3, M: 1e6, G: 1e9 }[m[2] ?? ''] ?? 1);
}

test('the memory limit is the measured peak of agent --once with 50k local pods, with headroom; the chart says the same (issue 23)', () => {
  const results = readFileSync(join(dir, '..', '..', 'bench', 'RESULTS.md'), 'utf8');
  const section = /## Peak memory of agent --once with every pod on this node[^]*?\n\n((?:\|.*\n)+)/.exec(results);
  assert.ok(section, 'bench/RESULTS.md has the measurement');
  const peaks = [...section[1].matchAll(/^\| 50000 local pods[^\n]*\(max (\d+)\) \|$/gm)].map((m) => Number(m[1]) * 1e6);
  assert.ok(peaks.length >= 1, 'rows for 50k local pods');
  const limit = bytesOf(byKind.get('DaemonSet')!.spec.template.spec.containers[0].resources.limits.memory);
  assert.ok(limit >= 1.25 * Math.max(...peaks), `limit ${limit} bytes leaves 25% over the peak ${Math.max(...peaks)}`);
  const chart = parseAllDocuments(readFileSync(join(dir, '..', 'helm', 'nfkube', 'values.yaml'), 'utf8'))[0].toJS() as Obj;
  assert.equal(bytesOf(chart.resources.limits.memory), limit, 'helm values and the DaemonSet agree');
});
