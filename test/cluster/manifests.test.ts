/** deploy/ against the real apiserver: every variant (the kustomize base, its proxy and IPAM
 * overlays, the Helm chart's rendered output) goes in by strict server-side apply with no
 * warning, so an unknown field, a schema error or an invalid object fails here. */
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError, type KObject } from './api';
import { ControlPlane } from './control-plane';
import { applyObjects, deployObjects, type DeployVariant } from './deploy';

let cp: ControlPlane;
before(async () => {
  cp = await ControlPlane.start();
});
after(async () => {
  await cp?.close();
});

const VARIANTS: DeployVariant[] = ['kubernetes', 'overlays/proxy', 'overlays/ipam', 'helm'];

for (const variant of VARIANTS) {
  test(`deploy/${variant} is accepted by server-side apply with strict field validation and no warning`, async () => {
    const objects = deployObjects(variant);
    assert.ok(objects.some((o) => o.kind === 'DaemonSet'), 'the variant holds the DaemonSet');
    // Each variant is a fresh install, as after removing the previous one: a DaemonSet's selector
    // is immutable, and the chart's (app.kubernetes.io/*) is not the kustomization's.
    for (const ds of objects.filter((o) => o.kind === 'DaemonSet')) await cp.admin.delete(ds);
    const warnings = await applyObjects(cp.admin, objects);
    assert.deepEqual(warnings, []);
    for (const o of objects) {
      const path = o.kind === 'CustomResourceDefinition' ? `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${o.metadata.name}` : undefined;
      if (path) assert.equal((await cp.admin.get(path)).spec.group, o.spec.group);
    }
  });
}

test('the same apply refuses an unknown field and an object its CRD schema forbids (the checks above are real)', async () => {
  const ds = structuredClone(deployObjects('kubernetes').find((o) => o.kind === 'DaemonSet')!) as KObject;
  ds.spec.template.spec.containers[0].privilegedd = true;
  // Server-side apply answers an undeclared field with 500 "field not declared in schema".
  await assert.rejects(applyObjects(cp.admin, [ds]), (err: ApiError) => err.status >= 400 && /privilegedd: field not declared in schema/.test(err.message));

  await applyObjects(cp.admin, deployObjects('overlays/ipam').filter((o) => o.kind === 'CustomResourceDefinition'));
  const pool = { apiVersion: 'ipam.nfkube.io/v1alpha1', kind: 'IPPool', metadata: { name: 'bad' }, spec: { cidrs: ['198.18.0.0/16'], colour: 'blue' } };
  await assert.rejects(cp.admin.apply(pool), (err: ApiError) => err.status >= 400 && /colour/.test(err.message));
});
