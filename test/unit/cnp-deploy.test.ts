/** ClusterNetworkPolicy in deploy/: the base ClusterRole lets the agent list and watch
 * ClusterNetworkPolicies and Nodes (it reads them whether or not the CRD is installed); the
 * overlay and the chart's toggle install the same published CRD, and the chart does not by default. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { renderChart } from '../helpers/chart-render';
import { renderKustomization } from '../helpers/kustomize-render';

const ROOT = join(__dirname, '..', '..', '..');
type Obj = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

function rules(objects: Obj[]): Obj[] {
  return objects.find((o) => o.kind === 'ClusterRole' && o.metadata.name === 'nfkube')!.rules;
}

test('the base RBAC lists and watches ClusterNetworkPolicies and Nodes, nothing more', () => {
  for (const objects of [renderKustomization(join(ROOT, 'deploy', 'kubernetes')), renderChart(join(ROOT, 'deploy', 'helm', 'nfkube'), { namespace: 'kube-system' })]) {
    const r = rules(objects);
    assert.ok(r.some((x) => x.apiGroups.includes('policy.networking.k8s.io') && x.resources.includes('clusternetworkpolicies') && x.verbs.join() === 'list,watch'));
    assert.ok(r.some((x) => x.apiGroups.includes('') && x.resources.includes('nodes') && x.verbs.join() === 'list,watch'));
  }
});

test('the overlay and the chart toggle install the same CRD; the chart does not by default', () => {
  const crd = (objects: Obj[]) => objects.filter((o) => o.kind === 'CustomResourceDefinition');
  const overlay = crd(renderKustomization(join(ROOT, 'deploy', 'overlays', 'cluster-network-policy')));
  const chart = crd(renderChart(join(ROOT, 'deploy', 'helm', 'nfkube'), { namespace: 'kube-system', values: { clusterNetworkPolicy: { installCRD: true } } }));
  assert.equal(overlay.length, 1);
  assert.equal(overlay[0].metadata.name, 'clusternetworkpolicies.policy.networking.k8s.io');
  assert.deepEqual(overlay[0].spec.versions.map((v: Obj) => v.name), ['v1alpha2']);
  assert.deepEqual(chart[0].spec, overlay[0].spec);
  assert.equal(crd(renderChart(join(ROOT, 'deploy', 'helm', 'nfkube'), { namespace: 'kube-system' })).length, 0);
});
